"""full-text search over what events say, kept by the database as events land

The indexed text of an event is `sessionstore.search.search_text` written in each backend's
SQL (kept here, frozen with this revision; tests/test_search.py checks that both index exactly
that text on real transcripts):

- SQLite: a contentless FTS5 table `events_search` (rowid = events.position) that a trigger
  fills on every insert of a searched kind, so that an append stays one INSERT statement; a
  second trigger re-indexes an event whose payload is replaced (erasure). Contentless: the text
  is not stored twice; snippets are cut from the payload the query returns anyway.
- PostgreSQL: immutable SQL functions `sessionstore_search_text(kind, payload)` and
  `sessionstore_search_words(text)` (its tsvector, 'simple' configuration) and a GIN expression
  index on the two: no column is added to events, and an update of the payload updates the index.

Both index existing rows when the migration runs. A NUL character is indexed as a space. Only the first 250,000 characters of an
event are indexed (PostgreSQL refuses a tsvector above 1 MB, and an append must never fail
because of its index).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""
from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SEARCHED_KINDS = "('message', 'tool_call', 'tool_result', 'system', 'scratchpad')"
MAX_CHARS = 250_000


def _sqlite_blocks(row: str, path: str) -> str:
    return (f"CASE json_type({row}.payload, '{path}') "
            f"WHEN 'text' THEN json_extract({row}.payload, '{path}') "
            f"WHEN 'array' THEN coalesce((SELECT group_concat(CASE json_extract(b.value, '$.type') "
            f"WHEN 'text' THEN json_extract(b.value, '$.text') WHEN 'thinking' THEN json_extract(b.value, '$.thinking') "
            f"END, char(10)) FROM json_each({row}.payload, '{path}') AS b WHERE b.type = 'object'), '') "
            f"ELSE '' END")


def sqlite_text(row: str) -> str:
    """`search_text` of the events row `row` (NEW, OLD or events), in SQLite's SQL.

    SQLite's JSON functions end a string at an escaped NUL: a payload holding one is read with
    each NUL as a space (escaped backslashes rewritten as \\u005c first, so that a literal
    backslash followed by "u0000" is left alone), as `search_text` does.
    """
    cleaned = (rf"CASE WHEN instr({row}.payload, '\u0000') > 0 "
               rf"THEN replace(replace({row}.payload, '\\', '\u005c'), '\u0000', '\u0020') "
               rf"ELSE {row}.payload END")
    return f"(SELECT {_sqlite_text('p')} FROM (SELECT {row}.kind AS kind, {cleaned} AS payload) AS p)"


def _sqlite_text(row: str) -> str:
    return (f"substr(CASE {row}.kind "
            f"WHEN 'message' THEN {_sqlite_blocks(row, '$.content')} "
            f"WHEN 'tool_result' THEN {_sqlite_blocks(row, '$.output')} "
            f"WHEN 'tool_call' THEN coalesce(json_extract({row}.payload, '$.name'), '') || char(10) || "
            f"coalesce((SELECT group_concat(t.value, char(10)) FROM json_tree({row}.payload, '$.input') AS t "
            f"WHERE t.type IN ('text', 'integer', 'real')), '') "
            f"ELSE coalesce(json_extract({row}.payload, '$.text'), '') END, 1, {MAX_CHARS})")


SQLITE_SCHEMA = [
    "CREATE VIRTUAL TABLE events_search USING fts5(body, content='', tokenize='unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER events_search_insert AFTER INSERT ON events WHEN NEW.kind IN {SEARCHED_KINDS} BEGIN "
    f"INSERT INTO events_search(rowid, body) VALUES (NEW.position, {sqlite_text('NEW')}); END",
    f"CREATE TRIGGER events_search_update AFTER UPDATE OF payload ON events WHEN NEW.kind IN {SEARCHED_KINDS} BEGIN "
    f"INSERT INTO events_search(events_search, rowid, body) VALUES ('delete', OLD.position, {sqlite_text('OLD')}); "
    f"INSERT INTO events_search(rowid, body) VALUES (NEW.position, {sqlite_text('NEW')}); END",
    f"INSERT INTO events_search(rowid, body) SELECT position, {sqlite_text('events')} FROM events "
    f"WHERE kind IN {SEARCHED_KINDS}",
]

POSTGRES_SCHEMA = [
    r"""
CREATE FUNCTION sessionstore_blocks_text(content json) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE json_typeof(content)
  WHEN 'string' THEN content #>> '{}'
  WHEN 'array' THEN coalesce((
    SELECT string_agg(CASE b ->> 'type' WHEN 'text' THEN b ->> 'text' WHEN 'thinking' THEN b ->> 'thinking' END,
                      E'\n' ORDER BY i)
      FROM json_array_elements(content) WITH ORDINALITY AS e(b, i)
     WHERE json_typeof(b) = 'object'), '')
  ELSE '' END
$$""",
    r"""
CREATE FUNCTION sessionstore_json_leaves(value json) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
WITH RECURSIVE walk(v) AS (
  SELECT value
  UNION ALL
  SELECT c.child FROM walk, LATERAL (
    SELECT e FROM json_array_elements(CASE WHEN json_typeof(walk.v) = 'array' THEN walk.v END) AS e
    UNION ALL
    SELECT j.value FROM json_each(CASE WHEN json_typeof(walk.v) = 'object' THEN walk.v END) AS j) AS c(child))
SELECT coalesce(string_agg(v #>> '{}', E'\n'), '') FROM walk WHERE json_typeof(v) IN ('string', 'number')
$$""",
    # A JSON string may hold \u0000 or a lone surrogate (\ud800), which PostgreSQL's text cannot:
    # such payloads are read with each of those escapes (and any surrogate pair: not words) as a space (escaped backslashes are rewritten as \u005c first, so that a literal
    # backslash followed by "u0000" is left alone), as `search_text` does.
    rf"""
CREATE FUNCTION sessionstore_search_text(kind text, payload json) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT left(CASE kind
  WHEN 'message' THEN sessionstore_blocks_text(p -> 'content')
  WHEN 'tool_result' THEN sessionstore_blocks_text(p -> 'output')
  WHEN 'tool_call' THEN coalesce(p ->> 'name', '') || E'\n' || sessionstore_json_leaves(p -> 'input')
  WHEN 'system' THEN coalesce(p ->> 'text', '')
  WHEN 'scratchpad' THEN coalesce(p ->> 'text', '')
  ELSE '' END, {MAX_CHARS})
FROM (SELECT CASE WHEN payload::text ~ '\\u(0000|[dD][89abcdefABCDEF])'
                  THEN regexp_replace(replace(payload::text, '\\', '\u005c'),
                                      '\\u(0000|[dD][89abcdefABCDEF][0-9a-fA-F]{{2}})', '\u0020', 'g')::json
                  ELSE payload END) AS cleaned(p)
$$""",
    # Words are split at every character that is not a letter or digit, as SQLite's unicode61
    # does (PostgreSQL's own parser keeps paths and file names whole: `haystack.py` would not
    # be found by `haystack`); the query side splits terms the same way (`search.tsquery`).
    r"""
CREATE FUNCTION sessionstore_search_words(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT to_tsvector('simple'::regconfig, regexp_replace(body, '[^[:alnum:]]+', ' ', 'g'))
$$""",
    "CREATE INDEX ix_events_search ON events USING gin "
    "(sessionstore_search_words(sessionstore_search_text(kind, payload)))",
]


def upgrade() -> None:
    for statement in SQLITE_SCHEMA if op.get_bind().dialect.name == "sqlite" else POSTGRES_SCHEMA:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in ("DROP TRIGGER IF EXISTS events_search_update", "DROP TRIGGER IF EXISTS events_search_insert",
                          "DROP TABLE IF EXISTS events_search"):
            op.execute(statement)
        return
    op.execute("DROP INDEX IF EXISTS ix_events_search")
    for name in ("sessionstore_search_words(text)", "sessionstore_search_text(text, json)", "sessionstore_json_leaves(json)",
                 "sessionstore_blocks_text(json)"):
        op.execute(f"DROP FUNCTION IF EXISTS {name}")
