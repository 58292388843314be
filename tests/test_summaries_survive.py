"""What a summary keeps (issue 17, items 2–4): other agents' summaries understood and updated
section by section, never cut blind; the user's typed words never lost, after any number of
compactions (ours, imported, mixed; offline or model summariser); an offline summary a model
can continue from. Real transcripts (the shipped recordings; the shared corpus as extra cases),
generated sessions under hypothesis, SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator

import anthropic
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sessionstore as ss
from sessionstore import AnthropicSummarizer, CompactionPolicy, SessionStore, SummaryRequest
from sessionstore.compaction.files import modified_paths
from sessionstore.importers import parse_file
from sessionstore.quality import Probe, recall
from sessionstore.summarizers import SECTIONS, parse_sections
from sessionstore.summarizers.bounded import bullets
from sessionstore.summarizers.fit import fit_summary_text
from sessionstore.summarizers.paths import flat_lines, path_lines
from sessionstore.summarizers.typed import typed_messages, typed_text
from sessionstore.testing import AnthropicServer

from .conftest import FIXTURE_TRANSCRIPTS, TRANSCRIPTS, cases, imported_store, shipped

NOTE = re.compile(r"\[… ([\d,]+) user messages left out, versions? (\d+)(?:–(\d+))? …\]")
WRAPPERS = ("<local-command-caveat>", "<command-name>", "<system-reminder>", "Caveat: The messages below")
BOILERPLATE = ("This session is being continued", "If you need specific details from before compaction",
               "Another language model started", "read the full transcript at",
               "ontinue the conversation from where", "The messages after this summary are")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def view_text(view: ss.ContextView) -> str:
    """Every text the model reads in the view, whitespace normalised."""
    def strings(value: object) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for key, inner in value.items():
                if key not in ("type", "id", "tool_use_id", "signature"):
                    yield from strings(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from strings(inner)
    return norm("\n".join(strings(view.to_anthropic())))


def lost_user_messages(store: SessionStore, sid: str) -> list[tuple[int, str]]:
    """The user's typed messages that are neither in the view verbatim nor counted by a note of
    the summary's user-message list whose versions span theirs."""
    view = store.context(sid)
    text = view_text(view)
    spans = [(int(m.group(2)), int(m.group(3) or m.group(2))) for m in NOTE.finditer(text)]
    typed = typed_messages((e.version, e.payload) for e in store.events(sid, kinds=["message"]))
    return [(v, t) for v, t in typed
            if norm(t) not in text and not any(low <= v <= high for low, high in spans)]


# ----------------------------------------------------------------------------- agents' summaries, parsed

AGENT_SUMMARIES = cases(
    [shipped("claude-code/recorded/*.jsonl"), shipped("claude-code/recorded-2.1.39/*.jsonl"),
     shipped("claude-code/recorded-2.0.29/5e55104e-*.jsonl"), shipped("pi/recorded/*.jsonl"),
     shipped("codex/recorded/*.jsonl")],
    ["claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
     "claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", "pi/before-compaction.jsonl"])


def agent_compactions(relative: str) -> list[str]:
    folder = FIXTURE_TRANSCRIPTS if (FIXTURE_TRANSCRIPTS / relative).exists() else TRANSCRIPTS
    return [e.payload["summary"] for e in parse_file(folder / relative).events if e.kind == "compaction"]


def facts(summary: str) -> list[str]:
    """The lines of an agent's summary that carry content (not its headings, rules or wrappers)."""
    lines = []
    for line in summary.splitlines():
        plain = norm(re.sub(r"^\s*(?:#+|\d+[.)]|[-*+])\s+", "", line)).strip("*").strip()
        if len(plain) < 12 or line.lstrip().startswith(("<", "```", "|", "#")) or plain.endswith(":") \
                or any(b in plain for b in BOILERPLATE) or plain.startswith(("Analysis", "Summary")):
            continue
        lines.append(plain)
    return lines


@pytest.mark.parametrize("relative", AGENT_SUMMARIES)
def test_agent_summaries_are_read_into_our_sections_and_nothing_is_dropped(relative: str) -> None:
    """Claude Code's nine numbered sections, Pi's Goal/Progress/Next Steps with its file tags,
    Codex's handoff and free text land in our sections; every line that carries content is
    still there (in the summary's part, not the analysis scratchpad), the wrappers are gone."""
    summaries = agent_compactions(relative)
    assert summaries
    for summary in summaries:
        sections = parse_sections(summary)
        ours = "\n".join(body for body in sections.values())
        assert set(sections) <= {"", *SECTIONS} and "" not in sections
        assert not any(b in ours for b in BOILERPLATE)
        body = summary.split("\nSummary:", 1)[-1] if "\nAnalysis:" in summary else summary
        missing = [f for f in facts(body) if f not in norm(re.sub(r"[*`]", "", ours)).replace("- ", "")
                   and norm(f.replace("*", "").replace("`", "")) not in norm(re.sub(r"[*`]", "", ours))]
        assert not missing, missing[:5]
        if "claude-code" in relative:  # its numbered sections map one to one
            assert {"Primary request and intent", "All user messages", "Pending tasks", "Current work"} <= set(sections)
            assert sections["Primary request and intent"] and "1. Primary" not in ours
        if relative.startswith("pi/"):
            assert sections["Primary request and intent"]  # "## Goal"
        if "<read-files>" in summary:
            assert any(e.startswith("Read: ") for e in bullets(sections["Files and code"]))


def test_pi_and_codex_headings_map_to_our_sections() -> None:
    pi = ("## Goal\nShip the parser.\n\n## Constraints & Preferences\n- no new dependencies\n\n## Progress\n"
          "### Done\n- [x] lexer\n### In Progress\n- [ ] grammar\n### Blocked\n- waiting on spec\n\n"
          "## Key Decisions\n- **PEG**: simpler than LALR\n\n## Next Steps\n1. write tests\n2. docs\n\n"
          "## Critical Context\n- tokens are UTF-8\n\n<read-files>\na.py\n</read-files>\n\n"
          "<modified-files>\nb.py\n</modified-files>")
    sections = parse_sections(pi)
    assert sections["Primary request and intent"].startswith("Ship the parser.")
    assert "no new dependencies" in sections["Primary request and intent"]
    assert "lexer" in sections["Problem solving"] and "PEG" in sections["Problem solving"]
    assert "grammar" in sections["Current work"]
    assert bullets(sections["Pending tasks"])[-2:] == ["write tests", "docs"]
    assert "waiting on spec" in sections["Pending tasks"]
    assert "UTF-8" in sections["Key technical concepts"]
    assert bullets(sections["Files and code"])[:2] == ["Modified: b.py", "Read: a.py"]
    codex = ("Another language model started to solve this problem and produced a summary of its thinking "
             "process. Use this to build on the work:\nThe parser is half done; the grammar is next.")
    assert parse_sections(codex) == {"Problem solving": "- The parser is half done; the grammar is next."}


def test_an_agent_summary_over_budget_is_reduced_by_section_never_cut_in_its_middle() -> None:
    """A real Claude Code summary held to a third of its size: the concepts, notes and file
    details give way first (the concepts whole: a note of them would name no version); the
    user's messages, pending tasks and current work stay whole."""
    summary = agent_compactions(shipped("claude-code/recorded-2.1.39/*.jsonl"))[0]
    whole = parse_sections(summary)
    padded = {**whole, "Key technical concepts": "\n".join(f"- concept {i} " + "x" * 60 for i in range(80)),
              "Problem solving": "\n".join(f"- note {i} " + "y" * 60 for i in range(80))}
    text = "\n\n".join(f"{i}. {title}:\n{body}" for i, (title, body) in enumerate(padded.items(), 1))
    fitted = fit_summary_text(text, len(text) // 3)
    assert len(fitted) <= len(text) // 3 and "characters truncated" not in fitted
    kept = parse_sections(fitted)
    for title in ("All user messages", "Pending tasks", "Current work", "Primary request and intent"):
        assert norm(kept[title]) == norm(whole[title]), title
    # Reduced first: down to a note that would name no version (nothing could recall what it left
    # out), which is given up rather than kept as a line that says nothing.
    assert "Key technical concepts" not in kept and "entries left out" not in fitted
    assert len(kept["Problem solving"]) > len(whole.get("Problem solving", ""))


# ----------------------------------------------------------------------------- real sessions, compacted again

AGENT_COMPACTED = cases([shipped("claude-code/recorded-2.1.39/*.jsonl"), shipped("claude-code/recorded/*.jsonl"),
                         shipped("pi/recorded/*.jsonl")],
                        ["claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"])


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def agent_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionStore]:
    paths = [(FIXTURE_TRANSCRIPTS if (FIXTURE_TRANSCRIPTS / r).exists() else TRANSCRIPTS) / r for r in AGENT_COMPACTED]
    with imported_store(request, tmp_path_factory, "survive", *paths) as store:
        yield store


@pytest.mark.parametrize("relative", AGENT_COMPACTED)
def test_sessions_holding_an_agent_compaction_compacted_three_more_times_keep_every_user_message(
        agent_store: SessionStore, relative: str) -> None:
    """The issue's reproduction: a session already holding the agent's own compaction, compacted
    again (under the issue's policy for the long spotter session; a small kept tail for the short
    recordings) and twice more after new turns: the user's original request and every other
    typed message are in the view verbatim, and every file changed before the agent compacted;
    no summary is cut in its middle, none says the primary request is "(none)" or takes an
    agent's wrapper for it."""
    parsed = parse_file((FIXTURE_TRANSCRIPTS if (FIXTURE_TRANSCRIPTS / relative).exists() else TRANSCRIPTS) / relative)
    fork = agent_store.fork(parsed.session_id)
    long = "spotter" in relative
    policy = CompactionPolicy(context_window=60_000, reserve_tokens=8_000, keep_recent_tokens=10_000 if long else 200,
                              min_summarized_tokens=2_000 if long else 1)
    first = next(t for _, t in typed_messages((e.version, e.payload) for e in agent_store.events(fork, kinds=["message"])))
    agents = max(e.version for e in agent_store.events(fork, kinds=["compaction"]))
    modified = modified_paths((e.payload for e in agent_store.events(fork, upto=agents, kinds=["tool_call"])), policy)
    assert modified  # each of these sessions changed files before the agent compacted
    for round_ in range(3):
        if round_ or not long:  # new turns, so that there is more than the agent's summary to compact
            for turn in range(3):
                agent_store.append(fork, [ss.user(f"Round {round_}.{turn}: now also handle\n  the empty case."),
                                          ss.assistant(f"Handled the empty case in round {round_}. " * 150)])
        result = agent_store.compact(fork, policy)
        recorded = result is not None and result.compaction is not None
        assert recorded or round_, "the reproduction: the agent's compaction compacted again"
        if recorded:  # later rounds may be settled by the levels (truncation) without a summary
            summary = result.compaction.payload["summary"]
            primary = parse_sections(summary)["Primary request and intent"]
            assert "characters truncated" not in summary and primary.strip() not in ("", "(none)")
            assert not primary.startswith(WRAPPERS)
        seen = view_text(agent_store.context(fork))
        assert norm(first) in seen
        assert lost_user_messages(agent_store, fork) == []
        # issue 36: the summary has the room the view leaves, and the user's words are reduced last:
        # at this window every request stays by its words (none only noted or shortened)
        typed = typed_messages((e.version, e.payload) for e in agent_store.events(fork, kinds=["message"]))
        assert [v for v, t in typed if norm(t)[:120] not in seen] == [], round_
        # The agent named the files its own way (relative paths, prose) or not at all: ours lists
        # every one (relative to the project's root, which it names), none counted out while there is room.
        shown = recall([Probe("modified_files", 0, path) for path in modified], agent_store.context(fork).to_anthropic())
        assert shown["modified_files"] == (len(modified), len(modified)), (round_, shown)


# ----------------------------------------------------------------------------- generated sessions

PROPERTY = settings(max_examples=20, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])
words = st.text(st.sampled_from("abcdefghij klmnop\n"), min_size=1, max_size=60).map(str.strip).filter(bool)


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, object]]:
    """Turns of a coding session: typed requests (some wrapped in an agent's reminders, some
    multi-line), injected non-typed messages, tool calls with results (some failing) and
    replies; an imported compaction that paraphrases the user; compactions in between."""
    steps: list[tuple[str, object]] = []
    for turn in range(draw(st.integers(3, 14))):
        kind = draw(st.sampled_from(["typed", "typed", "reminder", "wrapper", "work", "work", "compact", "import"]))
        text = f"req{turn}: {draw(words)}"
        steps.append((kind, text))
    return steps


def play(store: SessionStore, steps: list[tuple[str, object]], summarizer: object, policy: CompactionPolicy) -> str:
    sid = store.create_session()
    for n, (kind, text) in enumerate(steps):
        if kind == "typed":
            store.append(sid, [ss.user(str(text))])
        elif kind == "reminder":
            store.append(sid, [ss.user(f"<system-reminder>\nfile changed\n</system-reminder>\n{text}")])
        elif kind == "wrapper":
            store.append(sid, [ss.user("<local-command-caveat>Caveat: The messages below were generated by the "
                                       "user while running local commands.</local-command-caveat>"),
                               ss.user("<command-name>/model</command-name>")])
        elif kind == "work":
            call = f"c{n}"
            store.append(sid, [ss.assistant(f"Looking into it {n}. The cause is in m{n}.py because of a typo.",
                                            tool_calls=[ss.tool_call(call, "Edit", {"file_path": f"m{n}.py"})]),
                               ss.tool_result(call, "x" * 1_500, is_error=n % 3 == 0),
                               ss.assistant(f"Fixed m{n}.py. " * 40)])
        elif kind == "import":  # another agent's compaction that paraphrases the user's words
            head = store.version(sid)
            store.append(sid, [ss.events.compaction(
                "This session is being continued from a previous conversation.\n\nSummary:\n1. Primary Request "
                "and Intent:\n   The user wants fixes.\n\n6. All user messages:\n   - (asked for several fixes)\n",
                head + 1, trigger="auto", strategy="imported", summarizer="claude-code"),
                ss.user(f"after the import {n}: {text}"), ss.assistant(f"Working on it after {n}. " * 300)])
        else:
            store.compact(sid, policy, summarizer)  # type: ignore[arg-type]
    store.compact(sid, policy, summarizer)  # type: ignore[arg-type]
    return sid


@pytest.fixture
def anthropic_summarizer() -> Iterator[AnthropicSummarizer]:
    """A model summariser through the real SDK whose answers say nothing of the user's words."""
    with AnthropicServer() as server:
        yield AnthropicSummarizer(anthropic.Anthropic(base_url=server.url, api_key="k"), max_retries=0)


@pytest.mark.parametrize("which", ["offline", "anthropic"])
def test_no_user_message_is_ever_lost_in_generated_sessions(store: SessionStore, which: str,
                                                            request: pytest.FixtureRequest) -> None:
    summarizer = ss.OfflineSummarizer() if which == "offline" else request.getfixturevalue("anthropic_summarizer")
    policy = CompactionPolicy(context_window=8_000, reserve_tokens=1_000, keep_recent_tokens=300,
                              summary_max_tokens=700, min_summarized_tokens=1)

    @PROPERTY
    @given(steps=sessions())
    def check(steps: list[tuple[str, object]]) -> None:
        sid = play(store, steps, summarizer, policy)
        latest = store.context(sid).compaction
        # The agent's own view after its compaction is what it was; ours after it keeps every word.
        assume(latest is None or latest.payload["strategy"] != "imported")
        assert lost_user_messages(store, sid) == []
        for version, text in typed_messages((e.version, e.payload) for e in store.events(sid, kinds=["message"])):
            assert not text.startswith(WRAPPERS) and "Caveat" not in text

    check()


def test_typed_text_tells_the_users_words_from_what_agents_inject() -> None:
    assert typed_text("<system-reminder>x</system-reminder>\nfix it") == "fix it"
    for injected in ("<local-command-caveat>Caveat: The messages below…</local-command-caveat>",
                     "<command-name>/compact</command-name>", "[Request interrupted by user for tool use]",
                     "<environment_context><cwd>/x</cwd></environment_context>",
                     "This session is being continued from a previous conversation that ran out of context."):
        assert typed_text(injected) is None
    assert typed_text("# Context from my IDE setup:\n\n## Open tabs:\n- a.ts\n\n## My request for Codex:\nadd tests") \
        == "add tests"


# ----------------------------------------------------------------------------- the offline summary's content


def test_the_offline_summary_says_what_the_work_is_what_is_pending_and_what_comes_next() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "<local-command-caveat>Caveat: The messages below were "
                                      "generated by the user while running local commands.</local-command-caveat>"}]},
        {"role": "user", "content": [{"type": "text", "text": "Add retries to the HTTP client in net.py."}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Good."},
            {"type": "text", "text": "I'll use exponential backoff instead of a fixed delay because the server "
                                     "rate-limits bursts."},
            {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": [
                {"content": "add backoff", "status": "completed"}, {"content": "test retries", "status": "pending"}]}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pytest tests/test_net.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                                     {"type": "tool_result", "tool_use_id": "t2", "is_error": True,
                                      "content": "ImportError: cannot import name 'retry'"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "The import failed because retry lives in net/backoff.py, not net.py."},
            {"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "tests/test_net.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "ok"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Clean compile."},
                                          {"type": "tool_use", "id": "t4", "name": "Bash",
                                           "input": {"command": "pytest -q"}}]},
    ]
    counter = iter(range(1, 100))
    versions = [[next(counter) for _ in m["content"]] for m in messages]
    summary = ss.OfflineSummarizer().summarize(SummaryRequest(messages=messages, versions=versions,
                                                              modified_files=("net.py", "tests/test_net.py")))
    sections = parse_sections(summary)
    assert sections["Primary request and intent"].startswith("Add retries to the HTTP client")
    assert sections["Pending tasks"] == "- [pending] test retries"
    assert "exponential backoff instead of a fixed delay" in sections["Problem solving"]
    assert not re.search(r"\] (Good|Clean compile)\.", sections["Problem solving"])
    error = bullets(sections["Errors and fixes"])[0]
    assert "ImportError" in error and "fix: Edit(tests/test_net.py)" in error and "net/backoff.py" in error
    assert "pytest -q" in sections["Current work"]  # the call still waiting for its result
    assert "Modified: net.py, tests/test_net.py" in sections["Files and code"]
    assert "Caveat" not in summary


def test_every_modified_path_is_kept_where_the_budget_allows() -> None:
    paths = tuple(f"src/pkg/module_{i}.py" for i in range(120))
    summary = ss.OfflineSummarizer().summarize(SummaryRequest(
        messages=[{"role": "user", "content": "refactor the package"}], modified_files=paths, max_tokens=2_000))
    (grouped,) = bullets(parse_sections(summary)["Files and code"])  # the folder named once
    assert grouped == "Modified in src/pkg/: " + ", ".join(f"module_{i}.py" for i in range(120))
    assert flat_lines([grouped]) == ["Modified: " + ", ".join(paths)]



ROOT = "/home/me/src/spotter-4te"
MODIFIED = (*(f"{ROOT}/lib/spotter/transcripts/part_{i}.ex" for i in range(11)), f"{ROOT}/config/config.exs",
            f"{ROOT}/mix.exs")


def modified_kept(summary: str) -> tuple[int, int]:
    """(paths of `MODIFIED` the summary names, all): whole, or relative to the root it names (`quality`)."""
    return recall([Probe("modified_files", 0, path) for path in MODIFIED], summary_view(summary))["modified_files"]


def summary_view(summary: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": summary}]}]}


def test_modified_files_are_written_relative_to_their_root_with_what_changed() -> None:
    """Issue 29: "Modified: /home/…/spotter-4te/mix.exs, /home/…/config/config.exs, … 9 more paths …,
    … 1 more paths …" in a summary with room to spare. The paths are now written relative to the
    directory they share, named once (a path outside it stays whole), each with what changed."""
    changes = {MODIFIED[0]: "created: defmodule Spotter.Transcripts.Part0 do", f"{ROOT}/mix.exs": "edited: defp deps do"}
    summary = ss.OfflineSummarizer().summarize(SummaryRequest(
        messages=[{"role": "user", "content": "Add annotations to transcripts."}], modified_files=MODIFIED,
        read_files=(f"{ROOT}/README.md", "/tmp/claude-1000/tasks/b0a.output"), changes=changes, max_tokens=2_000))
    files = bullets(parse_sections(summary)["Files and code"])
    assert files[0] == f"Root: {ROOT}/"
    assert files[1] == "Modified: config/config.exs, mix.exs (edited: defp deps do)"
    assert files[2] == ("Modified in lib/spotter/transcripts/: part_0.ex (created: defmodule Spotter.Transcripts.Part0 "
                        "do), " + ", ".join(f"part_{i}.ex" for i in range(1, 11)))  # grouped by folder
    assert files[3] == "Read: README.md, /tmp/claude-1000/tasks/b0a.output"
    assert modified_kept(summary) == (13, 13)


def test_the_users_messages_are_reduced_last() -> None:
    """Held to smaller and smaller budgets, a summary gives up its notes on files, the paths read,
    its other sections, the change notes of the paths modified and the paths themselves before
    any of the user's messages; only when those alone are over the budget are the oldest
    shortened, each naming the version that keeps it whole (the latest stays whole), and only
    past that does a note (naming their versions) stand for some."""
    users = [(4 * i + 1, f"Request {i}: handle the empty case in part_{i}.ex and keep every old test passing, "
                         f"then tell me which tests changed and why {i} of them still fail on CI")
             for i in range(40)]
    messages = [{"role": "user", "content": text} for _, text in users]
    versions = [[version] for version, _ in users]
    changes = {path: f"edited: def handle_{i}(input)" for i, path in enumerate(MODIFIED)}
    summarizer = ss.OfflineSummarizer(chars_per_token=3.0)  # budgets set for its estimate
    whole = sum(len(f"- [v{v}] {text}\n") for v, text in users)
    for max_tokens in (3_000, 2_200, 1_500, 600, 200):
        summary = summarizer.summarize(SummaryRequest(
            messages=messages, versions=versions, modified_files=MODIFIED, changes=changes, max_tokens=max_tokens,
            read_files=tuple(f"{ROOT}/test/part_{i}_test.exs" for i in range(30))))
        chars = max_tokens * summarizer.chars_per_token
        assert len(summary) <= chars
        entries = bullets(parse_sections(summary)["All user messages"])
        assert entries[-1] == f"[v{users[-1][0]}] {users[-1][1]}"  # the latest, whole
        listed = {int(m.group(1)): e for e in entries if (m := re.match(r"\[v(\d+)\] ", e))}
        noted = [range(int(m.group(1)), int(m.group(2)) + 1) for e in entries
                 if (m := re.search(r"versions? (\d+)(?:–(\d+))?", e)) and e.startswith("[… ")]
        for version, text in users:  # each one whole, shortened to its head naming its version, or noted
            entry = listed.get(version)
            if entry is None:
                assert any(version in r for r in noted), (max_tokens, version)
            else:
                head = entry[len(f"[v{version}] "):entry.find(" [… ")]
                assert entry == f"[v{version}] {text}" or (
                    entry.endswith(f" [… recall read v{version}]") and text.startswith(head)), entry
        if whole < chars * 0.9:  # the user's messages fit: all whole, whatever else gave way
            assert len(listed) == len(users) and all(e == f"[v{v}] {t}" for v, t in users if (e := listed[v]))
        if max_tokens == 3_000:
            assert modified_kept(summary) == (13, 13)
        if max_tokens == 1_500:  # over the budget alone: the oldest shortened, none left out
            assert not noted and any(e.endswith(" [… recall read v1]") for e in entries)
            assert "Errors and fixes" not in summary and "Read: " not in summary
        if max_tokens == 200:
            assert noted


WINDOWS_ROOT = "c:\\Users\\dev\\projects\\invoicer"
WINDOWS_MODIFIED = tuple(f"{WINDOWS_ROOT}\\{folder}\\file_{i}.py" for i in range(35)
                         for folder in ("src\\totals", "tests", ".gemini")[i % 3:i % 3 + 1])


def test_a_crowded_summary_keeps_every_user_request() -> None:
    """The issue's second compaction: 23 requests and 35 absolute Windows paths, each with a
    long change note, in a summary that cannot hold them all. Every request stays whole (the
    paths and notes give way first); the paths are written relative to the session's project
    directory, named once with forward slashes, each note cut short."""
    users = [f"Request {i}: in the invoicer, make the totals of part {i} round half-even, keep the CSV export "
             f"byte-identical, and tell me which of the {i + 3} old tests you had to change and why."
             for i in range(23)]
    changes = {path: "created: # " + "a long heading that the agent wrote at the top of the file " * 3
               for path in WINDOWS_MODIFIED}
    summarizer = ss.OfflineSummarizer(chars_per_token=3.0)  # budgets set for its estimate
    budget = 1_800
    summary = summarizer.summarize(SummaryRequest(
        messages=[{"role": "user", "content": text} for text in users], versions=[[4 * i + 1] for i in range(23)],
        modified_files=WINDOWS_MODIFIED, changes=changes, max_tokens=budget, project=WINDOWS_ROOT.upper()))
    assert len(summary) <= budget * summarizer.chars_per_token
    listed = bullets(parse_sections(summary)["All user messages"])
    assert listed == [f"[v{4 * i + 1}] {text}" for i, text in enumerate(users)]
    files = bullets(parse_sections(summary)["Files and code"])
    assert files[0] == "Root: C:/USERS/DEV/PROJECTS/INVOICER/"
    assert files[1].startswith("Modified in src/totals/: file_0.py") and "\\" not in files[1] and "c:" not in files[1]
    assert all(len(note) <= 61 for note in re.findall(r"\(created: ([^)]*)\)", files[1]))
    # the same summary without the room for the user's words: the oldest are shortened, each naming
    # the version that keeps it whole, and none is counted away while shortening is enough
    small = summarizer.summarize(SummaryRequest(
        messages=[{"role": "user", "content": text} for text in users], versions=[[4 * i + 1] for i in range(23)],
        modified_files=WINDOWS_MODIFIED, changes=changes, max_tokens=1_300, project=WINDOWS_ROOT))
    entries = bullets(parse_sections(small)["All user messages"])
    assert len(entries) == 23 and entries[-1] == f"[v89] {users[-1]}"
    assert entries[0].endswith("[… recall read v1]") and norm(users[0])[:120] in norm(entries[0])
    assert "Files and code" not in parse_sections(small)


def test_paths_relative_to_the_project_directory() -> None:
    """The root is the session's working directory when the paths lie under it (a Windows one
    compared case-insensitively, written with forward slashes); a path outside stays whole."""
    lines = path_lines(
        ["c:\\Users\\dev\\app\\src\\a.py", "C:\\USERS\\dev\\app\\README.md", "d:\\tmp\\out.txt"],
        ["/tmp/x.log"], project="C:\\Users\\dev\\app")
    assert lines == ["Root: C:/Users/dev/app/", "Modified: src/a.py, README.md, d:\\tmp\\out.txt",
                     "Read: /tmp/x.log"]
    lines = path_lines(["/srv/app/lib/a.ex", "/srv/app/mix.exs"], project="/srv/app/")
    assert lines == ["Root: /srv/app/", "Modified: lib/a.ex, mix.exs"]
    # a working directory none of the paths lie under is no root: the shared one is found instead
    lines = path_lines([f"{ROOT}/lib/a.ex", f"{ROOT}/mix.exs"], project="/elsewhere")
    assert lines == [f"Root: {ROOT}/", "Modified: lib/a.ex, mix.exs"]


def test_paths_are_grouped_by_folder_windows_paths_too() -> None:
    """Issue 36: 35 paths of a Windows project, each with its folder said again, are written
    folder by folder — a folder holding several named once, one short note a path at most — and
    read back whole for the fit; a folder whose name costs less than its line stays flat."""
    project = "c:\\Users\\dev\\projects\\app"
    modified = [f"{project}\\.gemini\\commands\\cmd_{i}.toml" for i in range(30)] + [
        f"{project}\\README.md", f"{project}\\docs\\a.md", f"{project}\\docs\\b.md"]
    changes = {modified[0]: "created: # " + "a long heading " * 10}
    lines = path_lines(modified, [f"{project}\\src\\main.py"], changes, project=project.upper())
    assert lines[0] == "Root: C:/USERS/DEV/PROJECTS/APP/"
    assert lines[1] == "Modified: README.md, docs/a.md, docs/b.md"  # "docs/" saves less than a line costs
    assert lines[2].startswith("Modified in .gemini/commands/: cmd_0.toml (created: # a long heading")
    assert lines[2].endswith(", cmd_28.toml, cmd_29.toml") and "\\" not in lines[2]
    assert all(len(note) <= 61 for note in re.findall(r"\(created: ([^)]*)\)", lines[2]))
    assert lines[3] == "Read: src/main.py"
    assert flat_lines(lines)[1] == "Modified: README.md, docs/a.md, docs/b.md, " + ", ".join(
        f".gemini/commands/cmd_{i}.toml" + (" (" + lines[2].split(" (", 1)[1].split(")")[0] + ")" if i == 0 else "")
        for i in range(30))
    # what the quality probe finds of them: every path, by its folder's line
    view = summary_view("## Files and code\n" + "\n".join(f"- {line}" for line in lines))
    assert recall([Probe("modified_files", 0, p) for p in modified], view)["modified_files"] == (33, 33)
