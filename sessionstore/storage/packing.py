"""Large payloads and meta compressed on SQLite (issue 39: the database ≤ 1.5× its transcripts).

A store holds what its transcripts hold — the payload, and the importer's record beside it in
meta — plus its indexes: on SQLite that came to 1.54× the transcript files' bytes. PostgreSQL
compresses large values itself (TOAST); SQLite does not, so an event's payload or meta whose
JSON text is `PACK_FROM` characters or more is stored as a BLOB, its text zlib-compressed
(level 1: as fast as `json.loads` of the same text; real tool output and source files shrink to
about a third). A smaller value stays text, and so does one that would not shrink: a BLOB is
always a packed value, so reading needs no marker.

Reads stay exact: the text comes back byte for byte (`unpack`), and what SQL reads inside
payloads and meta (tool names, usage, the indexed text, substring scans) reads it through
`sessionstore_unpack(value)`, a deterministic SQL function every SQLite connection of ours has
(`storage/engine.py`; migration 0011 registers it on the connection it runs on).
"""

from __future__ import annotations

import zlib
from typing import Any, Final

PACK_FROM: Final = 2048  # characters of JSON text (ASCII: the stored text is ASCII-escaped)
LEVEL: Final = 1
SQL_FUNCTION: Final = "sessionstore_unpack"


def pack(text: str) -> str | bytes:
    """`text` as SQLite stores it: compressed when it is long and that makes it smaller."""
    if len(text) < PACK_FROM:
        return text
    data = text.encode("utf-8")
    packed = zlib.compress(data, LEVEL)
    return packed if len(packed) < len(data) else text


def unpack(value: Any) -> Any:
    """The stored text of a value `pack` made (anything but a BLOB comes back as it is)."""
    if isinstance(value, (bytes, memoryview)):
        return zlib.decompress(value).decode("utf-8")
    return value


def stored_text(backend: str, column: str = "payload") -> str:
    """SQL for `column`'s JSON text as it was appended (unpacked on SQLite), for raw reads."""
    return f"{SQL_FUNCTION}({column})" if backend == "sqlite" else f"CAST({column} AS TEXT)"


def register(dbapi_connection: Any) -> None:
    """Give a sqlite3 connection `sessionstore_unpack(value)`."""
    dbapi_connection.create_function(SQL_FUNCTION, 1, unpack, deterministic=True)


__all__ = ["PACK_FROM", "SQL_FUNCTION", "pack", "register", "stored_text", "unpack"]
