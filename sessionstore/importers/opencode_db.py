"""OpenCode 1.x's SQLite database (``~/.local/share/opencode/opencode.db``): its sessions as the
messages and parts `opencode` imports.

OpenCode 1.x keeps what the storage folder held in three tables: ``session`` (a column a field:
``id``, ``project_id``, ``parent_id``, ``slug``, ``directory``, ``title``, ``version``,
``time_created``, …), ``message`` and ``part`` (``id``, ``session_id``, ``message_id``, and the
object's other fields as JSON in ``data``), ids sorting in creation order as before. Each row is
rebuilt into the object ``opencode export`` prints, so a session imported from the database and from
its export is one session with the same events. The database is opened read-only while OpenCode
writes it (WAL: a reader sees the last committed state, never a half-written row).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Final

from ..errors import TranscriptError
from .reading import SourceObject
from .reports import WHOLE_FILE

_MAGIC: Final = b"SQLite format 3\x00"
_TABLES: Final = frozenset({"session", "message", "part"})
DATABASE_NAME: Final = "opencode.db"

Messages = list[tuple[SourceObject, dict[str, Any], list[Any]]]


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def looks_like_database(path: Path) -> bool:
    """An SQLite file with OpenCode's session, message and part tables."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return False
        with _connect(path) as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (OSError, sqlite3.Error):
        return False
    return _TABLES <= names


def owner(path: Path) -> Path | None:
    """The database a write-ahead log belongs to (OpenCode commits there first)."""
    if path.name == f"{DATABASE_NAME}-wal":
        database = path.with_name(DATABASE_NAME)
        return database if database.is_file() else None
    return None


def read_sessions(path: Path, issues: list[TranscriptError]) -> list[tuple[dict[str, Any], Messages]]:
    """Each session of the database (oldest first) as its export's info and its messages with their
    parts; a row whose JSON cannot be read fails its session (reported), as a broken file does."""
    try:
        with _connect(path) as db:
            db.row_factory = sqlite3.Row
            sessions = db.execute("SELECT * FROM session ORDER BY time_created, id").fetchall()
            messages = db.execute("SELECT id, session_id, data FROM message ORDER BY id").fetchall()
            parts = db.execute("SELECT id, message_id, session_id, data FROM part ORDER BY id").fetchall()
    except sqlite3.Error as exc:
        issues.append(TranscriptError(str(path), WHOLE_FILE, f"cannot read OpenCode's database: {exc}"))
        return []
    bad: dict[str, int] = {}
    by_message: dict[str, list[dict[str, Any]]] = {}
    for row in parts:
        obj = _object(path, "part", row, {"id": row["id"], "messageID": row["message_id"],
                                          "sessionID": row["session_id"]}, issues)
        if obj is None:
            bad[row["session_id"]] = bad.get(row["session_id"], 0) + 1
        else:
            by_message.setdefault(row["message_id"], []).append(obj)
    by_session: dict[str, Messages] = {}
    for row in messages:
        obj = _object(path, "message", row, {"id": row["id"], "sessionID": row["session_id"]}, issues)
        if obj is None:
            bad[row["session_id"]] = bad.get(row["session_id"], 0) + 1
            continue
        found = by_session.setdefault(row["session_id"], [])
        found.append((SourceObject(0, 0, obj, len(found), True), obj, by_message.get(row["id"], [])))
    result = []
    for row in sessions:
        sid = row["id"]
        if sid in bad:
            issues.append(TranscriptError(str(path), WHOLE_FILE, f"session {sid} not imported: {bad[sid]} of its "
                                                                 "message or part rows cannot be read (reported "
                                                                 "above); nothing stored was changed"))
            continue
        result.append((_info(row), by_session.get(sid, [])))
    return result


def _object(path: Path, table: str, row: sqlite3.Row, ids: dict[str, Any], issues: list[TranscriptError]
            ) -> dict[str, Any] | None:
    try:
        data = json.loads(row["data"])
    except (TypeError, ValueError) as exc:
        data = exc
    if not isinstance(data, dict):
        issues.append(TranscriptError(str(path), WHOLE_FILE, f"{table} {row['id']}: its data is not a JSON object"))
        return None
    return {**data, **ids}


def _info(row: sqlite3.Row) -> dict[str, Any]:
    """The session row as the ``info`` object of ``opencode export``."""
    columns = row.keys()
    info: dict[str, Any] = {"id": row["id"], "slug": row["slug"], "projectID": row["project_id"],
                            "directory": row["directory"], "title": row["title"], "version": row["version"],
                            "time": {"created": row["time_created"], "updated": row["time_updated"]}}
    if "parent_id" in columns and row["parent_id"] is not None:
        info["parentID"] = row["parent_id"]
    return info
