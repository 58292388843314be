"""PostgreSQL: the indexer's text of an event made by a PL/pgSQL function (the same text)

`sessionstore_search_text` was a SQL function with a FROM clause, which PostgreSQL cannot inline:
each call started an executor of its own, in which the SQL functions it calls
(`sessionstore_blocks_text`, `sessionstore_json_leaves`) were planned again, row after row. The
PL/pgSQL body keeps its expressions and their plans for the transaction: 50 µs an event instead
of 140 on a sample of 6,500 real events, a third of the search index's catch-up
(docs/benchmarks.md, "Quiet figures for issue 39"). It also looks for a backslash-u before
running the escape pattern over the payload's text, which most payloads do not hold. The text is
the same, character for character (checked on those 6,500 events and on escapes of NUL and
surrogates); what the index holds does not change, so nothing is indexed again.

- PostgreSQL: `sessionstore_search_text(kind, payload)` replaced. SQLite: unchanged.

Downgrading puts migration 0003's SQL function back.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-08
"""
from __future__ import annotations

import runpy
from pathlib import Path

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# As migration 0003's `MAX_CHARS`: an event's text is indexed up to this many characters.
MAX_CHARS = 250_000

# A JSON string may hold \u0000 or a lone surrogate, which PostgreSQL's text cannot: such a
# payload is read with each of those escapes (and any surrogate pair) as a space, as 0003's was.
POSTGRES_FUNCTION = rf"""
CREATE OR REPLACE FUNCTION sessionstore_search_text(kind text, payload json) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  p json := payload;
BEGIN
  IF strpos(payload::text, '\u') > 0 AND payload::text ~ '\\u(0000|[dD][89abcdefABCDEF])' THEN
    p := regexp_replace(replace(payload::text, '\\', '\u005c'),
                        '\\u(0000|[dD][89abcdefABCDEF][0-9a-fA-F]{{2}})', '\u0020', 'g')::json;
  END IF;
  RETURN left(CASE kind
    WHEN 'message' THEN sessionstore_blocks_text(p -> 'content')
    WHEN 'tool_result' THEN sessionstore_blocks_text(p -> 'output')
    WHEN 'tool_call' THEN coalesce(p ->> 'name', '') || E'\n' || sessionstore_json_leaves(p -> 'input')
    WHEN 'system' THEN coalesce(p ->> 'text', '')
    WHEN 'scratchpad' THEN coalesce(p ->> 'text', '')
    ELSE '' END, {MAX_CHARS});
END
$$"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(POSTGRES_FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":  # 0003's (the revisions folder is not a package)
        earlier = runpy.run_path(str(Path(__file__).with_name("0003_search.py")))["POSTGRES_SCHEMA"]
        (function,) = [s for s in earlier if "FUNCTION sessionstore_search_text(" in s]
        op.execute(function.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
