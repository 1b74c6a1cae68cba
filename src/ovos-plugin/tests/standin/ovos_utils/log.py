"""Stand-in for ovos_utils/log.py (ovos-utils 0.8.1): `LOG`, a class whose classmethods log like a
logging.Logger (the real one configures handlers and files from mycroft.conf)."""
import logging

_logger = logging.getLogger("OVOS")


class LOG:
    @classmethod
    def debug(cls, *args, **kwargs):
        _logger.debug(*args, **kwargs)

    @classmethod
    def info(cls, *args, **kwargs):
        _logger.info(*args, **kwargs)

    @classmethod
    def warning(cls, *args, **kwargs):
        _logger.warning(*args, **kwargs)

    @classmethod
    def error(cls, *args, **kwargs):
        _logger.error(*args, **kwargs)

    @classmethod
    def exception(cls, *args, **kwargs):
        _logger.exception(*args, **kwargs)
