"""Stand-in for ovos_plugin_manager/templates/pipeline.py (ovos-plugin-manager 1.0.3): the same classes, fields,
defaults and `ConfidenceMatcherPipeline.match`. The real module types `bus` as MessageBusClient | FakeBus; the
stand-in has no MessageBusClient and takes any bus."""
import abc
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ovos_bus_client.message import Message
from ovos_bus_client.session import Session
from ovos_utils.fakebus import FakeBus


@dataclass
class IntentHandlerMatch:
    match_type: str
    match_data: Optional[Dict] = None
    skill_id: Optional[str] = None
    utterance: Optional[str] = None
    updated_session: Optional[Session] = None


class PipelinePlugin:
    def __init__(self, bus: Any = None, config: Optional[Dict] = None):
        self.bus = bus or FakeBus()
        self.config = config or {}

    @abc.abstractmethod
    def match(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        """Match an utterance."""


class ConfidenceMatcherPipeline(PipelinePlugin):
    def match(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        return (self.match_high(utterances, lang, message) or
                self.match_medium(utterances, lang, message) or
                self.match_low(utterances, lang, message))

    @abc.abstractmethod
    def match_high(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        """Match an utterance with high confidence."""

    @abc.abstractmethod
    def match_medium(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        """Match an utterance with medium confidence."""

    @abc.abstractmethod
    def match_low(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        """Match an utterance with low confidence."""
