"""PostgreSQL: search ranks each match from a small value stored beside its vector (bm25)

`ts_rank` read every ranked match's whole tsvector, and a long event's is stored out of line
(TOAST, uncompressed: 7.6 KB on average for a rare word's matches at a million events), so a
rare word's search was mostly those reads (docs/benchmarks.md, "Ranking from a stored summary").
Now `event_search.stats` holds what bm25 needs of an event, computed from its vector when the
row is written (a generated column: every writer of the index — the indexer, Citus's, the
re-index trigger — fills it without a change): the event's length in words (key ``#``) and its
most repeated words with their counts (up to `TOP` of those said twice or more). A search
scores its matches from it alone (`storage/search_statements.py`, `_score`): bm25 over the
query's words, a word not among the event's most repeated counted once. Its hits agree with
SQLite's bm25 far more than `ts_rank`'s did (docs/cli.md, "How hits are ranked").

- PostgreSQL: the function `sessionstore_search_stats(tsvector)` and the column (adding it
  rewrites `event_search` and rebuilds its indexes: 160 s at a million events here). SQLite:
  unchanged.

Downgrading drops the column and the function.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-08
"""
from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# How many of an event's most repeated words keep their counts (any other word counts once).
TOP = 32

POSTGRES_SCHEMA = [
    # Its length in words (all positions; a word past 16,383 or said more than 256 times is held
    # at those bounds by PostgreSQL) and its TOP most repeated words: "#" is no word (words are
    # letters and digits only, `sessionstore_search_words`).
    f"""
CREATE FUNCTION sessionstore_search_stats(words tsvector) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT jsonb_build_object('#', coalesce(sum(n), 0))
       || coalesce(jsonb_object_agg(lexeme, n) FILTER (WHERE n > 1 AND r <= {TOP}), '{{}}'::jsonb)
FROM (SELECT lexeme, cardinality(positions) AS n,
             row_number() OVER (ORDER BY cardinality(positions) DESC, lexeme) AS r
      FROM unnest(words)) AS w
$$""",
    "ALTER TABLE event_search ADD COLUMN stats jsonb GENERATED ALWAYS AS (sessionstore_search_stats(words)) STORED",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in POSTGRES_SCHEMA:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in ("ALTER TABLE event_search DROP COLUMN IF EXISTS stats",
                      "DROP FUNCTION IF EXISTS sessionstore_search_stats(tsvector)"):
        op.execute(statement)
