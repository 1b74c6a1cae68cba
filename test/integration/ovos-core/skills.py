"""Unmodified ovos-workshop skills in one Python process, for the ovos-core integration suite and benchmark
(test/integration/ovos-core.test.ts, test/bench/ovos-core.ts). argv: the bus port and a JSON plan:

  {"fallbacks": [{"skill_id": "fb.a", "priority": 20, "words": ["barrel"]}],   # willing when a word is in the utterance
   "common_query": [{"skill_id": "cq.a", "answers": {"light": "…"}, "conf": 0.9}],
   "intent": true}  # hello.intent (padacioso), from this folder's locale/; start it once ovos-core is up

A fallback with no words is willing for every utterance. A fallback handler speaks "<skill_id> here"; the common-query
callback emits `test.cq.callback`; the intent handler speaks "hello from the intent skill". Prints SKILLS UP once every
skill is built (the registrations are on the bus).
"""
import json
import signal
import sys
from os.path import abspath, dirname

from ovos_bus_client import MessageBusClient
from ovos_bus_client.message import Message
from ovos_workshop.decorators import common_query, intent_handler
from ovos_workshop.skills.fallback import FallbackSkill
from ovos_workshop.skills.ovos import OVOSSkill

port, plan = int(sys.argv[1]), json.loads(sys.argv[2])
bus = MessageBusClient(host="127.0.0.1", port=port)
bus.run_in_thread()
if not bus.connected_event.wait(30):
    sys.exit("no bus")


def fallback_skill(skill_id, priority, words):
    class Fallback(FallbackSkill):
        def can_answer(self, message):
            utterance = " ".join(message.data.get("utterances") or []).lower()
            return not words or any(word in utterance for word in words)

        def initialize(self):
            self.register_fallback(self.handle_fallback, priority)

        def handle_fallback(self, message):
            self.speak(f"{skill_id} here")
            return True

    return Fallback(bus=bus, skill_id=skill_id)


def answered(self, phrase, answer, lang):  # workshop passes the skill when the first parameter is named self
    self.bus.emit(Message("test.cq.callback", {"skill_id": self.skill_id, "phrase": phrase, "answer": answer}))


def common_query_skill(skill_id, answers, conf):
    class CommonQuery(OVOSSkill):
        @common_query(callback=answered)
        def answer(self, phrase, lang):
            for word, text in answers.items():
                if word in phrase.lower():
                    return text, conf
            return None

    return CommonQuery(bus=bus, skill_id=skill_id)


class Hello(OVOSSkill):
    @intent_handler("hello.intent")
    def handle_hello(self, message):
        self.speak("hello from the intent skill")


skills = [fallback_skill(f["skill_id"], f["priority"], f.get("words") or []) for f in plan.get("fallbacks", [])]
skills += [common_query_skill(c["skill_id"], c["answers"], c.get("conf", 0.9)) for c in plan.get("common_query", [])]
if plan.get("intent"):
    skills.append(Hello(bus=bus, skill_id="hello.intent-skill", resources_dir=dirname(abspath(__file__))))
print("SKILLS UP", flush=True)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
signal.pause()
