"""The library's loggers: structlog's key-value calls, delivered through the standard `logging` module.

A library must not decide where its host's logs go, so nothing here configures structlog
(``structlog.configure`` is the host's) and nothing writes to stdout or stderr by itself:
every logger is a child of the ``sessionstore`` stdlib logger, which carries a
`logging.NullHandler`, so an application that never configures logging hears nothing, and
one that calls ``logging.basicConfig()`` gets lines like::

    INFO:sessionstore.store:compacted session_id='3f2a…' tokens_before=184211 tokens_after=31002

The key-value pairs also travel on the `logging.LogRecord` as ``record.sessionstore_event``
(a dict with ``event`` and every key), so a structured handler (the CLI's console and JSON
renderers, or a host's `structlog.stdlib.ProcessorFormatter`) can render them as data.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any, Final

import structlog

ROOT: Final = "sessionstore"
EVENT_ATTRIBUTE: Final = "sessionstore_event"

logging.getLogger(ROOT).addHandler(logging.NullHandler())


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def to_stdlib(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> dict[str, Any]:
    """The last processor: the event as ``logging`` arguments (a readable message + the data)."""
    data = dict(event_dict)
    event = str(data.get("event", ""))
    pairs = " ".join(f"{key}={_text(value)}" for key, value in data.items() if key != "event")
    return {"msg": f"{event} {pairs}" if pairs else event, "extra": {EVENT_ATTRIBUTE: data}}


_PROCESSORS: Final[list[Any]] = [
    structlog.stdlib.filter_by_level,  # drop disabled levels before doing any work
    structlog.processors.format_exc_info,
    to_stdlib,
]


def get_logger(name: str = ROOT) -> Any:
    """A structlog logger (``log.info("compacted", session_id=sid, tokens=n)``) for module `name`.

    Names outside the ``sessionstore`` hierarchy are put under it, so that one logger (and its
    NullHandler) governs everything the library says.
    """
    if name != ROOT and not name.startswith(ROOT + "."):
        name = f"{ROOT}.{name}"
    return structlog.wrap_logger(logging.getLogger(name), processors=_PROCESSORS,
                                 wrapper_class=structlog.stdlib.BoundLogger, cache_logger_on_first_use=True)
