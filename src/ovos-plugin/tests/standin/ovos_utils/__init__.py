"""Stand-in for ovos-utils 0.8.1: `log.LOG` and `fakebus.FakeBus` (see tests/standin/README.md)."""
