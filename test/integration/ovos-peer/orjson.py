"""A stand-in for orjson (a compiled Rust library) for the OVOS peer of the real-OVOS suites, where it is not installed.

Covers what ovos-bus-client / ovos-utils / ovos-workshop use:
  dumps(obj, default=None, option=None) -> bytes   compact separators, UTF-8,
      no ASCII escaping; dataclasses, datetime/date/time, UUID and Enum are
      serialized the way orjson does natively; `default` is honoured.
  loads(bytes | bytearray | memoryview | str) -> object
Options are accepted; only OPT_INDENT_2, OPT_SORT_KEYS and
OPT_APPEND_NEWLINE change the output.
"""
import dataclasses
import datetime
import enum
import json
import uuid

__version__ = "0+ovos-peer-standin"

OPT_INDENT_2 = 1
OPT_NAIVE_UTC = 2
OPT_NON_STR_KEYS = 4
OPT_OMIT_MICROSECONDS = 8
OPT_SERIALIZE_NUMPY = 16
OPT_SORT_KEYS = 32
OPT_STRICT_INTEGER = 64
OPT_UTC_Z = 128
OPT_PASSTHROUGH_SUBCLASS = 256
OPT_PASSTHROUGH_DATETIME = 512
OPT_APPEND_NEWLINE = 1024
OPT_PASSTHROUGH_DATACLASS = 2048
OPT_SERIALIZE_DATACLASS = 0
OPT_SERIALIZE_UUID = 0


class JSONDecodeError(json.JSONDecodeError):
    pass


class JSONEncodeError(TypeError):
    pass


def _native(o):
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
    if isinstance(o, (datetime.datetime, datetime.date, datetime.time)):
        return o.isoformat()
    if isinstance(o, uuid.UUID):
        return str(o)
    if isinstance(o, enum.Enum):
        return o.value
    raise JSONEncodeError(f"Type is not JSON serializable: {type(o).__name__}")


def dumps(obj, default=None, option=None):
    option = option or 0

    def _default(o):
        try:
            return _native(o)
        except JSONEncodeError:
            if default is None:
                raise
            return default(o)

    try:
        s = json.dumps(obj, default=_default, ensure_ascii=False,
                       separators=(",", ":") if not option & OPT_INDENT_2 else (",", ": "),
                       indent=2 if option & OPT_INDENT_2 else None,
                       sort_keys=bool(option & OPT_SORT_KEYS))
    except (TypeError, ValueError) as e:
        raise JSONEncodeError(str(e)) from e
    if option & OPT_APPEND_NEWLINE:
        s += "\n"
    return s.encode("utf-8")


def loads(obj):
    if isinstance(obj, (bytes, bytearray, memoryview)):
        obj = bytes(obj).decode("utf-8")
    try:
        return json.loads(obj)
    except json.JSONDecodeError as e:
        raise JSONDecodeError(e.msg, e.doc, e.pos) from None
