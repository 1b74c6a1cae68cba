"""The plugin under test comes from this source tree; the OVOS packages it uses are the real ones when they are
importable (ovos-core's environment: `~/.ovos-peer/venv/bin/python -m pytest src/ovos-plugin/tests`) and the
stand-ins in tests/standin/ otherwise (CI's Debian python3 with python3-pytest only)."""
import importlib
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # ovos_contests_pipeline from the source tree, not an installed copy

OVOS_MODULES = ("ovos_plugin_manager.templates.pipeline", "ovos_bus_client.message", "ovos_bus_client.session",
                "ovos_utils.fakebus", "ovos_utils.log", "pyee.executor")


def _real_packages() -> bool:
    try:
        for name in OVOS_MODULES:
            importlib.import_module(name)
        return True
    except ImportError:
        return False


REAL = _real_packages()
if not REAL:
    # All or nothing: a real module imported before a missing one would mix with the stand-ins.
    for name in [m for m in sys.modules if m.split(".")[0] in {"ovos_plugin_manager", "ovos_bus_client",
                                                                "ovos_utils", "pyee"}]:
        del sys.modules[name]
    sys.path.insert(0, str(HERE / "standin"))


def pytest_report_header(config):
    return f"OVOS packages: {'real' if REAL else 'stand-ins from tests/standin/'}"


@pytest.fixture
def bus():
    """A FakeBus that delivers every message on a thread pool, as MessageBusClient does."""
    from ovos_utils.fakebus import FakeBus
    from pyee.executor import ExecutorEventEmitter

    emitter = ExecutorEventEmitter()
    yield FakeBus(emitter=emitter)
    emitter.shutdown(wait=True)


@pytest.fixture(autouse=True)
def no_daemon_link(monkeypatch):
    """No test reaches a daemon on this machine: the direct link's default connection is refused (the plugin then
    uses the bus, as when no daemon listens); tests of the link pass a `connect` of their own. Links are closed
    after each test. Its value is the real `connect_websocket`."""
    import ovos_contests_pipeline as plugin_module

    def refused(url, token_file=None):
        raise ConnectionRefusedError(url)

    original = plugin_module.connect_websocket
    monkeypatch.setattr(plugin_module, "connect_websocket", refused)
    yield original
    with plugin_module._links_lock:
        links = list(plugin_module._links.values())
        plugin_module._links.clear()
    for link in links:
        link.close()
