"""ovos-core's intent service (IntentService of ovos-core 2.1) on the bus at argv[1], with the pipeline of the
mycroft.conf under $XDG_CONFIG_HOME; the plugins it loads are whatever `opm.pipeline` entry points the Python path
holds. Prints the loaded plugin ids (PLUGINS …), then CORE UP, once it is ready.

With --time-stages, every pipeline plugin's match_* is timed where ovos-core calls it, and each call printed as
`STAGE <utterance_id> <plugin id> <method> <ms> <matched 0|1>` (stdout: nothing is added to the bus)."""
import signal
import sys
import threading
import time

from ovos_bus_client import MessageBusClient
from ovos_core.intent_services import IntentService

bus = MessageBusClient(host="127.0.0.1", port=int(sys.argv[1]))
bus.run_in_thread()
if not bus.connected_event.wait(30):
    sys.exit("no bus")
ready = threading.Event()
service = IntentService(bus, ready_hook=ready.set)
if not ready.wait(60):
    sys.exit("ovos-core's intent service never became ready")


printing = threading.Lock()


def timed(plugin_id, method, match):
    def match_timed(utterances, lang, message):
        start = time.perf_counter()
        result = match(utterances, lang, message)
        ms = (time.perf_counter() - start) * 1000
        line = f"STAGE {message.context.get('utterance_id')} {plugin_id} {method} {ms:.3f} {int(bool(result))}\n"
        with printing:  # utterances of other sessions are matched on other threads: one whole line at a time
            sys.stdout.write(line)
            sys.stdout.flush()
        return result

    return match_timed


if "--time-stages" in sys.argv:
    # ovos-core looks the method up on the plugin at each utterance (IntentService.get_pipeline_matcher).
    for plugin_id, plugin in service.pipeline_plugins.items():
        for method in ("match", "match_high", "match_medium", "match_low"):
            if callable(getattr(plugin, method, None)):
                setattr(plugin, method, timed(plugin_id, method, getattr(plugin, method)))
print("PLUGINS", " ".join(sorted(service.pipeline_plugins)), flush=True)
print("CORE UP", flush=True)  # after the line above: whoever waits for it has that line whole
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
signal.pause()
