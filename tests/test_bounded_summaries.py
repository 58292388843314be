"""Bounded summaries (issue 7, item 2): every summariser holds its budget; lists keep their first
and most recent entries and count the rest, with versions; sliced summaries are reduced
hierarchically, each merge request fitting the summariser's context — offline, and Anthropic
through the real AsyncAnthropic SDK against the local Messages API server."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import anthropic
import pytest

import sessionstore as ss
from sessionstore import AnthropicSummarizer, CompactionPolicy, SummaryRequest
from sessionstore.compaction.pipeline import compaction_steps
from sessionstore.compaction.summarize import noted_users, with_noted_users, with_paths_modified
from sessionstore.summarizers import SECTIONS, adrive, format_sections, parse_sections
from sessionstore.summarizers.bounded import bullets, fit_items
from sessionstore.summarizers.fit import fit_summary_text
from sessionstore.summarizers.paths import flat_lines
from sessionstore.testing import AnthropicServer
from sessionstore.testing.anthropic_server import RecordedRequest
from sessionstore.tokens import HeuristicCounter

from .test_properties_compaction import agent_view

NOTE = re.compile(r"^\[… ([\d,]+) (.+?) left out, versions (\d+)–(\d+); recall read v\3\.\.\4 …\]$")


def conversation(turns: int) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """Anthropic-shaped messages of `turns` exchanges (one failing tool call in three), with versions."""
    messages: list[dict[str, Any]] = []
    versions: list[list[int]] = []
    for i in range(turns):
        v = 4 * i + 1
        messages.append({"role": "user", "content": [{"type": "text", "text": f"Request {i}: fix bug #{i}"}]})
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Looking at m{i}.py. The cause is line {i}."},
            {"type": "tool_use", "id": f"t{i}", "name": "Edit", "input": {"file_path": f"m{i}.py"}}]})
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}
        if i % 3 == 0:
            result.update(content=f"error {i}: old_string not found", is_error=True)
        messages.append({"role": "user", "content": [result]})
        versions += [[v], [v + 1, v + 2], [v + 3]]
    return messages, versions


def section_entries(summary: str, title: str) -> list[str]:
    return bullets(parse_sections(summary)[title])


def assert_counted(entries: list[str], expected_versions: list[int], noun: str, *, first: bool = True) -> None:
    """The first (unless not `first`) and the latest entries are listed (in order), one note
    counts exactly the others and spans exactly their versions."""
    listed = [int(m.group(1)) for e in entries if (m := re.match(r"\[v(\d+)\] ", e))]
    notes = [NOTE.match(e) for e in entries if e.startswith("[… ")]
    assert len(notes) == 1 and notes[0] is not None and notes[0].group(2) == noun
    count, low, high = int(notes[0].group(1).replace(",", "")), int(notes[0].group(3)), int(notes[0].group(4))
    left_out = [v for v in expected_versions if v not in set(listed)]
    assert listed == sorted(listed) and listed[-1] == expected_versions[-1]
    assert (listed[0] == expected_versions[0]) == first
    if not first:  # the note comes first, then the most recent entries
        assert entries[0].startswith("[… ") and listed == expected_versions[-len(listed):]
    assert count == len(left_out) and (low, high) == (left_out[0], left_out[-1])


def test_offline_lists_keep_the_first_and_the_latest_and_count_the_rest() -> None:
    messages, versions = conversation(3_000)
    request = SummaryRequest(messages=messages, versions=versions, max_tokens=2_000,
                             read_files=tuple(f"src/r{i}.py" for i in range(800)),
                             modified_files=tuple(f"src/m{i}.py" for i in range(300)))
    summarizer = ss.OfflineSummarizer()
    summary = summarizer.summarize(request)
    assert len(summary) <= 2_000 * summarizer.chars_per_token
    sections = parse_sections(summary)
    assert list(sections) == [title for title in SECTIONS if title in sections]  # empty ones lose their heading
    # the user's messages are reduced last: 3,000 of them are over the whole summary, so everything
    # else gave way first, then the oldest messages left out for a note naming their versions
    assert "Files and code" not in sections and "Errors and fixes" not in sections
    assert_counted(section_entries(summary, "All user messages"), [4 * i + 1 for i in range(3_000)], "user messages")


def test_lists_keep_the_first_and_the_latest_and_count_the_rest_beside_the_users() -> None:
    """With the user's messages listed whole, the other lists keep their first and most recent
    entries and count the others (the errors: the latest only)."""
    messages, versions = conversation(3_000)
    request = SummaryRequest(messages=messages, versions=versions, max_tokens=45_000,
                             read_files=tuple(f"src/r{i}.py" for i in range(800)),
                             modified_files=tuple(f"src/m{i}.py" for i in range(300)))
    summary = ss.OfflineSummarizer(chars_per_token=3.0).summarize(request)  # the estimate: lists, not the measure
    users = section_entries(summary, "All user messages")
    assert [int(e[2:e.index("]")]) for e in users] == [4 * i + 1 for i in range(3_000)]
    files = section_entries(summary, "Files and code")
    assert [e.partition(": ")[0] for e in files] == ["Modified in src/", "Read in src/"]  # grouped by folder
    files = flat_lines(files)
    modified = next(e for e in files if e.startswith("Modified: "))
    assert modified == "Modified: " + ", ".join(f"src/m{i}.py" for i in range(300))
    # the last errors are what the work is stuck on: an error section keeps the latest only
    assert_counted(section_entries(summary, "Errors and fixes"), [4 * i + 4 for i in range(0, 3_000, 3)], "errors",
                   first=False)
    read = next(e for e in files if e.startswith("Read: "))
    assert read.startswith("Read: src/r0.py, src/r1.py") and read.endswith("src/r798.py, src/r799.py")
    shown = len(re.findall(r"src/r\d+\.py", read))
    assert f"… {800 - shown:,} more paths …" in read


def test_offline_merges_and_updates_add_their_notes_up() -> None:
    """Partial summaries with notes merge into one list with one note whose count and range are
    exact; an anchored update of a summary with a note does the same."""
    summarizer = ss.OfflineSummarizer()
    messages, versions = conversation(3_000)
    partials = [summarizer.summarize(SummaryRequest(messages=messages[i:i + 1_500], versions=versions[i:i + 1_500],
                                                    max_tokens=800))
                for i in range(0, 9_000, 1_500)]
    merged = summarizer.summarize(SummaryRequest(purpose="merge", partials=tuple(partials), max_tokens=1_500))
    assert_counted(section_entries(merged, "All user messages"), [4 * i + 1 for i in range(3_000)], "user messages")
    later, later_versions = conversation(3_100)
    update = summarizer.summarize(SummaryRequest(messages=later[9_000:], versions=later_versions[9_000:],
                                                 previous_summary=merged, max_tokens=1_500))
    assert_counted(section_entries(update, "All user messages"), [4 * i + 1 for i in range(3_100)], "user messages")


# ----------------------------------------------------------------------------- Anthropic, hierarchically


def summary_of_about(request: RecordedRequest) -> str:
    """What a model honouring `max_tokens` answers: the sections, filled to ~80% of the cap."""
    chars = int(request.body["max_tokens"] * 4 * 0.8)
    body = ("Fact. " * (chars // (6 * len(SECTIONS)) + 1))
    return "\n\n".join(f"## {title}\n{body}" for title in SECTIONS)


@pytest.mark.parametrize("strategy", ["single", "parallel-stitch", "sequential-rolling"])
def test_anthropic_summaries_are_reduced_until_one_fits(strategy: str) -> None:
    """A history ~20 times the summariser's window: slices, then merges of partial summaries,
    level after level, every request within the window (the server refuses any that is not),
    driven on an event loop through AsyncAnthropic; the summary ends within its budget."""
    context = 6_000
    policy = CompactionPolicy.for_window(16_000, strategy=strategy, summarizer_context_tokens=context,
                                         summary_max_tokens=600)
    view = agent_view(turns=100, seed=7)
    counter = HeuristicCounter()  # the server's own estimate: chars/4

    async def plan() -> ss.CompactionPlan:
        async_client = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        summarizer = AnthropicSummarizer(anthropic.Anthropic(base_url=server.url, api_key="k"),
                                         async_client=async_client, max_retries=0)
        try:
            return await adrive(compaction_steps(view, policy=policy, counter=counter, summarizer_name=summarizer.name,
                                                 trigger="auto"), summarizer)
        finally:
            await async_client.close()

    with AnthropicServer(context_window=context, default=summary_of_about) as server:
        result = asyncio.run(plan())
        requests = server.message_requests
    assert all(r.status == 200 for r in requests), [r.status for r in requests if r.status != 200]
    assert all(server.estimate(r.body) + r.body["max_tokens"] <= context for r in requests)
    merges = [r for r in requests if "<partial-summary" in r.body["messages"][0]["content"]]
    compaction = result.events[-1]
    assert compaction.kind == "compaction" and counter.count(compaction.payload["summary"]) <= 600
    assert policy.window_tokens(result.view_after) <= policy.threshold
    if strategy == "sequential-rolling":
        assert not merges and len(requests) > 10  # each slice updates the running summary
    else:
        assert compaction.payload["details"]["merge_levels"] >= 2 and len(requests) - len(merges) > 10
        assert all(r.body["messages"][0]["content"].count("<partial-summary") >= 2 for r in merges)


def test_a_path_line_fitted_again_holds_one_count() -> None:
    """Issue 29: "… 9 more paths …, … 1 more paths …" — a line fitted twice kept the first count
    among its listed paths and added another. Counts merge: the new one adds the old one in."""
    line = "Modified: " + ", ".join(f"lib/app/part_{i}.ex" for i in range(40))
    once = fit_items(line, 300, "paths")
    twice = fit_items(once, 200, "paths")
    for fitted in (once, twice):
        counts = [int(n.replace(",", "")) for n in re.findall(r"… ([\d,]+) more paths …", fitted)]
        listed = re.findall(r"lib/app/part_\d+\.ex", fitted)
        assert len(counts) == 1 and counts[0] + len(listed) == 40 and len(fitted) <= 300
    assert twice.startswith("Modified: lib/app/part_0.ex, ") and twice.endswith(", lib/app/part_39.ex")
    # a line that already holds two counts (from before this fix) gets one, even when it fits
    assert fit_items("Modified: a.ex, … 9 more paths …, … 1 more paths …, b.ex", 500, "paths") == \
        "Modified: a.ex, … 10 more paths …, b.ex"


def test_a_small_summary_keeps_the_error_its_current_work_and_no_empty_note() -> None:
    """Issue 29 (OpenHands): held to a few hundred characters, a summary gives way in order —
    the tools used (a note of them would name no version: given up whole), the current work's
    later lines — and keeps the error (only the summary says what failed once its result has
    left the view), the current work's first line and the user's words; the room the reduction
    left is given back; a section it emptied is not written back as "(none)"."""
    sections = {"Key technical concepts": "- Languages: Python\n- Tools used: execute_bash ×3, str_replace_editor ×3",
                "Errors and fixes": "- [v24] `execute_bash` failed: /usr/bin/python: No module named pytest",
                "All user messages": "- [v2] Fix slugify/core.py so accents are transliterated, and add a test.",
                "Current work": "pytest is missing in the sandbox; installing it.\nLast tool calls: "
                                + ", ".join(f"str_replace_editor(/workspace/slugify/core_{i}.py)" for i in range(4))}
    whole = format_sections(sections)
    fitted = fit_summary_text(whole, 330)
    kept = parse_sections(fitted)
    assert len(fitted) <= 330 and "left out …]" in kept["Current work"]
    assert kept["Errors and fixes"] == sections["Errors and fixes"]
    assert kept["All user messages"] == sections["All user messages"]
    assert kept["Current work"].startswith("pytest is missing in the sandbox; installing it.")
    assert "Key technical concepts" not in kept and "entries left out" not in fitted
    assert "(none)" not in fit_summary_text(fitted, 10_000)  # fits whole: still no heading for what it left out
    assert fit_summary_text(whole, 10_000).count("(none)") == len(SECTIONS) - len(sections)


def test_a_small_summary_keeps_its_last_error_whole_beside_the_paths_modified() -> None:
    """Issue 29 (OpenHands, the second and third compactions, once its str_replace_editor edits
    were listed as modified): in 576 characters, the errors' floor (a tenth of the room) held
    less than their one entry, which became a note while the tools used kept their floor. An
    errors floor holds the most recent error whole; what is reduced before it gives way."""
    error = ("[v24] `execute_bash` failed: /usr/bin/python: No module named pytest → then: pytest is missing "
             "in the sandbox; installing it.")
    sections = {"Primary request and intent": "slugify('Crème Brûlée!') returns 'crme-brle' …",
                "Key technical concepts": "- Languages: Python\n- Tools used: execute_bash ×1",
                "Files and code": "- Modified: /workspace/slugify/slugify/core.py (edited: text = "
                                  'unicodedata.normalize("NFKD",text))',
                "Errors and fixes": f"- {error}",
                "All user messages": "- [v2] slugify('Crème Brûlée!') returns 'crme-brle' but it should return "
                                     "'creme-brulee'. Fix slugify/core.py so accents are transliterated, and add "
                                     "a test.",
                "Current work": "Adding the regression test.\nLast tool calls: execute_bash(cd /workspace/slugify "
                                "&& pip install -q pytest && python -m pytest -q)"}
    fitted = fit_summary_text(format_sections(sections), 576)
    kept = parse_sections(fitted)
    assert len(fitted) <= 576 and bullets(kept["Errors and fixes"]) == [error]
    assert "/workspace/slugify/slugify/core.py" in kept["Files and code"]
    # with earlier errors, the most recent one stays whole beside the note for the others
    older = "\n".join(f"- [v{n}] `execute_bash` failed: exit {n}" for n in range(10, 16))
    fitted = fit_summary_text(format_sections({**sections, "Errors and fixes": f"{older}\n- {error}"}), 576)
    assert bullets(parse_sections(fitted)["Errors and fixes"])[-1] == error and len(fitted) <= 576


def test_a_note_of_user_messages_gives_way_to_them_when_a_summary_has_room() -> None:
    """Issue 17 (Codex): a summary beside a long system prompt noted the user's two requests;
    the next compaction reads them again at the versions the note names and lists them."""
    summary = ("## Files and code\n- Modified: viewer/format.ts\n\n## All user messages\n"
               "- [… 2 user messages left out, versions 9–53; recall read v9..53 …]\n- [v60] and now?")
    assert noted_users(summary, 100) == [(9, 53)]
    assert noted_users(summary, 20) == []  # a list of 20 tokens could not hold them: not read
    typed = [(9, "Which errors does errors.py define?"), (53, "What does run-tests.sh do?")]
    listed = bullets(parse_sections(with_noted_users(summary, typed))["All user messages"])
    assert listed == ["[v9] Which errors does errors.py define?", "[v53] What does run-tests.sh do?", "[v60] and now?"]
    assert with_noted_users(summary, [(70, "later")]) == format_sections(parse_sections(summary))


def test_the_paths_modified_are_the_requests_whatever_the_summariser_kept() -> None:
    """Issue 29 (OpenCode): a summariser held to its share of the budget counted the paths
    modified away ("… 3 more paths …"); the summary gets them back, relative to the project's
    root, with what changed, and keeps the summariser's own notes on files after them."""
    request = SummaryRequest(modified_files=("/home/dev/invoicer/invoicer/totals.py", "/home/dev/invoicer/tests/t.py"),
                             read_files=("/home/dev/invoicer/README.md",),
                             changes={"/home/dev/invoicer/tests/t.py": "created"})
    files = "- Modified: … 2 more paths …\n- Read: README.md\n- totals.py computes in Decimal now"
    assert bullets(with_paths_modified(files, request)) == [
        "Root: /home/dev/invoicer/", "Modified: invoicer/totals.py, tests/t.py (created)", "Read: README.md",
        "totals.py computes in Decimal now"]
    assert with_paths_modified(files, SummaryRequest()) == files
