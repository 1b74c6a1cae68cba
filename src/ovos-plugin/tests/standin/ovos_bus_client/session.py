"""Stand-in for ovos_bus_client/session.py (ovos-bus-client 1.3.5): `Session` with the real `serialize` keys and
`deserialize` defaults, `Session.from_message` (the message's `context.session`, its lang filled from the message
when missing, else the default session), and `SessionManager.get` / `update` with the same registry rules ("default"
is ovos-core's and is never taken from a message). Where the real one reads mycroft.conf (lang, units, pipeline,
blacklists), the stand-in takes ovos-config's shipped defaults; the intent context stays a plain dict."""
import time
from typing import Dict, List, Optional
from uuid import uuid4

from ovos_bus_client.message import Message, dig_for_message

DEFAULT_PIPELINE = ["stop_high", "converse", "padatious_high", "adapt_high", "fallback_high", "stop_medium",
                    "padatious_medium", "adapt_medium", "adapt_low", "common_qa", "fallback_medium", "fallback_low"]


class Session:
    def __init__(self, session_id: str = None, expiration_seconds: int = None, active_skills: List = None,
                 utterance_states: Dict = None, lang: str = None, context: Dict = None, site_id: str = "unknown",
                 pipeline: List[str] = None, location_prefs: Dict = None, system_unit: str = None,
                 time_format: str = None, date_format: str = None, is_speaking: bool = False,
                 is_recording: bool = False, blacklisted_intents: Optional[List[str]] = None,
                 blacklisted_skills: Optional[List[str]] = None):
        self.session_id = session_id or str(uuid4())
        self.blacklisted_skills = blacklisted_skills or []
        self.blacklisted_intents = blacklisted_intents or []
        self.lang = lang or "en-US"
        self.system_unit = system_unit or "metric"
        self.date_format = date_format or "DMY"
        self.time_format = time_format or "full"
        self.is_recording = is_recording
        self.is_speaking = is_speaking
        self.site_id = site_id or "unknown"
        self.active_skills = active_skills or []
        self.utterance_states = utterance_states or {}
        self.touch_time = int(time.time())
        self.expiration_seconds = expiration_seconds or -1
        self.pipeline = pipeline or list(DEFAULT_PIPELINE)
        self.location_preferences = location_prefs or {}
        self.context = context or {"timeout": 120, "frame_stack": []}

    def expired(self) -> bool:
        if self.expiration_seconds < 0:
            return False
        return time.time() - self.touch_time > self.expiration_seconds

    def serialize(self) -> dict:
        return {
            "active_skills": self.active_skills,
            "utterance_states": self.utterance_states,
            "session_id": self.session_id,
            "lang": self.lang,
            "context": self.context,
            "site_id": self.site_id,
            "pipeline": self.pipeline,
            "location": self.location_preferences,
            "system_unit": self.system_unit,
            "time_format": self.time_format,
            "date_format": self.date_format,
            "is_speaking": self.is_speaking,
            "is_recording": self.is_recording,
            "blacklisted_skills": self.blacklisted_skills,
            "blacklisted_intents": self.blacklisted_intents
        }

    @staticmethod
    def deserialize(data: Dict) -> "Session":
        return Session(data.get("session_id"),
                       active_skills=data.get("active_skills") or [],
                       utterance_states=data.get("utterance_states") or {},
                       lang=data.get("lang"),
                       context=data.get("context", {"timeout": 120, "frame_stack": []}),
                       pipeline=data.get("pipeline", []),
                       site_id=data.get("site_id", "unknown"),
                       location_prefs=data.get("location", {}),
                       system_unit=data.get("system_unit"),
                       date_format=data.get("date_format"),
                       time_format=data.get("time_format"),
                       is_recording=data.get("is_recording", False),
                       is_speaking=data.get("is_speaking", False),
                       blacklisted_intents=data.get("blacklisted_intents", []),
                       blacklisted_skills=data.get("blacklisted_skills", []))

    @staticmethod
    def from_message(message: Message = None) -> "Session":
        message = message or dig_for_message()
        if message and "session" in message.context:
            lang = message.context.get("lang") or message.data.get("lang")
            sess = message.context["session"]
            if "lang" not in sess:
                sess["lang"] = lang
            return Session.deserialize(sess)
        return SessionManager.default_session


class SessionManager:
    default_session: Session = Session("default")
    sessions = {"default": default_session}
    bus = None

    @staticmethod
    def update(sess: Session, make_default: bool = False):
        if not sess:
            raise ValueError("Expected Session and got None")
        if make_default:
            sess.session_id = "default"
        if sess.session_id == "default":
            SessionManager.default_session = sess
        SessionManager.sessions[sess.session_id] = sess

    @staticmethod
    def get(message: Optional[Message] = None) -> Session:
        sess = SessionManager.default_session
        message = message or dig_for_message()
        if message:
            msg_sess = Session.from_message(message)
            if msg_sess:
                if msg_sess.session_id != "default":  # reserved namespace for ovos-core
                    SessionManager.sessions[msg_sess.session_id] = msg_sess
                    return msg_sess
        return sess
