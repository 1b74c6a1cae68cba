"""Stand-in for ovos-plugin-manager 1.0.3: only `templates.pipeline` (see tests/standin/README.md)."""
