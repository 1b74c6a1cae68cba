"""Stand-in for ovos-bus-client 1.3.5: `message` and `session` (see tests/standin/README.md)."""
from ovos_bus_client.message import Message
from ovos_bus_client.session import Session, SessionManager
