"""The plugin side of protocol version 1 (README.md "Protocol"), against a scripted daemon on a FakeBus that
delivers on a thread pool, as MessageBusClient does. Runs on the real OVOS packages or the stand-ins (conftest.py).

The tests that wait for a timeout run on the wall clock with a short budget (50 ms, or 1 ms where only the outcome
counts) and generous bounds; the once-a-minute log limit runs on an injected clock."""
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
from ovos_bus_client.message import Message
from ovos_bus_client.session import Session, SessionManager
from ovos_plugin_manager.templates.pipeline import ConfidenceMatcherPipeline, IntentHandlerMatch, PipelinePlugin

import ovos_contests_pipeline as plugin_module
from ovos_contests_pipeline import (
    COMMON_QUERY_PLUGIN_ID,
    FALLBACK_PLUGIN_ID,
    PROTOCOL_VERSION,
    REPLY_TOPIC,
    REQUEST_TOPIC,
    ContestsCommonQueryPipeline,
    ContestsFallbackPipeline,
)

SHORT_MS = 50  # a configured timeout: the plugin waits SHORT_MS + 100 ms
BOUND_S = (SHORT_MS + 100) / 1000
SLACK_S = 1.0  # generous: a loaded CI machine still passes

Answer = Callable[[Message], Optional[Dict[str, Any]]]


class Daemon:
    """The daemon's side, scripted: `answer(request)` gives the reply's data, or None for no reply."""

    def __init__(self, bus, answer: Answer):
        self.bus = bus
        self.answer = answer
        self.requests: List[Message] = []
        self.late: List[threading.Timer] = []
        bus.on(REQUEST_TOPIC, self._on_request)

    def _on_request(self, request: Message) -> None:
        self.requests.append(request)
        data = self.answer(request)
        if data is not None:
            self.bus.emit(request.reply(REPLY_TOPIC, data))

    def reply_later(self, request: Message, data: Dict[str, Any], delay_s: float) -> None:
        timer = threading.Timer(delay_s, lambda: self.bus.emit(request.reply(REPLY_TOPIC, data)))
        self.late.append(timer)
        timer.start()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingLog:
    def __init__(self) -> None:
        self.lines: List[tuple] = []

    def _record(self, level: str):
        return lambda text, *args, **kwargs: self.lines.append((level, str(text)))

    def __getattr__(self, level: str):
        return self._record(level)

    def of(self, level: str) -> List[str]:
        return [text for lvl, text in self.lines if lvl == level]


@pytest.fixture
def log(monkeypatch) -> RecordingLog:
    recorder = RecordingLog()
    monkeypatch.setattr(plugin_module, "LOG", recorder)
    return recorder


def utterance_message(utterances=("hello there",), lang="en-US", **context) -> Message:
    """What ovos-core's handle_utterance passes to match_*: the session serialized into the context."""
    sess = Session("test-session", lang=lang)
    return Message("recognizer_loop:utterance", {"utterances": list(utterances), "lang": lang},
                   {"session": sess.serialize(), "source": "audio", "destination": "skills", **context})


def answer_with(match: Optional[Dict[str, Any]], **extra) -> Answer:
    def answer(request: Message) -> Dict[str, Any]:
        return {"version": PROTOCOL_VERSION, "request_id": request.data["request_id"],
                "stage": request.data["stage"], "match": match, **extra}
    return answer


def no_match(request: Message) -> Dict[str, Any]:
    return answer_with(None)(request)


def fallback_pick(skill_id: str, utterances: List[str], lang: str, fb_range: List[int]) -> Dict[str, Any]:
    """The daemon's match for a fallback skill: what ovos-core's FallbackService returns for the same pick."""
    return {"match_type": f"ovos.skills.fallback.{skill_id}.request",
            "match_data": {"skill_id": skill_id, "utterances": utterances, "lang": lang},
            "skill_id": None,
            "utterance": utterances[0],
            "message_data": {"utterances": utterances, "lang": lang, "range": fb_range}}


def common_query_pick(match_type: str, skill_id: str, utterance: str, lang: str) -> Dict[str, Any]:
    """The daemon's match for a common-query winner: what ovos-common-query-pipeline-plugin returns."""
    return {"match_type": match_type,
            "match_data": {"phrase": utterance, "skill_id": skill_id, "answer": "42",
                           "callback_data": {"answer": "42"}, "conf": 0.9},
            "skill_id": skill_id,
            "utterance": utterance,
            "message_data": {"lang": lang, "utterance": utterance}}


def no_listener_left(bus) -> bool:
    return bus.ee.listeners(REPLY_TOPIC) == []


# --- the request (Protocol §2) ------------------------------------------------------------------------------------

def test_request_carries_the_stage_fields_and_a_deep_copy_of_the_utterance_context(bus, log):
    daemon = Daemon(bus, no_match)
    message = utterance_message(["hello there", "hello their"])
    assert ContestsFallbackPipeline(bus, {}).match_high(["hello there", "hello their"], "en-US", message) is None

    [request] = daemon.requests
    assert request.msg_type == "ovos.contests.stage.match"
    assert set(request.data) == {"version", "request_id", "stage", "utterances", "lang", "timeout_ms"}
    assert request.data["version"] == 1
    assert uuid.UUID(request.data["request_id"]).version == 4
    assert request.data["stage"] == "fallback_high"
    assert request.data["utterances"] == ["hello there", "hello their"]
    assert request.data["lang"] == "en-US"
    assert request.data["timeout_ms"] == 600
    # The context is the utterance's, copied: the session travels, and nothing the bus does reaches back.
    assert request.context == message.context
    assert request.context is not message.context
    assert request.context["session"] is not message.context["session"]
    assert request.context["session"]["session_id"] == "test-session"
    assert (request.context["source"], request.context["destination"]) == ("audio", "skills")


def test_older_style_utterance_tuples_are_flattened_as_ovos_core_plugins_do(bus, log):
    daemon = Daemon(bus, no_match)
    ContestsFallbackPipeline(bus, {}).match_high([("Hello there", "hello there")], "en-US", utterance_message())
    assert daemon.requests[0].data["utterances"] == ["Hello there", "hello there"]


def test_utterance_id_is_stamped_once_and_shared_by_every_stage_of_the_utterance(bus, log):
    daemon = Daemon(bus, no_match)
    fallback, common_query = ContestsFallbackPipeline(bus, {}), ContestsCommonQueryPipeline(bus, {})
    message = utterance_message()
    assert "utterance_id" not in message.context
    fallback.match_high(["hello there"], "en-US", message)
    utterance_id = message.context["utterance_id"]
    assert uuid.UUID(utterance_id)
    common_query.match(["hello there"], "en-US", message)
    fallback.match_medium(["hello there"], "en-US", message)
    fallback.match_low(["hello there"], "en-US", message)

    assert [r.data["stage"] for r in daemon.requests] == ["fallback_high", "common_query", "fallback_medium",
                                                          "fallback_low"]
    assert {r.context["utterance_id"] for r in daemon.requests} == {utterance_id}
    assert len({r.data["request_id"] for r in daemon.requests}) == 4

    given = utterance_message(utterance_id="from-the-listener")
    fallback.match_high(["hello there"], "en-US", given)
    assert given.context["utterance_id"] == daemon.requests[-1].context["utterance_id"] == "from-the-listener"


# --- a match (Protocol §3) ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("tier, stage, fb_range", [("match_high", "fallback_high", [0, 5]),
                                                    ("match_medium", "fallback_medium", [5, 90]),
                                                    ("match_low", "fallback_low", [90, 101])])
def test_a_fallback_pick_returns_what_ovos_core_fallback_service_returns(bus, log, tier, stage, fb_range):
    utterances = ["hello there"]
    daemon = Daemon(bus, lambda r: answer_with(fallback_pick("hello.skill", utterances, "en-US", fb_range))(r))
    message = utterance_message(utterances)

    match = getattr(ContestsFallbackPipeline(bus, {}), tier)(utterances, "en-US", message)

    assert daemon.requests[0].data["stage"] == stage
    assert isinstance(match, IntentHandlerMatch)
    assert match.match_type == "ovos.skills.fallback.hello.skill.request"
    assert match.match_data == {"skill_id": "hello.skill", "utterances": utterances, "lang": "en-US"}
    assert match.skill_id is None  # as FallbackService: ovos-core activates no fallback skill
    assert match.utterance == "hello there"
    assert match.updated_session.session_id == "test-session"
    assert match.updated_session.serialize() == SessionManager.get(message).serialize()
    # ovos-core merges message.data into the dispatched request: the keys FallbackService sets are there.
    assert message.data == {"utterances": utterances, "lang": "en-US", "range": fb_range}


def test_a_fallback_pick_matches_the_real_fallback_service_field_for_field(bus, log):
    fallback_service = pytest.importorskip("ovos_core.intent_services.fallback_service")
    service = fallback_service.FallbackService(bus, {})
    bus.on("ovos.skills.fallback.ping", lambda m: bus.emit(
        m.reply("ovos.skills.fallback.pong", {"skill_id": "hello.skill", "can_handle": True})))
    bus.emit(Message("ovos.skills.fallback.register", {"skill_id": "hello.skill", "priority": 50}))
    deadline = time.monotonic() + SLACK_S
    while "hello.skill" not in service.registered_fallbacks and time.monotonic() < deadline:
        time.sleep(0.005)
    utterances = ["hello there"]
    theirs_message = utterance_message(utterances)
    theirs = service.match_medium(utterances, "en-US", theirs_message)
    service.shutdown()
    assert theirs is not None

    Daemon(bus, lambda r: answer_with(fallback_pick("hello.skill", utterances, "en-US", [5, 90]))(r))
    ours_message = utterance_message(utterances)
    ours = ContestsFallbackPipeline(bus, {}).match_medium(utterances, "en-US", ours_message)

    assert (ours.match_type, ours.match_data, ours.skill_id, ours.utterance) == \
           (theirs.match_type, theirs.match_data, theirs.skill_id, theirs.utterance)
    assert ours.updated_session.serialize() == theirs.updated_session.serialize()
    # Over the bus FallbackService's range tuple is a JSON list, as ours is.
    assert json.loads(json.dumps(ours_message.data)) == json.loads(json.dumps(theirs_message.data))


@pytest.mark.parametrize("match_type", ["question:action.wiki.skill", "question:action"])
def test_a_common_query_winner_returns_what_the_common_query_plugin_returns(bus, log, match_type):
    utterance = "what is the answer"
    daemon = Daemon(bus, answer_with(common_query_pick(match_type, "wiki.skill", utterance, "en-US")))
    message = utterance_message([utterance])

    match = ContestsCommonQueryPipeline(bus, {}).match([utterance], "en-US", message)

    assert daemon.requests[0].data["stage"] == "common_query"
    assert daemon.requests[0].data["timeout_ms"] == 6100
    assert match == IntentHandlerMatch(
        match_type=match_type,
        match_data={"phrase": utterance, "skill_id": "wiki.skill", "answer": "42",
                    "callback_data": {"answer": "42"}, "conf": 0.9},
        skill_id="wiki.skill", utterance=utterance, updated_session=None)
    assert message.data == {"utterances": [utterance], "lang": "en-US", "utterance": utterance}


def test_the_combined_match_asks_high_then_medium_then_low_until_one_picks(bus, log):
    picks = {"fallback_high": None, "fallback_medium": fallback_pick("b.skill", ["hi"], "en-US", [5, 90]),
             "fallback_low": fallback_pick("c.skill", ["hi"], "en-US", [90, 101])}
    daemon = Daemon(bus, lambda r: answer_with(picks[r.data["stage"]])(r))
    match = ContestsFallbackPipeline(bus, {}).match(["hi"], "en-US", utterance_message(["hi"]))
    assert match.match_type == "ovos.skills.fallback.b.skill.request"
    assert [r.data["stage"] for r in daemon.requests] == ["fallback_high", "fallback_medium"]


# --- no answer, or none to use (Protocol §4–§7) -------------------------------------------------------------------

def test_without_a_reply_the_stage_gives_nothing_within_timeout_and_100_ms(bus, log):
    Daemon(bus, lambda r: None)
    plugin = ContestsFallbackPipeline(bus, {"fallback_timeout_ms": SHORT_MS})
    message = utterance_message()
    data_before = dict(message.data)

    started = time.monotonic()
    assert plugin.match_high(["hello there"], "en-US", message) is None
    elapsed = time.monotonic() - started

    assert BOUND_S - 0.01 <= elapsed < BOUND_S + SLACK_S
    assert message.data == data_before
    assert no_listener_left(bus)
    [warning] = log.of("warning")
    assert "ovos-contests daemon did not answer within 150 ms; the stage gives nothing" in warning


def test_the_missing_daemon_is_warned_about_at_most_once_a_minute(bus, log):
    clock = Clock()
    plugin = ContestsFallbackPipeline(bus, {"fallback_timeout_ms": 1}, clock=clock)
    ask = lambda: plugin.match_high(["hello there"], "en-US", utterance_message())  # noqa: E731

    ask()
    clock.now = 30.0
    ask()
    clock.now = 59.9
    ask()
    assert len(log.of("warning")) == 1
    clock.now = 60.0
    ask()
    warnings = log.of("warning")
    assert len(warnings) == 2
    assert warnings[1].endswith("(2 more suppressed)")


def test_a_reply_to_another_request_is_ignored(bus, log):
    def answer(request: Message) -> Dict[str, Any]:
        stranger = answer_with(fallback_pick("other.skill", ["hi"], "en-US", [0, 5]))(request)
        bus.emit(request.reply(REPLY_TOPIC, {**stranger, "request_id": str(uuid.uuid4())}))
        return no_match(request)

    Daemon(bus, answer)
    message = utterance_message(["hi"])
    assert ContestsFallbackPipeline(bus, {}).match_high(["hi"], "en-US", message) is None
    assert "range" not in message.data


def test_only_a_reply_to_another_request_is_no_reply(bus, log):
    def answer(request: Message) -> None:
        bus.emit(request.reply(REPLY_TOPIC, {**no_match(request), "request_id": "someone-else"}))
        return None

    Daemon(bus, answer)
    plugin = ContestsFallbackPipeline(bus, {"fallback_timeout_ms": SHORT_MS})
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])) is None
    assert "did not answer" in log.of("warning")[0]
    assert no_listener_left(bus)


@pytest.mark.parametrize("error", ["bad_request", "unknown_stage", "unsupported_version", "unavailable", "new_code"])
def test_an_error_reply_gives_nothing_and_is_logged_rate_limited(bus, log, error):
    # The daemon's refusal keeps request_id; it may lack stage when the request was unreadable.
    Daemon(bus, lambda r: {"version": 1, "request_id": r.data["request_id"], "match": None, "error": error,
                           "detail": "why"})
    plugin = ContestsCommonQueryPipeline(bus, {})
    message = utterance_message()
    assert plugin.match(["hello there"], "en-US", message) is None
    assert plugin.match(["hello there"], "en-US", message) is None
    [warning] = log.of("warning")
    assert error in warning and "why" in warning
    assert "utterance" not in message.data


def test_a_reply_after_the_timeout_is_ignored_and_leaves_no_handler(bus, log):
    late_data: Dict[str, Any] = {}

    def answer_late(request: Message) -> None:
        late_data.update(answer_with(fallback_pick("slow.skill", ["hi"], "en-US", [0, 5]))(request))
        daemon.reply_later(request, late_data, BOUND_S + 0.2)
        return None

    daemon = Daemon(bus, answer_late)
    delivered = threading.Event()

    def onlooker(reply: Message) -> None:  # to know the late reply went out
        delivered.set()

    bus.on(REPLY_TOPIC, onlooker)
    message = utterance_message(["hi"])

    assert ContestsFallbackPipeline(bus, {"fallback_timeout_ms": SHORT_MS}).match_high(["hi"], "en-US", message) is None
    assert delivered.wait(BOUND_S + SLACK_S)
    for timer in daemon.late:
        timer.join()
    assert bus.ee.listeners(REPLY_TOPIC) == [onlooker]
    assert "range" not in message.data


def test_nothing_left_listening_after_a_timeout(bus, log):
    plugin = ContestsFallbackPipeline(bus, {"fallback_timeout_ms": 1})
    plugin.match_low(["hi"], "en-US", utterance_message(["hi"]))
    assert no_listener_left(bus)


@pytest.mark.parametrize("reply", [
    {"version": 1, "stage": "fallback_low", "match": {"match_type": 7}},
    {"version": 1, "stage": "fallback_low", "match": "hello.skill"},
    {"version": 1, "stage": "fallback_high", "match": None},  # another stage's answer
    {"stage": "fallback_low", "match": None},  # no version
    {"version": 0, "stage": "fallback_low", "match": None},
    {"version": 1, "stage": "fallback_low",
     "match": {"match_type": "x", "match_data": {}, "skill_id": None, "utterance": "hi"}},  # no message_data
])
def test_a_malformed_reply_gives_nothing(bus, log, reply):
    Daemon(bus, lambda r: {**reply, "request_id": r.data["request_id"]})
    assert ContestsFallbackPipeline(bus, {}).match_low(["hi"], "en-US", utterance_message(["hi"])) is None
    assert "malformed" in log.of("warning")[0]


def test_a_newer_version_is_used_for_the_fields_it_shares_and_noted_once(bus, log):
    pick = fallback_pick("hello.skill", ["hi"], "en-US", [0, 5])
    Daemon(bus, lambda r: {**answer_with({**pick, "confidence": 0.7})(r), "version": 2, "trace": "x"})
    plugin = ContestsFallbackPipeline(bus, {})
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).match_type == pick["match_type"]
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).match_type == pick["match_type"]
    [note] = log.of("info")
    assert "version 2" in note

    bus.remove_all_listeners(REQUEST_TOPIC)
    without = {k: v for k, v in pick.items() if k != "message_data"}
    Daemon(bus, lambda r: {**answer_with(without)(r), "version": 2})
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])) is None


# --- the bus failing (never raises) -------------------------------------------------------------------------------

def test_an_exception_inside_the_bus_gives_nothing_and_never_escapes(bus, log, monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("websocket closed")

    plugin = ContestsFallbackPipeline(bus, {})
    monkeypatch.setattr(bus, "emit", broken)
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])) is None
    assert no_listener_left(bus)
    assert "websocket closed" in log.of("warning")[0]

    monkeypatch.setattr(bus, "on", broken)
    assert ContestsCommonQueryPipeline(bus, {}).match(["hi"], "en-US", utterance_message(["hi"])) is None


def test_a_failing_handler_removal_keeps_the_answer(bus, log, monkeypatch):
    Daemon(bus, answer_with(fallback_pick("hello.skill", ["hi"], "en-US", [0, 5])))
    plugin = ContestsFallbackPipeline(bus, {})
    monkeypatch.setattr(bus, "remove", lambda *a: (_ for _ in ()).throw(RuntimeError("no such handler")))
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).skill_id is None
    assert "no such handler" in log.of("warning")[0]


@pytest.mark.parametrize("stage", ["fallback_high", "common_query"])
def test_a_failure_after_the_reply_gives_nothing(bus, log, stage):
    pick = fallback_pick("hello.skill", ["hi"], "en-US", [0, 5])
    Daemon(bus, answer_with(pick))
    plugin = ContestsFallbackPipeline(bus, {}) if stage == "fallback_high" else ContestsCommonQueryPipeline(bus, {})
    ask = plugin.match_high if stage == "fallback_high" else plugin.match
    message = utterance_message(["hi"])
    message.data = None  # message.data.update fails: still no exception across ovos-core's intent thread
    assert ask(["hi"], "en-US", message) is None
    assert ask(["hi"], "en-US", message) is None
    [error] = log.of("error")
    assert stage in error and "AttributeError" in error


# --- configuration (README.md, Configuration) ---------------------------------------------------------------------

def test_the_timeouts_come_from_the_plugin_config(bus, log):
    daemon = Daemon(bus, no_match)
    ContestsFallbackPipeline(bus, {"fallback_timeout_ms": 250}).match_medium(["hi"], "en-US", utterance_message())
    ContestsCommonQueryPipeline(bus, {"common_query_timeout_ms": 3000}).match(["hi"], "en-US", utterance_message())
    ContestsFallbackPipeline(bus, None).match_low(["hi"], "en-US", utterance_message())
    ContestsCommonQueryPipeline(bus).match(["hi"], "en-US", utterance_message())
    assert [r.data["timeout_ms"] for r in daemon.requests] == [250, 3000, 600, 6100]


@pytest.mark.parametrize("value", [0, -5, "600", 1.5, True, None])
def test_a_bad_timeout_fails_construction_naming_the_key(bus, value):
    with pytest.raises(ValueError, match=f"intents.{FALLBACK_PLUGIN_ID}.fallback_timeout_ms"):
        ContestsFallbackPipeline(bus, {"fallback_timeout_ms": value})
    with pytest.raises(ValueError, match=f"intents.{COMMON_QUERY_PLUGIN_ID}.common_query_timeout_ms"):
        ContestsCommonQueryPipeline(bus, {"common_query_timeout_ms": value})


def test_a_timeout_in_the_other_plugins_section_is_pointed_out(bus, log):
    ContestsFallbackPipeline(bus, {"common_query_timeout_ms": 3000})
    assert f"belongs under intents.{COMMON_QUERY_PLUGIN_ID}" in log.of("warning")[0]


# --- how ovos-core finds the plugins ------------------------------------------------------------------------------

@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_the_entry_points_name_the_plugins_as_ovos_core_loads_them():
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    entry_points = project["project"]["entry-points"]["opm.pipeline"]
    assert entry_points == {FALLBACK_PLUGIN_ID: "ovos_contests_pipeline:ContestsFallbackPipeline",
                            COMMON_QUERY_PLUGIN_ID: "ovos_contests_pipeline:ContestsCommonQueryPipeline"}
    for plugin_id in entry_points:
        # ovos-core strips -high|-medium|-low to find the plugin, and owns the ids its migration map names.
        assert not plugin_id.endswith(("-high", "-medium", "-low"))
        assert plugin_id not in {"ovos-fallback-pipeline-plugin", "ovos-common-query-pipeline-plugin"}
    # A ConfidenceMatcherPipeline is named with a tier suffix in intents.pipeline; a PipelinePlugin without.
    assert issubclass(ContestsFallbackPipeline, ConfidenceMatcherPipeline)
    assert issubclass(ContestsCommonQueryPipeline, PipelinePlugin)
    assert not issubclass(ContestsCommonQueryPipeline, ConfidenceMatcherPipeline)
    assert project["project"]["requires-python"] == ">=3.9"


def test_the_package_says_its_versions():
    assert isinstance(plugin_module.__version__, str) and plugin_module.__version__
    assert plugin_module.PROTOCOL_VERSION == 1


# --- the direct link (Protocol §8) --------------------------------------------------------------------------------

class LinkedDaemon:
    """The daemon's end of the direct link, scripted: `answer(request)` gives the reply's data, or None for no
    reply; `refuse` makes connecting fail, as with no daemon listening."""

    def __init__(self, answer: Answer):
        self.answer = answer
        self.refuse = False
        self.requests: List[Message] = []
        self.conns: List["LinkConn"] = []

    def connect(self, url: str) -> "LinkConn":
        if self.refuse:
            raise ConnectionRefusedError(url)
        conn = LinkConn(self)
        self.conns.append(conn)
        return conn


class LinkConn:
    def __init__(self, daemon: LinkedDaemon):
        import queue

        self.daemon = daemon
        self.inbox: "queue.Queue[Optional[str]]" = queue.Queue()
        self.closed = False

    def send(self, text: str) -> None:
        if self.closed:
            raise ConnectionError("closed")
        request = Message.deserialize(text)
        self.daemon.requests.append(request)
        data = self.daemon.answer(request)
        if data is not None:
            self.inbox.put(request.reply(REPLY_TOPIC, data).serialize())

    def recv(self) -> str:
        item = self.inbox.get()
        if item is None:
            raise ConnectionError("closed")
        return item

    def close(self) -> None:
        self.closed = True
        self.inbox.put(None)


def until(condition: Callable[[], bool], what: str) -> None:
    """Waits for a condition the link's thread brings about (a guard, not a pace)."""
    deadline = time.monotonic() + SLACK_S * 5
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.002)


def linked(plugin_class, bus, daemon: LinkedDaemon, config: Optional[Dict[str, Any]] = None):
    plugin = plugin_class(bus, {"daemon_url": "ws://127.0.0.1:1/contests", **(config or {})}, connect=daemon.connect)
    return plugin


def test_on_the_link_a_request_and_its_reply_go_past_the_bus(bus, log):
    on_bus = Daemon(bus, no_match)
    daemon = LinkedDaemon(answer_with(fallback_pick("fb.skill", ["hi"], "en-US", [6, 90])))
    plugin = linked(ContestsFallbackPipeline, bus, daemon)
    until(lambda: len(daemon.conns) == 1 and plugin._client._link.connected, "the link is up")
    match = plugin.match_medium(["hi"], "en-US", utterance_message(["hi"]))
    assert match is not None and match.match_type == "ovos.skills.fallback.fb.skill.request"
    [request] = daemon.requests
    assert request.msg_type == REQUEST_TOPIC and request.data["stage"] == "fallback_medium"
    assert request.context["session"]["session_id"] == "test-session"
    assert on_bus.requests == []
    assert no_listener_left(bus)


def test_both_plugins_share_one_link(bus, log):
    daemon = LinkedDaemon(no_match)
    linked(ContestsFallbackPipeline, bus, daemon)
    linked(ContestsCommonQueryPipeline, bus, daemon)
    until(lambda: len(daemon.conns) >= 1, "the link is up")
    assert len(daemon.conns) == 1


def test_while_the_link_is_down_requests_go_on_the_bus_and_it_comes_back(bus, log):
    on_bus = Daemon(bus, answer_with(fallback_pick("fb.bus", ["hi"], "en-US", [1, 5])))
    daemon = LinkedDaemon(answer_with(fallback_pick("fb.link", ["hi"], "en-US", [1, 5])))
    daemon.refuse = True
    plugin = linked(ContestsFallbackPipeline, bus, daemon)
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).match_type == "ovos.skills.fallback.fb.bus.request"
    daemon.refuse = False
    until(lambda: plugin._client._link.connected, "the link is up")
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).match_type == "ovos.skills.fallback.fb.link.request"
    daemon.refuse = True  # the daemon went away
    daemon.conns[0].close()
    until(lambda: not plugin._client._link.connected, "the link is down")
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).match_type == "ovos.skills.fallback.fb.bus.request"
    daemon.refuse = False
    until(lambda: plugin._client._link.connected, "the link is back")
    assert plugin.match_high(["hi"], "en-US", utterance_message(["hi"])).match_type == "ovos.skills.fallback.fb.link.request"
    assert len(on_bus.requests) == 2 and len(daemon.requests) == 2


def test_no_reply_on_the_link_gives_nothing_within_the_bound(bus, log):
    daemon = LinkedDaemon(lambda request: None)
    plugin = linked(ContestsFallbackPipeline, bus, daemon, {"fallback_timeout_ms": SHORT_MS})
    until(lambda: plugin._client._link.connected, "the link is up")
    start = time.monotonic()
    assert plugin.match_low(["hi"], "en-US", utterance_message(["hi"])) is None
    assert BOUND_S <= time.monotonic() - start < BOUND_S + SLACK_S
    assert "did not answer within 150 ms" in log.of("warning")[0]
    assert plugin._client._link._waiting == {}


def test_a_reply_for_another_request_on_the_link_is_ignored(bus, log):
    daemon = LinkedDaemon(lambda request: {"version": 1, "request_id": "someone-else", "stage": "fallback_low",
                                           "match": fallback_pick("fb.x", ["hi"], "en-US", [91, 101])})
    plugin = linked(ContestsFallbackPipeline, bus, daemon, {"fallback_timeout_ms": SHORT_MS})
    until(lambda: plugin._client._link.connected, "the link is up")
    assert plugin.match_low(["hi"], "en-US", utterance_message(["hi"])) is None


def test_daemon_url_null_or_empty_means_the_bus_alone(bus, log):
    daemon = LinkedDaemon(no_match)
    on_bus = Daemon(bus, no_match)
    for value in (None, ""):
        plugin = ContestsFallbackPipeline(bus, {"daemon_url": value}, connect=daemon.connect)
        assert plugin._client._link is None
        plugin.match_high(["hi"], "en-US", utterance_message(["hi"]))
    assert daemon.conns == [] and len(on_bus.requests) == 2


@pytest.mark.parametrize("value", ["http://127.0.0.1:8183/contests", 8183, ["ws://x"], True])
def test_a_bad_daemon_url_fails_construction_naming_the_key(bus, value):
    with pytest.raises(ValueError, match=f"intents.{FALLBACK_PLUGIN_ID}.daemon_url"):
        ContestsFallbackPipeline(bus, {"daemon_url": value})
    with pytest.raises(ValueError, match=f"intents.{COMMON_QUERY_PLUGIN_ID}.daemon_url"):
        ContestsCommonQueryPipeline(bus, {"daemon_url": value})


# Protocol §8: the link's token (src/stage-service/link-token.ts).

def test_the_token_is_read_from_the_daemons_default_place_or_token_file(tmp_path, monkeypatch):
    from ovos_contests_pipeline import default_token_file, read_token
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_token_file() == str(tmp_path / "ovos-contests" / "stage-link-token")
    token = tmp_path / "token"
    token.write_text("abc123\n")
    assert read_token(str(token)) == "abc123"


def test_a_token_file_that_is_a_link_empty_or_missing_is_refused(tmp_path):
    from ovos_contests_pipeline import TokenUnreadable, read_token
    real = tmp_path / "real"
    real.write_text("abc123\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path in (link, empty, tmp_path / "missing", tmp_path):
        with pytest.raises(TokenUnreadable):
            read_token(str(path))


def test_the_link_sends_the_token_as_a_bearer_header(tmp_path, monkeypatch, no_daemon_link):
    import types
    connect_websocket = no_daemon_link
    calls = []

    class Conn:
        def settimeout(self, value):
            pass

    fake = types.ModuleType("websocket")
    fake.create_connection = lambda url, **kwargs: calls.append((url, kwargs)) or Conn()
    monkeypatch.setitem(sys.modules, "websocket", fake)
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    connect_websocket("ws://127.0.0.1:8183/contests", str(token))
    assert calls[0][1]["header"] == ["Authorization: Bearer s3cret"]
    assert calls[0][1]["suppress_origin"] is True


def test_a_bad_token_file_fails_construction_naming_the_key(bus):
    with pytest.raises(ValueError, match=f"intents.{FALLBACK_PLUGIN_ID}.token_file"):
        ContestsFallbackPipeline(bus, {"token_file": 42})
