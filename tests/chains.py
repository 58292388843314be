"""The hash chain recomputed behind the store's back, for tests that must prove it still holds.

Reads each session's stored rows (hashes, links, the exact payload text) with plain SQL and
runs `sessionstore.chain.first_break` over them: every content hash and every link is
recomputed from what is stored, so an edited, missing, duplicated or half-written row shows.

TODO: replace with `store.verify()` once it lands (branch `audit`); this is the same check
without the store's help.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from sessionstore import SessionStore, chain
from sessionstore.storage.packing import stored_text
from sessionstore.storage.decoding import Decoder

_ROWS = ("SELECT version, event_id, kind, created_at, tokens, content_hash, link, {payload}, meta, "
         "erased_at FROM events WHERE session_id = :sid ORDER BY version")
_SESSION = text("SELECT head, head_link, parent_id, fork_version FROM sessions WHERE id = :sid")
_LINK_AT = text("SELECT link FROM events WHERE session_id = :sid AND version = :version")


def chain_break(store: SessionStore, session_id: str) -> chain.Break | None:
    """The first place `session_id`'s own stored chain does not hold; None when it is intact."""
    decode = Decoder(store.backend)
    with store.engine.connect() as conn:
        head, head_link, parent_id, fork_version = conn.execute(_SESSION, {"sid": session_id}).one()
        start = chain.genesis(session_id)
        if parent_id is not None and fork_version:
            start = _parent_link(conn, session_id, parent_id, fork_version)
        rows = [chain.Link(version=r[0], event_id=r[1], kind=r[2], created_at=decode.time(r[3]),  # type: ignore[arg-type]
                           tokens=r[4], content_hash=r[5], link=r[6],
                           payload_json=None if r[9] is not None else r[7],
                           meta=None if r[9] is not None else decode.json(r[8]))
                for r in conn.execute(text(_ROWS.format(payload=stored_text(store.backend))), {"sid": session_id})]
    return chain.first_break(session_id, start, rows, head, head_link, base=fork_version or 0)


def _parent_link(conn: Any, child: str, parent_id: str, version: int) -> str:
    """The link a fork chains from: its ancestor's link at the fork version (the ancestor that stores it)."""
    sid = parent_id
    while True:
        found = conn.execute(_LINK_AT, {"sid": sid, "version": version}).scalar_one_or_none()
        if found is not None:
            return str(found)
        row = conn.execute(_SESSION, {"sid": sid}).one()
        if row[2] is None:
            raise AssertionError(f"fork {child}: no ancestor stores version {version}")
        sid = row[2]


def assert_chains_intact(store: SessionStore) -> None:
    """Every session's chain recomputes from its stored rows."""
    broken = [b for info in store.sessions() if (b := chain_break(store, info.id)) is not None]
    assert broken == [], f"broken chains: {broken}"
