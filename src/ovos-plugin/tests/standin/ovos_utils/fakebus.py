"""Stand-in for ovos_utils/fakebus.py (ovos-utils 0.8.1): `FakeBus` with the real `on` / `once` / `emit` /
`remove` / `wait_for_response`, its emitter `ee` (pyee's EventEmitter unless one is passed as `emitter=`; pass
pyee.executor's ExecutorEventEmitter to deliver on a thread pool like MessageBusClient), and the side effects of
`emit`: the bus's session stamped into a context without one, and a non-default session taken into SessionManager."""
from threading import Event

from pyee import EventEmitter


class FakeBus:
    def __init__(self, *args, **kwargs):
        self.started_running = False
        self.session_id = "default"
        self.ee = kwargs.get("emitter") or EventEmitter()
        self.ee.on("error", self.on_error)
        try:
            self.session_id = kwargs["session"].session_id
        except Exception:
            pass

    def on(self, msg_type, handler):
        self.ee.on(msg_type, handler)

    def once(self, msg_type, handler):
        self.ee.once(msg_type, handler)

    def emit(self, message):
        from ovos_bus_client.session import Session, SessionManager
        if "session" not in message.context:
            sess = SessionManager.sessions.get(self.session_id) or Session(self.session_id)
            message.context["session"] = sess.serialize()
        self.ee.emit("message", message.serialize())
        self.ee.emit(message.msg_type, message)
        self.on_message(message.serialize())

    def on_message(self, *args):
        from ovos_bus_client.message import Message
        from ovos_bus_client.session import Session, SessionManager
        message = args[0] if len(args) == 1 else args[1]
        sess = Session.from_message(Message.deserialize(message))
        if sess.session_id != "default":  # 'default' can only be updated by core
            SessionManager.update(sess)

    def wait_for_response(self, message, reply_type=None, timeout=3.0):
        """Not correlated: the first message of `reply_type` from anyone is the answer."""
        reply_type = reply_type or message.msg_type + ".response"
        received_event = Event()
        msg = None

        def rcv(m):
            nonlocal msg
            msg = m
            received_event.set()

        self.ee.once(reply_type, rcv)
        self.emit(message)
        received_event.wait(timeout)
        return msg

    def remove(self, msg_type, handler):
        try:
            self.ee.remove_listener(msg_type, handler)
        except Exception:
            pass

    def remove_all_listeners(self, event_name):
        self.ee.remove_all_listeners(event_name)

    def on_error(self, error):
        from ovos_utils.log import LOG
        LOG.error(error)

    def close(self):
        pass
