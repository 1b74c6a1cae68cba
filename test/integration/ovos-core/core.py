"""ovos-core's intent service (IntentService of ovos-core 2.1) on the bus at argv[1], with the pipeline of the
mycroft.conf under $XDG_CONFIG_HOME; the plugins it loads are whatever `opm.pipeline` entry points the Python path
holds. Prints CORE UP and the loaded plugin ids once it is ready."""
import signal
import sys
import time

from ovos_bus_client import MessageBusClient
from ovos_core.intent_services import IntentService

bus = MessageBusClient(host="127.0.0.1", port=int(sys.argv[1]))
bus.run_in_thread()
if not bus.connected_event.wait(30):
    sys.exit("no bus")
service = IntentService(bus)
deadline = time.monotonic() + 60
while service.status.state.name != "READY" and time.monotonic() < deadline:
    time.sleep(0.05)
print("CORE UP", " ".join(sorted(service.pipeline_plugins)), flush=True)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
signal.pause()
