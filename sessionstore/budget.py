"""A tool result's budget (DESIGN §12): whatever the store hands a model as a tool result fits it.

An agent takes a tool result whole into its context: Claude Code warns past 10,000 tokens of MCP
output and refuses past 25,000, and a 99,000-token `log` would flood any window. So every result
the store gives a model (the recall tool, the MCP tools) is held to a budget counted with the
store's own counter, `TOOL_RESULT_TOKENS` by default. Longer output is cut into pages: a page is
the text's next lines (a line too long for a page is cut in pieces), and its last line names the
page and the exact tool call, arguments and all, that gets the next one. Joined, the pages give
back the text exactly (`body`).

Pure: text and a counter in, a page out. Page N is found by packing the pages before it, so the
first page of a megabyte costs about two pages of counting (the page's lines, then the page once
more, whole), not the megabyte's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import ConfigurationError, ToolInputError
from .tokens import TokenCounter

TOOL_RESULT_TOKENS: Final = 10_000
# A page holds its footer (which names a call, ids and all) and still some text.
MIN_TOOL_RESULT_TOKENS: Final = 256
# Tokens a footer is allowed beyond its own count: joining two texts can merge across the seam.
_SEAM: Final = 4
# Characters a token takes in ordinary text (about 4): a line longer than this many times the
# tokens a page holds is cut without being counted whole first.
_LONG_LINE_CHARS: Final = 4
# An answer of at most this many characters a token of the budget is counted whole first: it
# most likely fits (a longer one is counted a line at a time, as its pages are).
_SHORT_CHARS: Final = 2
_FOOTER: Final = re.compile(r"\n\[page \d+ of (?:about )?\d+(?:; next page: [^\n]*|, the last)\]\Z")


@dataclass(frozen=True, slots=True)
class NextCall:
    """A tool call, as a footer names it: ``log {"session_id": "…", "after": 812}``."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def with_(self, **arguments: Any) -> NextCall:
        return NextCall(self.tool, {**self.arguments, **arguments})

    def __str__(self) -> str:
        return f"{self.tool} {json.dumps(dict(self.arguments), ensure_ascii=False)}"


def check_budget(max_tokens: Any) -> int:
    """`max_tokens` if it can be a tool result's budget; `ConfigurationError` says why not."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < MIN_TOOL_RESULT_TOKENS:
        raise ConfigurationError(f"a tool result's budget is a whole number of tokens, at least "
                                 f"{MIN_TOOL_RESULT_TOKENS}; got {max_tokens!r}")
    return max_tokens


def footer(text: str) -> str:
    """The last line of a page (after the page's text): `text` in brackets."""
    return f"\n[{text}]"


def reserve(counter: TokenCounter, longest: str) -> int:
    """Tokens to keep for a footer whose longest form is `longest` (seam included)."""
    return counter.count(footer(longest)) + _SEAM


def lines(text: str) -> Iterator[str]:
    """The lines of `text`, each with its newline (joined, they are `text`), one at a time."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def pieces(texts: Iterable[str], capacity: int, counter: TokenCounter) -> Iterator[tuple[str, int]]:
    """`texts` (lines) as (text, tokens); one longer than `capacity` tokens is cut into pieces of
    a quarter of that, so that pages of pieces still fill."""
    for text in texts:
        if len(text) <= capacity * _LONG_LINE_CHARS:
            tokens = counter.count(text)
            if tokens <= capacity:
                yield text, tokens
                continue
        yield from _cut(text, max(1, capacity // 4), counter)


def _cut(line: str, capacity: int, counter: TokenCounter) -> Iterator[tuple[str, int]]:
    """`line` in pieces of at most `capacity` tokens: sized by the characters a token took so
    far (4 to start with), each one counted, shrunk until it fits."""
    start, chars_per_token = 0, 4.0
    while start < len(line):
        size = max(1, int(capacity * chars_per_token * 0.95))
        while True:
            piece = line[start:start + size]
            tokens = counter.count(piece)
            if tokens <= capacity or size == 1:
                break
            size = max(1, int(size * capacity / tokens * 0.95))
        if tokens and len(piece) == size:  # a full piece: what a token took in it
            chars_per_token = len(piece) / tokens
        yield piece, tokens
        start += len(piece)


class Pieces:
    """Pieces waiting to be packed into pages: what a page could not take goes back in front."""

    def __init__(self, stream: Iterable[tuple[str, int]]) -> None:
        self._stream = iter(stream)
        self._front: list[tuple[str, int]] = []  # the next piece last

    def take(self) -> tuple[str, int] | None:
        if self._front:
            return self._front.pop()
        return next(self._stream, None)

    def give_back(self, piece: tuple[str, int]) -> None:
        self._front.append(piece)

    def more(self) -> bool:
        piece = self.take()
        if piece is None:
            return False
        self.give_back(piece)
        return True


def fill(stream: Pieces, capacity: int, counter: TokenCounter) -> tuple[str, bool]:
    """The next page from `stream`: as many pieces as fit in `capacity` tokens (at least one),
    and whether more follow. The page is counted whole once more — pieces counted apart may,
    rarely, count fewer than joined — and gives back its last pieces until it fits."""
    taken: list[tuple[str, int]] = []
    used = 0
    while (piece := stream.take()) is not None:
        if taken and used + piece[1] > capacity:
            stream.give_back(piece)
            break
        taken.append(piece)
        used += piece[1]
    text = "".join(t for t, _ in taken)
    while len(taken) > 1 and counter.count(text) > capacity:
        stream.give_back(taken.pop())
        text = "".join(t for t, _ in taken)
    return text, stream.more()


def page(text: str, number: int, budget: int, counter: TokenCounter, call: NextCall) -> str:
    """Page `number` (1 first) of `text` as a tool result of at most `budget` tokens: the whole
    text when it fits, else its page `number`, whose last line names the call for the next page
    (`call` with its ``page`` argument) or says it is the last. `ToolInputError` when there is
    no such page."""
    if number < 1:
        raise ToolInputError(f"'page' starts at 1, got {number}")
    capacity = budget - reserve(counter, f"page 99999 of about 99999; next page: {call.with_(page=99_999)}")
    stream = Pieces(pieces(lines(text), capacity, counter))
    if len(text) <= budget * _SHORT_CHARS:  # short: counted whole, once
        whole = counter.count(text) <= budget
    else:  # long: counted line by line until it is over the budget (a megabyte is not counted whole)
        seen: list[tuple[str, int]] = []
        total = 0
        while (piece := stream.take()) is not None and total + piece[1] <= budget:
            seen.append(piece)
            total += piece[1]
        whole = piece is None and counter.count(text) <= budget
        for held in reversed([*seen, *([piece] if piece is not None else [])]):
            stream.give_back(held)
    if whole:  # no pages, no footer
        if number > 1:
            raise ToolInputError(f"page {number} does not exist: the result has 1 page")
        return text
    done = 0
    for k in range(1, number + 1):
        body, more = fill(stream, capacity, counter)
        done += len(body)
        if k < number and not more:
            raise ToolInputError(f"page {number} does not exist: the result has {k} page(s)")
    if not more:
        return body + footer(f"page {number} of {number}, the last")
    about = max(number + 1, number + -(-(len(text) - done) * number // max(1, done)))
    return body + footer(f"page {number} of about {about}; next page: {call.with_(page=number + 1)}")


def body(result: str) -> tuple[str, bool]:
    """A tool result without its page footer, and whether a next page follows."""
    found = _FOOTER.search(result)
    if found is None:
        return result, False
    return result[:found.start()], "; next page: " in found.group(0)
