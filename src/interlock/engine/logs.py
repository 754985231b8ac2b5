"""Interlock's loggers, with :mod:`logging` imported at the first line logged.

``from interlock import Engine`` and the in-process bridge must not pay for
``logging`` (and the ``threading``, ``traceback`` and ``string`` it drags in)
when nothing is logged (docs/one-policy.md, Speed). A module writes
``log = logger("interlock")``: a stand-in whose first use imports logging,
puts the redacting filter on Interlock's loggers, and from then on hands every
call to the real :class:`logging.Logger`.

The filter: no Interlock log line carries a secret, whatever handler an
application attaches (docs/reliability.md, Redaction). It is in place before
the first record any of Interlock's loggers takes, since every one of them
is such a stand-in.
"""

from __future__ import annotations

from interlock.engine.after_import import after_import

_TYPE_CHECKING = False
if _TYPE_CHECKING:
    import logging

LOGGERS = ("interlock", "interlock.extensions")
"""Interlock's loggers. Filters do not apply to records that propagate up from a
child logger, so each one gets the filter."""


class _Logger:
    """A :class:`logging.Logger` by name, looked up when first used."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> object:
        install_log_filter()
        import logging

        if self._name not in LOGGERS:  # a child: its records skip its parents' filters
            install_log_filter(self._name)
        value = getattr(logging.getLogger(self._name), attr)
        if callable(value):
            # Bound once: later calls skip this lookup. The logger's state
            # (level, handlers) stays on the logger, read at each call.
            self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<interlock logger {self._name!r}>"


def logger(name: str) -> logging.Logger:
    """The logger ``name``; :mod:`logging` is imported when it is first used."""
    return _Logger(name)  # type: ignore[return-value]  # a Logger on every use


class RedactingFilter:
    """A logging filter that redacts each record's message and traceback text.

    Not a subclass of :class:`logging.Filter` (a logger takes any object with
    a ``filter`` method), so defining it imports nothing.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from interlock.engine.redact import redact

        try:
            message = record.getMessage()
        except Exception:
            # a malformed call; logging reports it when formatting. Never raise here:
            # a filter's exception would reach the code that logged.
            record.msg, record.args = redact(str(record.msg)), None
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            import logging

            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


LOG_FILTER = RedactingFilter()
_installed = False


def install_log_filter(*names: str) -> None:
    """Attach the redacting filter to ``names`` (Interlock's own loggers by default)."""
    global _installed
    if not names and _installed:
        return
    import logging

    for name in names or LOGGERS:
        log = logging.getLogger(name)
        if LOG_FILTER not in log.filters:
            log.addFilter(LOG_FILTER)
    if not names:
        _installed = True


# Whoever imports logging, now or later (an application that logs), finds the
# filter on Interlock's loggers before it can log to them.
after_import("logging", lambda _module: install_log_filter())
