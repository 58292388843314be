"""SQLite stores large payloads and meta compressed (`storage/packing.py`, migration 0011), and
every read — the events, SQL inside them, search, verify, a retried append — sees the same text."""

from __future__ import annotations

import json
from pathlib import Path

from alembic import command
from sqlalchemy import text

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.events import encode_json
from sessionstore.storage.migrate import alembic_config
from sessionstore.storage.packing import PACK_FROM


def test_large_values_are_stored_compressed_and_read_back_exactly(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'packed.db'}")
    try:
        store.migrate()
        output = "".join(f"line {i}: the zebrafish test passed in {i % 7} ms\n" for i in range(200))
        call = ss.tool_call("c1", "Bash", {"command": "pytest -q " + "tests/test_x.py " * 200})
        result = ss.NewEvent("tool_result", {"call_id": "c1", "output": output + "日本語 ✓"},
                             {"extra": {"toolUseResult": {"stdout": output}}})
        reply = ss.NewEvent("message", {"role": "assistant", "content": "done"},
                            {"usage": {"input_tokens": 5, "output_tokens": 7}, "model": "m", "raw": output})
        sid = store.create_session(events=[ss.user("short question"), call, result])
        store.append(sid, reply)
        with store.engine.connect() as conn:
            stored = conn.execute(text("SELECT typeof(payload), length(payload), typeof(meta) FROM events "
                                       "ORDER BY version")).all()
        assert [(kind, meta) for kind, _, meta in stored] == [("text", "text"), ("blob", "text"), ("blob", "blob"),
                                                              ("text", "blob")]
        assert len(output) > PACK_FROM and stored[2][1] < len(output) / 4
        events = store.transcript(sid)
        assert events[2].payload == result.payload and events[2].meta == result.meta and events[3].meta == reply.meta
        assert events[1].payload == call.payload
        assert [(h.version, h.tool) for h in store.search("zebrafish")] == [(3, "Bash")]  # (meta is not searched)
        assert [h.version for h in store.search("日本")] == [3]  # a substring scan reads the packed text
        assert [h.version for h in store.search("zebrafish", tool="Bash")] == [3]
        assert store.usage()[0].output_tokens == 7  # SQL reads the packed meta's usage
        assert all(r.ok for r in store.verify([sid]))
        again = store.append(sid, ss.NewEvent("tool_result", result.payload, result.meta,
                                              event_id=events[2].event_id))  # compared with the stored text
        assert list(again.versions) == [3] and store.version(sid) == 4
        pasted = ss.NewEvent("message", {"role": "user", "content": output}, {"raw": output})
        kept = store.create_session(events=[pasted])
        store.erase(sid, "asked")
        assert [h.session_id for h in store.search("zebrafish")] == [kept]
        config = alembic_config()  # the downgrade stores every value as text again
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0009")
            rows = conn.execute(text("SELECT typeof(payload), payload, typeof(meta) FROM events "
                                     "WHERE session_id = :s"), {"s": kept}).all()
        assert rows == [("text", encode_json(pasted.payload), "text")]
        assert json.loads(rows[0][1]) == pasted.payload
    finally:
        store.close()
