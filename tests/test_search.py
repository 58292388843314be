"""Full-text search on SQLite (FTS5) and PostgreSQL (GIN), on real transcripts and on edge cases."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from alembic import command
from click.testing import CliRunner
from sqlalchemy import text

import sessionstore as ss
from sessionstore import AsyncSessionStore, InvalidSearch, SessionStore
from sessionstore.cli import main
from sessionstore.importers import import_path
from sessionstore.search import SEARCHED_KINDS, parse_query, search_text
from sessionstore.storage.migrate import alembic_config
from sessionstore.storage.packing import stored_text

from .conftest import FIXTURE_TRANSCRIPTS, TRANSCRIPTS, fresh_url, indexed
from .older_schema import writable_by_this_version

_PLAIN_WORD = re.compile(r"[A-Za-z]{7,30}")


def _words(event: ss.StoredEvent) -> set[str]:
    """Whitespace-separated plain words of an event's searched text (tokens on every backend)."""
    return {w.lower() for w in search_text(event.kind, event.payload).split() if _PLAIN_WORD.fullmatch(w)}


def test_search_finds_every_tool_result_by_a_word_of_its_output(store: SessionStore, transcripts: Path) -> None:
    """The issue's bar: in every transcript (fixtures, and the shared corpus when present), a
    tool result is found by a word of its output alone, across all sessions, by kind and tool.
    PostgreSQL searches the shipped fixtures only: its index is built by the same expression for
    every row (test_the_database_indexes_exactly_search_text checks it), and importing the whole corpus
    under a GIN index costs half a minute of the suite."""
    report = import_path(store, transcripts if store.backend == "sqlite" else FIXTURE_TRANSCRIPTS)
    assert report.events_added > 0
    sessions = [info.id for info in store.sessions() if info.parent_id is None]
    checked = 0
    for sid in sessions:
        events = store.transcript(sid)
        calls = {e.payload["call_id"]: e.payload["name"] for e in events if e.kind == "tool_call"}
        frequency = Counter(w for e in events for w in _words(e))
        results = [e for e in events if e.kind == "tool_result" and e.payload["call_id"] in calls]
        if not results:
            continue
        # the rarest plain word of any tool result's output: found in this session once or a few times
        word, result = min(((w, e) for e in results for w in _words(e)), key=lambda we: (frequency[we[0]], we[0]),
                           default=(None, None))
        if word is None or result is None:  # a short session whose outputs hold no word of 7+ letters
            continue
        everywhere = store.search(word, kind="tool_result", limit=1000)
        assert (sid, result.version) in {(h.session_id, h.version) for h in everywhere}, (sid, word)
        hit = next(h for h in store.search(word, sid, tool=calls[result.payload["call_id"]], limit=100)
                   if h.version == result.version)
        assert hit.kind == "tool_result" and hit.tool == calls[result.payload["call_id"]]
        assert any(hit.snippet[a:b].lower() == word for a, b in hit.highlights), (hit.snippet, word)
        checked += 1
    corpus = store.backend == "sqlite" and TRANSCRIPTS.is_dir()  # Claude Code, Pi and Codex sessions
    assert checked >= (3 if corpus else 1), checked


def _sample_events() -> list[ss.NewEvent]:
    return [
        ss.system("You are a careful assistant"),
        ss.user("Please migrate the Supabase client to Prisma"),
        ss.assistant([{"type": "thinking", "thinking": "ponder the quagmire", "signature": "c2lnbmF0dXJlc2VjcmV0"},
                      {"type": "text", "text": "I will grep for supabase imports"}],
                     tool_calls=[ss.tool_call("c1", "Bash", {"command": "rg supabase", "options": {"depth": [3, 4.5]},
                                                             "dry": True})]),
        ss.tool_result("c1", "apps/db.ts: import { createClient } from 'supabase'\x00 nul\\u0000 byte"),
        ss.tool_call("c2", "Read", {"file_path": "/src/haystack.py"}),
        ss.tool_result("c2", [{"type": "text", "text": "def needle():\n    return 'héllo wörld'"},
                              {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                           "data": "aW1hZ2VieXRlcw=="}}], is_error=True),
        ss.scratchpad("remember the zeppelin"),
        ss.custom("pi:progress", {"text": "invisible import record"}),
    ]


@pytest.mark.citus
def test_queries_filters_and_snippets(store: SessionStore) -> None:
    sid = store.create_session(events=_sample_events())
    other = store.create_session(events=[ss.user("supabase elsewhere")])

    def found(query: str, **kw: object) -> list[tuple[str, int]]:
        return [(h.session_id, h.version) for h in store.search(query, **kw)]  # type: ignore[arg-type]

    assert set(found("supabase")) == {(sid, 2), (sid, 3), (sid, 4), (sid, 5), (other, 1)}
    assert set(found("SUPABASE", session_id=sid, kind="tool_result")) == {(sid, 5)}
    assert found("quagmire") == [(sid, 3)]                     # thinking is searched, its signature is not
    assert found("c2lnbmF0dXJlc2VjcmV0") == []
    assert found("aW1hZ2VieXRlcw") == [] and found("png") == []  # images are not text
    assert found("invisible") == []                              # import records are not searched
    assert found("zeppelin") == [(sid, 8)] and found("careful") == [(sid, 1)]
    assert set(found("supabase", tool="Bash")) == {(sid, 4), (sid, 5)}  # the call and its result
    assert found("depth") == [] and set(found("4.5")) == {(sid, 4)}    # input values, not keys
    assert found('"grep for supabase"') == [(sid, 3)] and found('"supabase for grep"') == []
    assert set(found("hay*")) == {(sid, 6)}
    assert set(found("needle OR zeppelin")) == {(sid, 7), (sid, 8)}
    assert set(found("supabase -grep -rg", session_id=sid)) == {(sid, 2), (sid, 5)}
    assert found("nul") == [(sid, 5)] and found("byte") == [(sid, 5)]  # a NUL in the output breaks nothing
    hit = store.search("needle")[0]
    assert hit.tool == "Read" and hit.kind == "tool_result" and hit.event.payload["is_error"] is True
    assert hit.marked() == "def [needle]():     return 'héllo wörld'"
    for hostile in ['"', "NEAR(a b", "a AND OR NOT", "x'; DROP TABLE events; --", "(", "*", "-", "a:*|b", "\\"]:
        try:
            store.search(hostile)
        except InvalidSearch:
            pass  # no word to look for: said so, never a database syntax error
    with pytest.raises(InvalidSearch, match="empty"):
        store.search("  ")
    with pytest.raises(InvalidSearch, match="not excluded"):
        store.search("-supabase")
    with pytest.raises(InvalidSearch, match="not searched"):
        store.search("supabase", kind="compaction")
    with pytest.raises(ss.SessionNotFound):
        store.search("supabase", "no-such-session")
    assert len(store.search("supabase", limit=2)) == 2


@pytest.mark.citus
def test_search_in_a_fork_sees_its_inherited_history(store: SessionStore) -> None:
    parent = store.create_session(events=[ss.user("alpha parentword"), ss.user("beta later")])
    fork = store.fork(parent, at=1)
    store.append(fork, ss.user("gamma forkword"))
    assert [(h.session_id, h.version) for h in store.search("parentword", fork)] == [(parent, 1)]
    assert store.search("later", fork) == []  # after the fork point: not the fork's history
    assert store.search("forkword", parent) == []
    assert [h.session_id for h in store.search("forkword")] == [fork]
    # several histories at once: each event once (the parent's first version is the fork's too)
    other = store.create_session(events=[ss.user("delta parentword")])
    together = store.search("parentword OR forkword OR later", [fork, parent, other])
    assert sorted((h.session_id, h.version) for h in together) == sorted(
        [(parent, 1), (parent, 2), (fork, 2), (other, 1)])
    assert store.search("parentword", []) == []
    # without meta: the same hits, their events' meta left out
    store.append(other, [ss.NewEvent("message", {"role": "user", "content": "epsilon parentword 🦜"},
                                     {"extra": {"raw": "x" * 1000}})])
    light = store.search("parentword", [fork, other], meta=False)
    assert [(h.session_id, h.version, h.snippet) for h in light] == [
        (h.session_id, h.version, h.snippet) for h in store.search("parentword", [fork, other])]
    assert len(light) == 3 and all(h.event.meta == {} and h.event.payload for h in light)
    assert any(h.event.meta for h in store.search("parentword", [fork, other]))
    assert all(h.event.meta == {} for h in store.search("parentw*", other, meta=False, kind="message"))
    scanned = store.search("🦜", other, meta=False)  # a substring scan, not the index
    assert [(h.version, h.event.meta) for h in scanned] == [(2, {})]


def test_replaced_payloads_are_reindexed(store: SessionStore) -> None:
    """An event whose payload is replaced (erasure does that) is found by its new text only."""
    sid = store.create_session(events=[ss.user("secret launchcode"), ss.user("harmless words")])
    assert indexed(store, 2) == 2  # indexed before the payload changes
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE events SET payload = :p WHERE session_id = :s AND version = 1"),
                     {"p": json.dumps({"role": "user", "content": "tombstone"}), "s": sid})
    assert store.search("launchcode") == []
    assert [h.version for h in store.search("tombstone")] == [1]
    if store.engine.dialect.name == "postgresql":  # by its key (migration 0006), not a scan of the index table
        with store.engine.connect() as conn:
            body = conn.execute(text("SELECT prosrc FROM pg_proc WHERE proname = 'sessionstore_reindex'")).scalar_one()
        assert "session_id = NEW.session_id AND position = NEW.position" in body


def _indexed_tokens(store: SessionStore) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """Per event position: the tokens the database indexed, and the tokens of `search_text` run
    through the same backend's tokenizer."""
    store.index_search()  # appends do not index: the indexer follows the feed (migration 0004)
    with store.engine.begin() as conn:
        rows = conn.execute(text(f"SELECT position, kind, {stored_text(store.backend)} FROM events")).all()
        python = {pos: search_text(kind, json.loads(payload)) for pos, kind, payload in rows if kind in SEARCHED_KINDS}
        if store.engine.dialect.name == "postgresql":
            def lexemes(sql: str, params: dict[str, object]) -> list[str]:
                return sorted(conn.execute(text(f"SELECT tsvector_to_array(sessionstore_search_words({sql}))"
                                                + (" FROM events WHERE position = :p" if "p" in params else "")),
                                           params).scalar_one())
            stored = {pos: lexemes("sessionstore_search_text(kind, payload)", {"p": pos}) for pos in python}
            # PostgreSQL text holds no NUL: the index reads \u0000 as a space, and so do we here
            mine = {pos: lexemes("CAST(:t AS text)", {"t": body.replace("\x00", " ")}) for pos, body in python.items()}
            return stored, mine
        conn.exec_driver_sql("CREATE VIRTUAL TABLE temp.mine USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
        conn.execute(text("INSERT INTO temp.mine(rowid, body) VALUES (:p, :b)"),
                     [{"p": pos, "b": body} for pos, body in python.items()])
        conn.exec_driver_sql("CREATE VIRTUAL TABLE temp.stored_vocab USING fts5vocab(main, events_search, instance)")
        conn.exec_driver_sql("CREATE VIRTUAL TABLE temp.mine_vocab USING fts5vocab(temp, mine, instance)")
        result = []
        for vocab in ("stored_vocab", "mine_vocab"):
            tokens: dict[int, list[str]] = {pos: [] for pos in python}
            for term, doc in conn.exec_driver_sql(f"SELECT term, doc FROM temp.{vocab}"):
                tokens.setdefault(doc, []).append(term)
            result.append({pos: sorted(t) for pos, t in tokens.items()})
        return result[0], result[1]


@pytest.mark.citus
def test_the_database_indexes_exactly_search_text(store: SessionStore) -> None:
    """The SQL mirrors of `search_text` (migration 0003) index the same tokens, on both backends,
    for every event of the shipped real transcripts and for the edge cases."""
    store.create_session(events=_sample_events())
    assert import_path(store, FIXTURE_TRANSCRIPTS).issues == []
    stored, mine = _indexed_tokens(store)
    assert len(stored) >= 20
    assert stored == mine


def test_migration_indexes_existing_rows(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = fresh_url(backend, tmp_path, request, migrated=False)
    store = SessionStore(url)
    try:
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0002")
        with writable_by_this_version(store.engine):
            sid = store.create_session(events=[ss.user("written before the index existed"),
                                               ss.tool_call("c", "Bash", {"command": "ls"}),
                                               ss.tool_result("c", "preexisting output")])
        store.migrate()
        assert [h.version for h in store.search("preexisting", sid)] == [3]
        store.append(sid, ss.user("written after"))
        assert sorted(h.version for h in store.search("written")) == [1, 4]
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0002")
            command.upgrade(config, "head")
        assert sorted(h.version for h in store.search("written")) == [1, 4]
    finally:
        store.close()


def _indexed(store: SessionStore) -> int:
    """How many events the search index holds (FTS5's docsize has a row for each)."""
    sqlite = store.engine.dialect.name == "sqlite"
    with store.engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT count(*) FROM " + ("events_search_docsize" if sqlite
                                                                    else "event_search")).scalar_one())


def test_an_erased_event_leaves_the_index(store: SessionStore) -> None:
    """Erasure takes an indexed event out of the index (SQLite: migration 0011; PostgreSQL
    deleted its rows already), so that every indexed event is live and a search ranks the index
    alone."""
    sid = store.create_session(events=[ss.user("classified launchcode"), ss.user("other words")])
    kept = store.create_session(events=[ss.user("public launchcode"), ss.user("more words")])
    assert indexed(store, 4) == 4
    store.erase(sid, "asked")
    assert _indexed(store) == 2
    assert [(h.session_id, h.version) for h in store.search("launchcode")] == [(kept, 1)]
    assert [h.session_id for h in store.search("words", kind="message")] == [kept]
    assert store.search("classified") == []


def test_migration_0011_takes_indexed_tombstones_out(tmp_path: Path) -> None:
    """SQLite: the tombstones 0004's trigger indexed leave the index on upgrade, and come back on
    a downgrade (0004's trigger expects every event up to the indexer's place indexed)."""
    store = SessionStore(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0009")
        sid = store.create_session(events=[ss.user("classified launchcode")])
        kept = store.create_session(events=[ss.user("public launchcode")])
        store.index_search()
        store.erase(sid, "asked")
        assert _indexed(store) == 2  # the tombstone, indexed again by 0004's trigger
        store.migrate()
        assert _indexed(store) == 1
        assert [h.session_id for h in store.search("launchcode")] == [kept]
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0009")
        assert _indexed(store) == 2
        store.migrate()
        assert _indexed(store) == 1
    finally:
        store.close()


def test_appends_leave_indexing_to_the_feed_and_searches_stay_exact(store: SessionStore) -> None:
    """An append does not index; the first search indexes what the feed holds beyond the index,
    a second one has nothing left to do, and `index_search` on an indexed store takes nothing."""
    sid = store.create_session(events=[ss.user("alpha words"), ss.user("beta words")])
    assert [h.version for h in store.search("alpha")] == [1]
    assert store.index_search() == 0
    store.append(sid, [ss.user("gamma words"), ss.custom("note", {"x": "gamma"})])
    assert indexed(store, 2) == 2  # both taken; only the message is searched
    assert sorted(h.version for h in store.search("gamma")) == [3]
    store.append(sid, ss.user("delta words"))
    assert sorted(h.version for h in store.search("words")) == [1, 2, 3, 5]


def test_postgres_finds_what_the_indexer_cannot_take_yet(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """An open older transaction holds the feed's final part back: the events committed after it
    are not indexed yet, and a search still finds them (matched on the fly)."""
    import psycopg

    url = fresh_url("postgresql", tmp_path, request)
    with SessionStore(url) as store:
        sid = store.create_session(events=[ss.user("indexed early")])
        store.index_search()
        with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as held:
            held.execute("SELECT pg_current_xact_id()")  # a transaction with an id, left open
            store.append(sid, ss.user("late but committed"))
            assert [h.version for h in store.search("committed")] == [2]
            with store.engine.connect() as conn:
                rows = conn.exec_driver_sql("SELECT count(*) FROM event_search").scalar_one()
            assert rows == 1  # the late event is not in the index yet
            held.rollback()
        assert indexed(store, 1) == 1
        assert [h.version for h in store.search("committed")] == [2]


@pytest.mark.citus
def test_async_door_searches_the_same(store_url: str) -> None:
    with SessionStore(store_url) as sync:
        sid = sync.create_session(events=_sample_events())
        expected = [(h.session_id, h.version, h.snippet, h.tool) for h in sync.search("supabase", sid)]

    async def scenario() -> list[tuple[str, int, str, str | None]]:
        store = AsyncSessionStore(store_url)
        try:
            return [(h.session_id, h.version, h.snippet, h.tool) for h in await store.search("supabase", sid)]
        finally:
            await store.close()

    assert asyncio.run(scenario()) == expected and expected


def test_cli_search(store_url: str) -> None:
    with SessionStore(store_url) as store:
        sid = store.create_session(events=_sample_events())

    def run(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(main, ["--db", store_url, "search", *args], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    shown = run("needle", "--session", sid[:8])
    assert f"{sid}  v7  tool_result Read" in shown and "def [needle]()" in shown
    hits = json.loads(run("supabase", "--kind", "tool_call", "--tool", "Bash", "--json"))
    assert [(h["session_id"], h["version"], h["kind"], h["tool"]) for h in hits] == [(sid, 4, "tool_call", "Bash")]
    (a, b), = hits[0]["highlights"]
    assert hits[0]["snippet"][a:b] == "supabase"
    assert json.loads(run("nothingmatchesthis", "--json")) == []
    out = run("--", "-needle", code=2)
    assert "InvalidSearch" in out and "Traceback" not in out and len(out.strip().splitlines()) == 1
    assert "Invalid value for '--kind'" in run("x", "--kind", "prune", code=2)


def test_parse_query_reads_what_people_type() -> None:
    q = parse_query('fix "the bug"  migrat* -flaky OR "" timeout')
    assert [[(t.text, t.prefix, t.excluded) for t in g] for g in q.groups] == [
        [("fix", False, False), ("the bug", False, False), ("migrat", True, False), ("flaky", False, True)],
        [("timeout", False, False)]]


def test_a_very_common_word_ranks_a_bounded_set_of_its_matches(store: SessionStore) -> None:
    """Past `RANKED` matches (SQLite) or `RANKED_PG` (PostgreSQL), a search over every session
    ranks the bounded set docs/cli.md describes: SQLite its newest matches, so the oldest and best
    match falls outside; PostgreSQL the first its GIN index returns (table order), so it stays in.
    Within a session every match is ranked, the oldest best one first."""
    from sessionstore.storage.search_statements import RANKED, RANKED_PG
    bound = RANKED if store.backend == "sqlite" else RANKED_PG
    best = store.create_session(events=[ss.user("ubiquitous " * 40 + "ubiquitous")])
    sid = store.create_session(events=[ss.user(f"ubiquitous filler number {i} of many words")
                                       for i in range(bound + 1)])
    hits = store.search("ubiquitous", limit=5)
    assert len(hits) == 5
    if store.backend == "sqlite":
        assert best not in {h.session_id for h in hits}
        assert min(h.version for h in hits) > 1  # the oldest filler (a newer match's rank is the same) is cut too
    else:
        assert hits[0].session_id == best
    assert store.search("ubiquitous", best)[0].session_id == best
    assert store.search("ubiquitous", [best, sid], limit=1)[0].session_id == best
    rare = store.search("number 7 of", limit=50)  # a phrase with fewer matches: every one ranked
    assert {h.version for h in rare} == {8}


@pytest.mark.citus
def test_hits_are_ranked_by_bm25_on_both_backends(store: SessionStore) -> None:
    """A word said more often, in a shorter event, ranks higher: bm25 on both backends (SQLite's
    own; PostgreSQL's from each event's stored summary, migration 0012), so the same events come
    first on both. The summary holds the event's length in words and its most repeated words'
    counts (a word said once is not kept: it counts once)."""
    filler = [f"filler{i}" for i in range(200)]
    events = [ss.user("deploy deploy deploy deploy deploy then " + " ".join(filler[:4])),  # tf 5, 10 words
              ss.user("deploy " + " ".join(filler)),                                       # tf 1, 201 words
              ss.user("deploy " + " ".join(filler[:20])),                                  # tf 1, 21 words
              ss.user("deploy failed"),                                                    # tf 1, 2 words
              *(ss.user(f"unrelated words number {i}") for i in range(5))]
    sid = store.create_session(events=events)
    hits = store.search("deploy")
    assert [h.version for h in hits] == [1, 4, 3, 2]  # (`ts_rank` put the three said once in order)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.version for h in store.search("deploy", sid, kind="message")] == [1, 4, 3, 2]
    if store.backend == "postgresql":
        with store.engine.connect() as conn:
            stats = conn.execute(text("SELECT e.version, s.stats FROM event_search s JOIN events e USING "
                                      "(session_id, position) WHERE e.version IN (1, 4) ORDER BY 1")).all()
            many = conn.execute(text("SELECT sessionstore_search_stats(to_tsvector('simple', :t))"),
                                {"t": " ".join(f"w{i} " * (2 + i % 3) for i in range(40))}).scalar_one()
        assert [s for _, s in stats] == [{"#": 10, "deploy": 5}, {"#": 2}]
        assert len(many) == 33 and many["#"] == sum(2 + i % 3 for i in range(40))  # the 32 most repeated
        assert {w for w, n in many.items() if w != "#"} >= {f"w{i}" for i in range(40) if i % 3 == 2}
