"""Stand-in for pyee 9 `pyee/executor.py`: `ExecutorEventEmitter` runs every handler on a thread pool — how
ovos-bus-client's MessageBusClient delivers messages (its default emitter), so a reply reaches its handler while
the thread that sent the request blocks. A handler's exception becomes an "error" event."""
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, Callable, Dict, Optional, Tuple

from pyee import EventEmitter


class ExecutorEventEmitter(EventEmitter):
    def __init__(self, executor: Executor = None):
        super().__init__()
        self._executor: Executor = executor or ThreadPoolExecutor()

    def _emit_run(self, f: Callable, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        future: Future = self._executor.submit(f, *args, **kwargs)

        @future.add_done_callback
        def _callback(f: Future) -> None:
            exc: Optional[BaseException] = f.exception()
            if isinstance(exc, Exception):
                self.emit("error", exc)
            elif exc is not None:
                raise exc

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait)
