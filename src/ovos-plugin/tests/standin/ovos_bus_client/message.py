"""Stand-in for ovos_bus_client/message.py (ovos-bus-client 1.3.5): `Message` with the real constructor checks,
equality, `forward` (the context shared, not copied), `reply` (data and context deep-copied, context overrides,
`destination` from data, source and destination swapped), `response` and `publish`. Serialization is plain JSON:
the real one uses orjson, turns objects with `serialize()` into their dicts and can encrypt."""
import json
from copy import deepcopy
from typing import Optional


class Message:
    def __init__(self, msg_type: str, data: dict = None, context: dict = None):
        data = data or {}
        context = context or {}
        assert isinstance(data, dict)
        assert isinstance(context, dict)
        self.msg_type = msg_type
        self.data = data
        self.context = context

    def __eq__(self, other):
        if not isinstance(other, Message):
            return False
        return other.msg_type == self.msg_type and \
            other.data == self.data and \
            other.context == self.context

    def serialize(self) -> str:
        return json.dumps({'type': self.msg_type, 'data': self.data, 'context': self.context})

    @staticmethod
    def deserialize(value: str) -> 'Message':
        obj = json.loads(value)
        return Message(obj.get('type') or '', obj.get('data') or {}, obj.get('context') or {})

    def forward(self, msg_type: str, data: dict = None) -> 'Message':
        data = data or {}
        return Message(msg_type, data, context=self.context)

    def reply(self, msg_type: str, data: dict = None, context: dict = None) -> 'Message':
        data = deepcopy(data) or {}
        context = context or {}

        new_context = deepcopy(self.context)
        for key in context:
            new_context[key] = context[key]
        if 'destination' in data:
            new_context['destination'] = data['destination']
        if 'source' in new_context and 'destination' in new_context:
            s = new_context['destination']
            new_context['destination'] = new_context['source']
            new_context['source'] = s
        return Message(msg_type, data, context=new_context)

    def response(self, data: dict = None, context: dict = None) -> 'Message':
        return self.reply(self.msg_type + '.response', data, context)

    def publish(self, msg_type: str, data: dict, context: dict = None) -> 'Message':
        context = context or {}
        new_context = self.context.copy()
        for key in context:
            new_context[key] = context[key]
        if 'target' in new_context:
            del new_context['target']
        return Message(msg_type, data, context=new_context)


def dig_for_message(max_records: int = 10) -> Optional[Message]:
    """The real one searches the caller's stack for a Message argument; nothing here relies on it."""
    return None
