"""Stand-in for pyee 9 (`pyee/base.py`): `EventEmitter` with the real `on` / `once` / `emit` / `remove_listener` /
`listeners` semantics — handlers in registration order, `once` removing itself before it runs, an unhandled
"error" event raised. Delivery is synchronous, inside `emit`; `pyee.executor` delivers on a thread pool."""
from collections import OrderedDict
from threading import Lock
from typing import Any, Callable, Dict, List, Optional, Tuple


class PyeeException(Exception):
    pass


class EventEmitter:
    def __init__(self) -> None:
        self._events: Dict[str, "OrderedDict[Callable, Callable]"] = dict()
        self._lock = Lock()

    def on(self, event: str, f: Callable = None):
        if f is None:
            def decorate(g: Callable) -> Callable:
                self._add_event_handler(event, g, g)
                return g
            return decorate
        self._add_event_handler(event, f, f)
        return f

    def add_listener(self, event: str, f: Callable) -> Callable:
        self._add_event_handler(event, f, f)
        return f

    def _add_event_handler(self, event: str, k: Callable, v: Callable) -> None:
        self.emit("new_listener", event, k)
        with self._lock:
            if event not in self._events:
                self._events[event] = OrderedDict()
            self._events[event][k] = v

    def _emit_run(self, f: Callable, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        f(*args, **kwargs)

    def _emit_handle_potential_error(self, event: str, error: Any) -> None:
        if event == "error":
            if isinstance(error, Exception):
                raise error
            raise PyeeException(f"Uncaught, unspecified 'error' event: {error}")

    def _call_handlers(self, event: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> bool:
        handled = False
        with self._lock:
            funcs = list(self._events.get(event, OrderedDict()).values())
        for f in funcs:
            self._emit_run(f, args, kwargs)
            handled = True
        return handled

    def emit(self, event: str, *args: Any, **kwargs: Any) -> bool:
        handled = self._call_handlers(event, args, kwargs)
        if not handled:
            self._emit_handle_potential_error(event, args[0] if args else None)
        return handled

    def once(self, event: str, f: Callable = None):
        def _wrapper(f: Callable) -> Callable:
            def g(*args: Any, **kwargs: Any) -> Any:
                with self._lock:
                    if event in self._events and f in self._events[event]:
                        self._remove_listener(event, f)
                    else:
                        return None
                return f(*args, **kwargs)

            self._add_event_handler(event, f, g)
            return f

        return _wrapper if f is None else _wrapper(f)

    def _remove_listener(self, event: str, f: Callable) -> None:
        self._events[event].pop(f)
        if not len(self._events[event]):
            del self._events[event]

    def remove_listener(self, event: str, f: Callable) -> None:
        with self._lock:
            self._remove_listener(event, f)

    def remove_all_listeners(self, event: Optional[str] = None) -> None:
        with self._lock:
            if event is not None:
                self._events[event] = OrderedDict()
            else:
                self._events = dict()

    def listeners(self, event: str) -> List[Callable]:
        return list(self._events.get(event, OrderedDict()).keys())
