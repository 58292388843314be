"""Full-text search: what an event says (the indexed text), the query language, and snippets.

Pure functions only; the database side is in `storage/statements.py` (the queries) and
migrations 0003 and 0004 (the index). The index follows the global feed, off the append path
(an append is one statement, and indexes nothing): an FTS5 table on SQLite, a table of
tsvectors under a GIN index on PostgreSQL, both filled by `Repository.index_feed`, which every
search runs first so that results are exact. The SQL that computes the indexed text mirrors
`search_text`; `tests/test_search.py` checks, token for token
on real transcripts, that each backend indexes exactly what `search_text` says.

What is searched is what a person reads: message text and thinking, a tool call's name and
the values of its input, a tool result's text, system prompts and scratchpads. Signatures,
images, compaction summaries (derived text, which would echo every hit it summarises) and
import records are not.

The query language is small and the same on both backends: words (all must occur),
``"a phrase"``, ``prefix*``, ``OR`` between alternatives, ``-word`` to exclude. Matching is
case-insensitive and has no stemming. Emoji and text in scripts written without spaces (CJK)
match as substrings (``日本`` finds ``日本語``): the word indexes cannot, so such a query scans.
Every term reaches the database quoted, so no input is
a syntax error there.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .errors import InvalidSearch

SEARCHED_KINDS: Final = ("message", "tool_call", "tool_result", "system", "scratchpad")
_TEXT_FIELD: Final = {"message": "content", "tool_result": "output"}
_BLOCK_TEXT: Final = {"text": "text", "thinking": "thinking"}  # block type → the field holding its text
MAX_TERMS: Final = 32
SNIPPET_CHARS: Final = 200
# PostgreSQL refuses a tsvector above 1 MB: the index holds each event's first 250,000 characters.
MAX_CHARS: Final = 250_000


def search_text(kind: str, payload: Mapping[str, Any]) -> str:
    """The text the index holds for an event of `kind` (empty for kinds that are not searched)."""
    return _full_text(kind, payload).replace("\x00", " ")[:MAX_CHARS]  # a NUL ends text in SQLite's FTS5


def _full_text(kind: str, payload: Mapping[str, Any]) -> str:
    if kind in _TEXT_FIELD:
        return _blocks_text(payload.get(_TEXT_FIELD[kind]))
    if kind == "tool_call":
        return "\n".join([str(payload.get("name", "")), *_leaf_values(payload.get("input"))])
    if kind in ("system", "scratchpad"):
        return str(payload.get("text", ""))
    return ""


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        field = _BLOCK_TEXT.get(block.get("type")) if isinstance(block, Mapping) else None
        if field is not None and isinstance(block.get(field), str):
            texts.append(block[field])
    return "\n".join(texts)


def _leaf_values(value: Any) -> list[str]:
    """Strings and numbers anywhere in a JSON value, in document order (keys and booleans are not text)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [repr(value) if isinstance(value, float) else str(value)]
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaf_values(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaf_values(item)]
    return []


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class Term:
    """A word or phrase of a query; `prefix` matches words that start with it."""

    text: str
    prefix: bool = False
    excluded: bool = False
    # Matched as a substring (`needs_substring`): emoji and CJK, which the word indexes cannot find.
    substring: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    """Alternatives (OR) of groups of terms that must all occur (AND), minus the excluded ones."""

    text: str
    groups: tuple[tuple[Term, ...], ...]

    @property
    def terms(self) -> tuple[Term, ...]:
        return tuple(t for group in self.groups for t in group if not t.excluded)

    @property
    def scans(self) -> bool:
        """Whether a term needs substring matching: then the query is a scan (`needles`, `matches`)."""
        return any(t.substring for group in self.groups for t in group)


_TOKEN: Final = re.compile(r'(-?)"([^"]*)"(\*?)|(\S+)')
_WORD: Final = re.compile(r"\w+")
_ALNUM: Final = re.compile(r"[^\W_]+")
_UNSPACED_SCRIPTS: Final = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI", "LAO", "KHMER", "MYANMAR")


def _unindexed(char: str) -> bool:
    """A character the word indexes cannot find inside a word: a symbol beyond ASCII (emoji, ✓,
    which both tokenizers treat as a separator) or a letter of a script written without spaces
    (日本 inside 日本語, a single token to them)."""
    if ord(char) < 128:
        return False
    if unicodedata.category(char).startswith("S"):
        return True
    return unicodedata.name(char, "").startswith(_UNSPACED_SCRIPTS)


def needs_substring(text: str) -> bool:
    return any(_unindexed(c) for c in text)


def parse_query(text: str) -> Query:
    """The query `text` as terms; `InvalidSearch` says what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidSearch("the search query is empty: give at least one word", query=str(text))
    groups: list[list[Term]] = [[]]
    count = 0
    for match in _TOKEN.finditer(text):
        minus, quoted, star, bare = match.groups()
        if bare == "OR":
            groups.append([])
            continue
        if bare is not None:
            minus = "-" if bare.startswith("-") and len(bare) > 1 else ""
            bare = bare[len(minus):]
            star = "*" if bare.endswith("*") and len(bare) > 1 else ""
            quoted = bare[:-1] if star else bare
        substring = needs_substring(quoted or "")
        if not substring and not _ALNUM.search(quoted or ""):
            continue  # punctuation alone matches nothing on either backend
        count += 1
        groups[-1].append(Term(quoted, prefix=bool(star) and not substring, excluded=bool(minus),
                               substring=substring))
    if count > MAX_TERMS:
        raise InvalidSearch(f"the search query has {count} terms; at most {MAX_TERMS} are allowed", query=text)
    kept = tuple(tuple(g) for g in groups if g)
    if not kept:
        raise InvalidSearch("the search query has no word to look for (only punctuation or OR)", query=text)
    for group in kept:
        if all(t.excluded for t in group):
            raise InvalidSearch("every alternative of a search needs a word that is not excluded "
                                f"(-{group[0].text} alone would match nearly everything)", query=text)
    return Query(text, kept)


def fts5_query(query: Query) -> str:
    """The query as an SQLite FTS5 MATCH expression (every term a quoted string)."""
    def operand(term: Term) -> str:
        return '"' + term.text.replace('"', '""') + '"' + ("*" if term.prefix else "")

    alternatives = []
    for group in query.groups:
        wanted = " AND ".join(operand(t) for t in group if not t.excluded)
        excluded = "".join(f" NOT {operand(t)}" for t in group if t.excluded)
        alternatives.append(f"({wanted}){excluded}")
    return " OR ".join(f"({a})" for a in alternatives)


def tsquery(query: Query) -> str:
    """The query as PostgreSQL ``to_tsquery`` text (every term a quoted lexeme; a quoted
    phrase of several words becomes a phrase search)."""
    def operand(term: Term) -> str:
        # The index splits words at everything but letters and digits: so do the terms (no
        # quote or backslash is left to escape); several words become a phrase.
        quoted = "'" + " ".join(_ALNUM.findall(term.text)) + "'"
        return ("!" if term.excluded else "") + quoted + (":*" if term.prefix else "")

    return " | ".join("(" + " & ".join(operand(t) for t in group) + ")" for group in query.groups)


def ranked_words(query: Query) -> list[str]:
    """The words PostgreSQL's bm25 counts in each match (`storage/search_statements.py`, `_score`):
    every word of a term that is neither excluded, a prefix nor a substring, once each, as the
    index stores it (lowercase). A prefix is left out (the counts kept are whole words'): it
    would add the same to every match."""
    wanted = (w.lower() for group in query.groups for t in group
              if not (t.excluded or t.prefix or t.substring) for w in _ALNUM.findall(t.text))
    return list(dict.fromkeys(wanted))


# --------------------------------------------------------------------------- substring scans
# Emoji and CJK substrings (`Term.substring`) are not in either word index: such a query scans
# the events whose stored JSON holds the term (`needles`, a cheap filter in SQL), and `matches`
# decides on the searched text, term for term as the indexes would.


def needles(query: Query) -> list[str] | None:
    """Strings of which a matching event's stored payload holds at least one: each alternative's
    first substring term as the store's JSON spells it (ASCII-escaped, `events.encode_json`);
    None when some alternative has no such term (the scan reads every searched event then)."""
    found = []
    for group in query.groups:
        term = next((t for t in group if t.substring and not t.excluded), None)
        if term is None:
            return None
        run = max(re.findall(r"[^\x00-\x7f]+", term.text), key=len)  # no case to fold: match it as stored
        found.append(json.dumps(run)[1:-1])
    return found


def _term_matches(term: Term, folded: str, words: list[str]) -> bool:
    if term.substring:
        return term.text.casefold() in folded
    wanted = [w.casefold() for w in _ALNUM.findall(term.text)]
    if not wanted:
        return False
    last = len(wanted) - 1
    for i in range(len(words) - last):
        if words[i:i + last] == wanted[:last] and (
                words[i + last].startswith(wanted[last]) if term.prefix else words[i + last] == wanted[last]):
            return True
    return False


def matches(query: Query, text: str) -> float:
    """How well `text` (an event's `search_text`) matches `query`: 0 when it does not, else the
    number of matched terms of the best alternative (a scan's score: higher is better)."""
    folded = text.casefold()
    words = _ALNUM.findall(folded)
    best = 0.0
    for group in query.groups:
        if any(_term_matches(t, folded, words) for t in group if t.excluded):
            continue
        wanted = [t for t in group if not t.excluded]
        if all(_term_matches(t, folded, words) for t in wanted):
            best = max(best, float(len(wanted)))
    return best


# --------------------------------------------------------------------------- snippets


def _pattern(term: Term) -> str:
    if term.substring:
        return re.escape(term.text)
    words = _WORD.findall(term.text)
    body = r"\W+".join(re.escape(w) for w in words)
    return r"(?<!\w)" + body + (r"\w*" if term.prefix else r"(?!\w)")


def highlight(text: str, query: Query, width: int = SNIPPET_CHARS) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A window of `text` around the first match of `query`, and the (start, end) of each match
    in it: the caller decides how to show them (bold on a terminal, marks in HTML)."""
    terms = query.terms
    if not terms:
        return _window(text, 0, width), ()
    pattern = re.compile("|".join(_pattern(t) for t in terms), re.IGNORECASE)
    first = pattern.search(text)
    start = 0
    if first is not None and first.start() > width // 3:
        start = first.start() - width // 3
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space > start - 20 else start
    end = min(len(text), start + width)
    window = text[start:end]
    spans = tuple((m.start(), m.end()) for m in pattern.finditer(window))
    prefix, suffix = ("…" if start else ""), ("…" if end < len(text) else "")
    shift = len(prefix)
    flat = window.replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return prefix + flat + suffix, tuple((a + shift, b + shift) for a, b in spans)


def _window(text: str, start: int, width: int) -> str:
    flat = text[start:start + width].replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return flat + ("…" if len(text) > start + width else "")


def marked(snippet: str, spans: Sequence[tuple[int, int]], before: str = "[", after: str = "]") -> str:
    """`snippet` with each highlighted span wrapped in `before`/`after`."""
    parts, last = [], 0
    for a, b in spans:
        parts += [snippet[last:a], before, snippet[a:b], after]
        last = b
    parts.append(snippet[last:])
    return "".join(parts)


__all__ = ["MAX_CHARS", "MAX_TERMS", "SEARCHED_KINDS", "Query", "Term", "fts5_query", "highlight", "marked", "matches",
           "needles", "needs_substring", "parse_query", "search_text", "tsquery"]
