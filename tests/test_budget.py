"""A tool result's budget (`sessionstore.budget`): pages within it by the counter given, joined
exactly the text, each naming the call for the next. Pure: no store."""

from __future__ import annotations

import json

import pytest

from sessionstore import ConfigurationError, HeuristicCounter, ToolInputError
from sessionstore.budget import NextCall, body, check_budget, page
from sessionstore.tokens import TokenCounter, default_counter

from .conftest import FIXTURE_TRANSCRIPTS, shipped

CALL = NextCall("show", {"session_id": "s1"})


@pytest.mark.parametrize("counter", [default_counter(), HeuristicCounter()], ids=["tiktoken", "chars/4"])
def test_a_real_transcript_in_pages(counter: TokenCounter) -> None:
    """A real transcript file (JSON lines up to 10,000 characters): every page within the budget,
    each asked for as the previous one's last line says, and joined the file character for character."""
    text = (FIXTURE_TRANSCRIPTS / shipped("pi/recorded/*.jsonl")).read_text()
    pages, arguments = [], {"session_id": "s1", "page": 1}
    while True:
        result = page(text, arguments["page"], 3_000, counter, NextCall("show", {"session_id": "s1"}))
        assert counter.count(result) <= 3_000
        pages.append(result)
        part, more = body(result)
        if not more:
            break
        assert result.endswith(f'; next page: show {json.dumps(arguments | {"page": arguments["page"] + 1})}]')
        arguments = json.loads(result.rsplit("next page: show ", 1)[1][:-1])
    assert "".join(body(p)[0] for p in pages) == text
    assert len(pages) > 10 and pages[-1].endswith(f"\n[page {len(pages)} of {len(pages)}, the last]")
    # whole lines where they fit (a line is cut only when longer than a page): at worst half-filled on average
    assert len(pages) <= 2 * counter.count(text) / 3_000 + 1
    with pytest.raises(ToolInputError, match=f"page {len(pages) + 1} does not exist: the result has {len(pages)}"):
        page(text, len(pages) + 1, 3_000, counter, CALL)


def test_what_fits_comes_back_whole() -> None:
    counter = default_counter()
    assert page("a short answer", 1, 256, counter, CALL) == "a short answer"
    with pytest.raises(ToolInputError, match="page 2 does not exist: the result has 1 page"):
        page("a short answer", 2, 256, counter, CALL)
    with pytest.raises(ToolInputError, match="'page' starts at 1"):
        page("a short answer", 0, 256, counter, CALL)
    assert body("a short answer") == ("a short answer", False)


def test_the_budget_is_checked() -> None:
    assert check_budget(256) == 256
    for bad in (255, 0, -1, 1.5, True, "10000"):
        with pytest.raises(ConfigurationError, match="at least 256"):
            check_budget(bad)
