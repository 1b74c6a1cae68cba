"""ovos-core pipeline plugins that hand the fallback and common-query stages to the ovos-contests daemon.

ovos-core keeps its own pipeline and dispatch; each stage named here asks the daemon over the messagebus for one
decision (protocol version 1, README.md "Protocol") and returns what ovos-core's own plugin returns for the same
decision, so ovos-core dispatches it unchanged. Without the daemon the stage gives nothing and ovos-core moves on.

``match_*`` runs synchronously on ovos-core's intent thread and an exception escaping it loses the utterance, so
nothing here raises out of a match: every failure is a log line (rate limited) and ``None``.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NamedTuple, Optional
from uuid import uuid4

from ovos_bus_client.message import Message
from ovos_bus_client.session import SessionManager
from ovos_plugin_manager.templates.pipeline import ConfidenceMatcherPipeline, IntentHandlerMatch, PipelinePlugin
from ovos_utils.log import LOG

__version__ = "0.1.0"
PROTOCOL_VERSION = 1

FALLBACK_PLUGIN_ID = "ovos-contests-fallback-pipeline-plugin"
COMMON_QUERY_PLUGIN_ID = "ovos-contests-common-query-pipeline-plugin"

REQUEST_TOPIC = "ovos.contests.stage.match"
REPLY_TOPIC = "ovos.contests.stage.match.response"

# The defaults match ovos-core's own worst case for the same stage: FallbackService pings a tier's skills for at
# most 0.5 s (about 0.52 s in all); ovos-common-query-pipeline-plugin waits `max_response_wait` (6 s in the shipped
# mycroft.conf) and 0.1 s more.
FALLBACK_TIMEOUT_MS = 600
COMMON_QUERY_TIMEOUT_MS = 6100
# The reply is awaited this much longer than the `timeout_ms` the daemon is given (README.md, Protocol §5).
REPLY_GRACE_MS = 100
LOG_INTERVAL_S = 60.0

# Where the daemon answers stage requests past the bus (Protocol §8); `daemon_url` in a plugin's section.
DAEMON_URL = "ws://127.0.0.1:8183/contests"
LINK_RETRY_MIN_S = 0.25
LINK_RETRY_MAX_S = 5.0

# The daemon's error codes; any other code is logged under one key, so untrusted codes cannot grow the limiter.
ERROR_CODES = ("bad_request", "unknown_stage", "unsupported_version", "unavailable")

Clock = Callable[[], float]


@dataclass(frozen=True)
class StageMatch:
    """The daemon's decision: what ovos-core's IntentHandlerMatch is built from, and the message data its own
    plugin sets before returning (ovos-core merges `message.data` into the dispatched message)."""

    match_type: str
    match_data: Dict[str, Any]
    skill_id: Optional[str]
    utterance: str
    message_data: Dict[str, Any]


class Decoded(NamedTuple):
    """A reply read at the edge: the match (None for none), or why the stage gives nothing (`dropped` is a log
    key: `error:<code>` or `malformed`)."""

    match: Optional[StageMatch]
    dropped: Optional[str] = None
    detail: str = ""


def build_request(stage: str, utterances: List[str], lang: str, timeout_ms: int, message: Message,
                  request_id: str) -> Message:
    """The request for one stage of one utterance, in that utterance's context, so its session travels along
    (Protocol §2). The utterance gets an `utterance_id` in place when it has none: every stage of it shares one."""
    if not message.context.get("utterance_id"):
        message.context["utterance_id"] = str(uuid4())
    data = {"version": PROTOCOL_VERSION, "request_id": request_id, "stage": stage,
            "utterances": _flatten(utterances), "lang": lang, "timeout_ms": timeout_ms}
    return Message(REQUEST_TOPIC, data, deepcopy(message.context))


def _flatten(utterances: List[Any]) -> List[Any]:
    # ovos-core's own plugins accept the older list of (utterance, normalized) tuples too (`flatten_list`).
    return [u for item in utterances for u in (item if isinstance(item, (list, tuple)) else [item])]


def read_reply(data: Any, stage: str) -> Decoded:
    """Decode a reply's data, already matched on request_id (Protocol §3, §6, §7). Never raises."""
    if not isinstance(data, dict):
        return Decoded(None, "malformed", "data is not an object")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return Decoded(None, "malformed", f"version must be a positive integer, got {version!r:.40}")
    error = data.get("error")
    if error is not None:
        code = error if error in ERROR_CODES else "other"
        return Decoded(None, f"error:{code}", f"{error!s:.40}: {data.get('detail', '')!s:.200}")
    if data.get("stage") != stage:
        return Decoded(None, "malformed", f"stage {data.get('stage')!r:.40} answers a request for {stage}")
    match = data.get("match")
    if match is None:
        return Decoded(None)
    if not isinstance(match, dict):
        return Decoded(None, "malformed", "match must be an object or null")
    problem = _match_problem(match)
    if problem is not None:
        return Decoded(None, "malformed", problem)
    return Decoded(StageMatch(match["match_type"], match["match_data"], match["skill_id"], match["utterance"],
                              match["message_data"]))


def _match_problem(match: Dict[str, Any]) -> Optional[str]:
    if not isinstance(match.get("match_type"), str) or not match["match_type"]:
        return "match.match_type must be a non-empty string"
    if not isinstance(match.get("match_data"), dict):
        return "match.match_data must be an object"
    if "skill_id" not in match or not (match["skill_id"] is None or isinstance(match["skill_id"], str)):
        return "match.skill_id must be a string or null"
    if not isinstance(match.get("utterance"), str):
        return "match.utterance must be a string"
    if not isinstance(match.get("message_data"), dict):
        return "match.message_data must be an object"
    return None


class RateLimitedLog:
    """At most one line per key per interval; the lines held back are counted into the next one. Thread safe:
    ovos-core matches utterances of different sessions on different threads."""

    def __init__(self, clock: Clock, interval_s: float = LOG_INTERVAL_S):
        self._clock = clock
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._last: Dict[str, float] = {}
        self._held: Dict[str, int] = {}

    def warning(self, key: str, text: str) -> None:
        self._log("warning", key, text)

    def error(self, key: str, text: str) -> None:
        self._log("error", key, text)

    def _log(self, level: str, key: str, text: str) -> None:
        with self._lock:
            now = self._clock()
            last = self._last.get(key)
            if last is not None and now - last < self._interval_s:
                self._held[key] = self._held.get(key, 0) + 1
                return
            self._last[key] = now
            held = self._held.pop(key, 0)
        getattr(LOG, level)(text + (f" ({held} more suppressed)" if held else ""))


def default_token_file() -> str:
    """Where the daemon keeps the link's token when both run as one user: $XDG_STATE_HOME/ovos-contests (default
    ~/.local/state/ovos-contests), as the daemon's `orchestrator.stageTokenFile` default."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "ovos-contests", "stage-link-token")


class TokenUnreadable(OSError):
    """The link's token file could not be read."""


def read_token(path: str) -> str:
    """The link's token from its file (read at every connect: the daemon makes it at its first start). A link is never
    followed; a file that cannot be read raises, and the link stays down (requests go on the bus)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise TokenUnreadable(f"cannot read the token file {path} ({error.strerror})") from error
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TokenUnreadable(f"the token file {path} is not a regular file")
        text = os.read(fd, 1024).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    if not text:
        raise TokenUnreadable(f"the token file {path} is empty")
    return text


def connect_websocket(url: str, token_file: Optional[str] = None) -> Any:
    """A websocket-client connection (ovos-bus-client's own websocket library): the link's token (Protocol §8), Nagle
    off, no Origin header, and blocking reads once open."""
    import websocket  # imported here: the plugin loads, and uses the bus alone, where it is missing

    token = read_token(token_file or default_token_file())
    conn = websocket.create_connection(url, timeout=2, suppress_origin=True, header=[f"Authorization: Bearer {token}"],
                                       sockopt=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),))
    conn.settimeout(None)
    return conn


Connect = Callable[[str], Any]


class DirectLink:
    """The plugin's own websocket to the daemon (Protocol §8): the same request and reply messages as on the bus,
    past ovos-messagebus, which holds small frames back (up to 40 ms a hop while a link is busy). A thread keeps it
    open, reconnecting with a growing pause (0.25 s to 5 s) while the daemon is away, quietly: a request made while it
    is down goes on the bus. Replies are handed to the request waiting for their request_id; anything else is
    ignored. One link per URL serves both plugins (`link_for`)."""

    def __init__(self, url: str, connect: Connect):
        self.url = url
        self._connect = connect
        self._lock = threading.Lock()
        self._conn: Any = None
        self._waiting: Dict[str, Callable[[Dict[str, Any]], None]] = {}
        self._closed = threading.Event()
        self._said: set = set()
        self._thread = threading.Thread(target=self._run, name="ovos-contests-link", daemon=True)
        self._thread.start()

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def expect(self, request_id: str, handler: Callable[[Dict[str, Any]], None]) -> None:
        with self._lock:
            self._waiting[request_id] = handler

    def forget(self, request_id: str) -> None:
        with self._lock:
            self._waiting.pop(request_id, None)

    def send(self, text: str) -> bool:
        """Whether the frame went out on the link; False when it is down (the caller uses the bus)."""
        with self._lock:
            conn = self._conn
        if conn is None:
            return False
        try:
            conn.send(text)
            return True
        except Exception:
            self._drop(conn)
            return False

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            conn = self._conn
        if conn is not None:
            self._drop(conn)

    def _run(self) -> None:
        pause = LINK_RETRY_MIN_S
        while not self._closed.is_set():
            try:
                conn = self._connect(self.url)
            except Exception as error:
                # Once per kind of failure: a daemon not running yet is quiet; a token it cannot read or one the
                # daemon refuses (401) is said, since requests then go on the bus for good.
                kind = "token" if isinstance(error, TokenUnreadable) else ("refused" if "401" in str(error) else "")
                if kind and kind not in self._said:
                    self._said.add(kind)
                    LOG.warning(f"ovos-contests: the stage link to {self.url} cannot be opened ({error!s:.200}); "
                                "stage requests go on the bus (token_file: the daemon's orchestrator.stageTokenFile)")
                self._closed.wait(pause)
                pause = min(pause * 2, LINK_RETRY_MAX_S)
                continue
            pause = LINK_RETRY_MIN_S
            with self._lock:
                self._conn = conn
            LOG.info(f"ovos-contests: stage requests go to the daemon at {self.url}, past the bus")
            try:
                while not self._closed.is_set():
                    text = conn.recv()
                    if not text:
                        break
                    self._on_frame(text)
            except Exception:
                pass
            self._drop(conn)
            if not self._closed.is_set():
                LOG.info(f"ovos-contests: the link to {self.url} closed; stage requests go on the bus until it "
                         f"is back")

    def _on_frame(self, text: Any) -> None:
        try:
            frame = json.loads(text)
        except (TypeError, ValueError):
            return
        if not isinstance(frame, dict) or frame.get("type") != REPLY_TOPIC or not isinstance(frame.get("data"), dict):
            return
        data = frame["data"]
        with self._lock:
            handler = self._waiting.get(data.get("request_id"))
        if handler is not None:
            handler(data)

    def _drop(self, conn: Any) -> None:
        with self._lock:
            if self._conn is conn:
                self._conn = None
        try:
            conn.close()
        except Exception:
            pass


_links: Dict[Any, DirectLink] = {}
_links_lock = threading.Lock()


def link_for(url: str, connect: Connect) -> DirectLink:
    """The one link to `url` (both plugins share it)."""
    with _links_lock:
        key = (url, connect)
        if key not in _links:
            _links[key] = DirectLink(url, connect)
        return _links[key]


class StageClient:
    """One request and its one reply per call, correlated by request_id and bounded (Protocol §4, §5) — on the
    direct link when it is up (§8), on the bus otherwise.

    `bus.wait_for_response` takes the first message of the reply type from any session, so the wait is its own:
    a handler that keeps only our request_id, an Event bounded by the timeout, and the handler removed whatever
    happens. Bus handlers run on the bus client's thread pool, and the link's on its thread, so the reply arrives
    while `ask` blocks."""

    def __init__(self, bus: Any, plugin_id: str, clock: Clock, link: Optional[DirectLink] = None):
        self._bus = bus
        self._plugin_id = plugin_id
        self._link = link
        self.log = RateLimitedLog(clock)  # the plugin logs through it too
        self._newer_version_seen = False

    def ask(self, stage: str, timeout_ms: int, utterances: List[str], lang: str,
            message: Message) -> Optional[StageMatch]:
        request_id = str(uuid4())
        replies: List[Any] = []
        answered = threading.Event()

        def on_data(data: Any) -> None:
            if isinstance(data, dict) and data.get("request_id") == request_id and not answered.is_set():
                replies.append(data)
                answered.set()

        wait_ms = timeout_ms + REPLY_GRACE_MS
        try:
            request = build_request(stage, utterances, lang, timeout_ms, message, request_id)
        except Exception as e:
            self._bus_failed(stage, e)
            return None
        link = self._link
        if link is not None and link.connected:
            link.expect(request_id, on_data)
            try:
                if link.send(request.serialize()):
                    return self._finish(answered.wait(wait_ms / 1000), replies, stage, wait_ms)
            finally:
                link.forget(request_id)

        def on_reply(reply: Message) -> None:
            on_data(getattr(reply, "data", None))

        try:
            self._bus.on(REPLY_TOPIC, on_reply)
        except Exception as e:
            self._bus_failed(stage, e)
            return None
        try:
            self._bus.emit(request)
            in_time = answered.wait(wait_ms / 1000)
        except Exception as e:  # the bus is down or refused the message
            self._bus_failed(stage, e)
            return None
        finally:
            self._remove(on_reply)
        return self._finish(in_time, replies, stage, wait_ms)

    def _finish(self, in_time: bool, replies: List[Any], stage: str, wait_ms: int) -> Optional[StageMatch]:
        if not in_time:  # a reply after this finds no one waiting: it is ignored
            self.log.warning("timeout", f"ovos-contests daemon did not answer within {wait_ms} ms; the stage "
                                        f"gives nothing ({self._plugin_id}, stage {stage})")
            return None
        return self._decode(replies[0], stage)

    def _bus_failed(self, stage: str, error: Exception) -> None:
        self.log.warning("bus", f"{self._plugin_id}: the {stage} request failed on the bus "
                                f"({type(error).__name__}: {error!s:.200}); the stage gives nothing")

    def _remove(self, handler: Callable[[Message], None]) -> None:
        try:
            self._bus.remove(REPLY_TOPIC, handler)
        except Exception as e:  # the answer, if any, stands; the handler ignores anything else
            self.log.warning("bus", f"{self._plugin_id}: removing the reply handler failed "
                                    f"({type(e).__name__}: {e!s:.200})")

    def _decode(self, data: Any, stage: str) -> Optional[StageMatch]:
        version = data.get("version")
        if isinstance(version, int) and version > PROTOCOL_VERSION and not self._newer_version_seen:
            # A newer daemon: its reply is used as far as it carries the fields of ours (Protocol §7).
            self._newer_version_seen = True
            LOG.info(f"{self._plugin_id}: the ovos-contests daemon speaks protocol version {version}, this plugin "
                     f"{PROTOCOL_VERSION}; its replies are read as version {PROTOCOL_VERSION}")
        decoded = read_reply(data, stage)
        if decoded.dropped is not None:
            self.log.warning(decoded.dropped, f"{self._plugin_id}: the ovos-contests daemon's reply to {stage} "
                                              f"gives nothing ({decoded.dropped}: {decoded.detail})")
        return decoded.match


def _daemon_url(config: Dict[str, Any], plugin_id: str) -> Optional[str]:
    """The direct link's address from the plugin's section (null or "" for the bus only); a bad value fails
    construction, naming the key."""
    value = config.get("daemon_url", DAEMON_URL)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.startswith(("ws://", "wss://")):
        raise ValueError(f"intents.{plugin_id}.daemon_url must be a ws:// or wss:// URL, or null, got {value!r}")
    return value


def _token_file(config: Dict[str, Any], plugin_id: str) -> Optional[str]:
    """The link token's file from the plugin's section (`token_file`; null: the daemon's default place)."""
    value = config.get("token_file")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"intents.{plugin_id}.token_file must be a file path, or null, got {value!r}")
    return value


def _link(config: Dict[str, Any], plugin_id: str, connect: Optional[Connect]) -> Optional[DirectLink]:
    url = _daemon_url(config, plugin_id)
    token_file = _token_file(config, plugin_id)
    return None if url is None else link_for(url, connect or (lambda to: connect_websocket(to, token_file)))


def _timeout_ms(config: Dict[str, Any], plugin_id: str, key: str, default: int) -> int:
    """A timeout from the plugin's section of mycroft.conf; a bad value fails construction, naming the key
    (ovos-core logs it and leaves the plugin out of the pipeline)."""
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"intents.{plugin_id}.{key} must be a positive integer (milliseconds), got {value!r}")
    return value


def _warn_misplaced(config: Dict[str, Any], plugin_id: str, key: str, owner: str) -> None:
    if key in config:
        LOG.warning(f"intents.{plugin_id}.{key} has no effect there; it belongs under intents.{owner}")


def _fallback_match(found: StageMatch, message: Message) -> IntentHandlerMatch:
    # As ovos-core's FallbackService returns a tier's pick: the session of the utterance goes back with it.
    message.data.update(found.message_data)
    return IntentHandlerMatch(match_type=found.match_type, match_data=found.match_data, skill_id=found.skill_id,
                              utterance=found.utterance, updated_session=SessionManager.get(message))


class ContestsFallbackPipeline(ConfidenceMatcherPipeline):
    """`ovos-contests-fallback-pipeline-plugin`: the fallback tiers. ovos-core calls `match_high` for the id with
    `-high`, and likewise `-medium` and `-low`; each asks the daemon for stage fallback_high, _medium or _low."""

    def __init__(self, bus: Any = None, config: Optional[Dict[str, Any]] = None, *, clock: Clock = time.monotonic,
                 connect: Optional[Connect] = None):
        super().__init__(bus, config)
        self.timeout_ms = _timeout_ms(self.config, FALLBACK_PLUGIN_ID, "fallback_timeout_ms", FALLBACK_TIMEOUT_MS)
        _warn_misplaced(self.config, FALLBACK_PLUGIN_ID, "common_query_timeout_ms", COMMON_QUERY_PLUGIN_ID)
        self._client = StageClient(self.bus, FALLBACK_PLUGIN_ID, clock, _link(self.config, FALLBACK_PLUGIN_ID, connect))

    def _match(self, stage: str, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        try:
            found = self._client.ask(stage, self.timeout_ms, utterances, lang, message)
            return None if found is None else _fallback_match(found, message)
        except Exception as e:  # never across ovos-core's intent thread
            self._client.log.error("failed", f"{FALLBACK_PLUGIN_ID}: {stage} failed ({type(e).__name__}: "
                                             f"{e!s:.200}); the stage gives nothing")
            return None

    def match_high(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        return self._match("fallback_high", utterances, lang, message)

    def match_medium(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        return self._match("fallback_medium", utterances, lang, message)

    def match_low(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        return self._match("fallback_low", utterances, lang, message)


class ContestsCommonQueryPipeline(PipelinePlugin):
    """`ovos-contests-common-query-pipeline-plugin`: the common-query stage, as ovos-common-query-pipeline-plugin
    returns its winner (`question:action.<skill_id>`, or `question:action` for a classic CommonQuerySkill)."""

    def __init__(self, bus: Any = None, config: Optional[Dict[str, Any]] = None, *, clock: Clock = time.monotonic,
                 connect: Optional[Connect] = None):
        super().__init__(bus, config)
        self.timeout_ms = _timeout_ms(self.config, COMMON_QUERY_PLUGIN_ID, "common_query_timeout_ms",
                                      COMMON_QUERY_TIMEOUT_MS)
        _warn_misplaced(self.config, COMMON_QUERY_PLUGIN_ID, "fallback_timeout_ms", FALLBACK_PLUGIN_ID)
        self._client = StageClient(self.bus, COMMON_QUERY_PLUGIN_ID, clock,
                                   _link(self.config, COMMON_QUERY_PLUGIN_ID, connect))

    def match(self, utterances: List[str], lang: str, message: Message) -> Optional[IntentHandlerMatch]:
        try:
            found = self._client.ask("common_query", self.timeout_ms, utterances, lang, message)
            if found is None:
                return None
            # ovos-common-query-pipeline-plugin returns no session: ovos-core takes the message's.
            message.data.update(found.message_data)
            return IntentHandlerMatch(match_type=found.match_type, match_data=found.match_data,
                                      skill_id=found.skill_id, utterance=found.utterance)
        except Exception as e:  # never across ovos-core's intent thread
            self._client.log.error("failed", f"{COMMON_QUERY_PLUGIN_ID}: common_query failed ({type(e).__name__}: "
                                             f"{e!s:.200}); the stage gives nothing")
            return None
