"""What a newcomer reads (issue 32): every table and long line of the CLI fits 80, 100 and 120
columns on real transcripts without losing a digit, each session id at its shortest form, text
from the data printed as text, and errors that name what failed."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.cells import cell_len

import sessionstore as ss
from sessionstore.cli import main
from sessionstore.display import short_ids

from .conftest import FIXTURE_TRANSCRIPTS, SHARED, TRANSCRIPTS

WIDTHS = (80, 100, 120)
# Real transcripts: with the shared corpus, Claude Code sessions with subagents (ids 45 characters
# and more) and Codex rollouts; else the shipped fixtures.
FOLDERS = ([TRANSCRIPTS / "claude-code" / "spotter", TRANSCRIPTS / "codex"] if SHARED
           else [FIXTURE_TRANSCRIPTS / "claude-code", FIXTURE_TRANSCRIPTS / "codex"])
# Claude Code's Read output, as recorded: numbered lines, `1\t…`.
RECORDED = FIXTURE_TRANSCRIPTS / "claude-code" / "recorded"
SMALL = (TRANSCRIPTS / "claude-code" / "claude-code-log" / "-Users-dain-workspace-claude-code-log-sample"
         / "b45ad5d8-81fb-4bcb-baba-19d9f503d731.jsonl") if SHARED else \
    FIXTURE_TRANSCRIPTS / "claude-code" / "agentcmd" / "06381696-0074-49f8-863e-6ad4fac507f9.jsonl"


def cli(url: str, *args: str, width: int | None = None, code: int = 0, color: bool = False) -> Result:
    """`color`: escape sequences kept, as on a terminal (else click strips them from piped output)."""
    env = {"COLUMNS": str(width)} if width else {}
    result = CliRunner(env=env).invoke(main, ["--db", url, *args], catch_exceptions=False, color=color)
    assert result.exit_code == code, (args, result.output)
    return result


def fits(text: str, width: int) -> None:
    """Every line of `text` within `width` columns as a terminal shows it (a tab to its next stop)."""
    wide = [line for line in text.splitlines() if cell_len(line.expandtabs()) > width]
    assert not wide, f"{len(wide)} line(s) over {width} columns, e.g. {wide[0]!r}"


def whole(figure: int | str, text: str) -> bool:
    """Whether `figure` (formatted with thousands separators) stands whole in `text`."""
    shown = f"{figure:,}" if isinstance(figure, int) else figure
    return re.search(rf"(?<![\d,.]){re.escape(shown)}(?![\d,])", text) is not None


def rows(table: str) -> Iterator[list[str]]:
    """The cells of a boxed table's lines (continuation lines included)."""
    for line in table.splitlines():
        if line.startswith("│"):
            yield [cell.strip() for cell in line.strip("│").split("│")]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[int, str]]:
    """A database of real transcripts, imported at 80 columns then (again, in part) at 100 and 120:
    the import tables, by width."""
    url = f"sqlite:///{tmp_path_factory.mktemp('fits') / 'fits.db'}"
    tables = {80: cli(url, "import", *map(str, FOLDERS), width=80).stdout}
    for width in WIDTHS[1:]:
        tables[width] = cli(url, "import", str(FOLDERS[-1]), width=width).stdout
    return url, tables


def test_the_import_table_fits_and_shows_every_figure(imported: tuple[str, dict[int, str]]) -> None:
    url, tables = imported
    with ss.SessionStore(url) as store:
        infos = store.sessions()
    assert any(":agent-" in info.id for info in infos) or not SHARED  # subagents: the long ids
    for width, table in tables.items():
        fits(table, width)
    assert "…" in tables[80]  # file names are cut at 80 columns, with an ellipsis
    for info in infos:  # the first import added each session's every event: its figure, whole
        assert re.search(rf"│\s*{re.escape(f'{info.head:,}')}\s*│", tables[80]), (info.id, info.head)
    codex = [info.head for info in infos if (info.metadata.get("source") or info.metadata.get("format")) == "codex"]
    for width in WIDTHS[1:]:  # imported again: nothing added, every event present
        assert codex and all(whole(head, tables[width]) for head in codex)
        assert re.search(r"│\s+0 │", tables[width])


def test_a_narrow_import_table_keeps_the_figure_that_tells(tmp_path: Path) -> None:
    """At 80 columns the first import shows what each file added; a re-import (nothing added)
    shows what was present instead, and says the column left out was all 0."""
    url = f"sqlite:///{tmp_path / 'again.db'}"
    first, again = (cli(url, "import", str(RECORDED), width=80).stdout for _ in range(2))
    with ss.SessionStore(url) as store:
        heads = [info.head for info in store.sessions()]
    for table, shown, left_out in ((first, "added", "present (all 0)"), (again, "present", "added (all 0)")):
        fits(table, 80)
        header = next(line for line in table.splitlines() if line.startswith("┃"))
        assert f" {shown} " in header and left_out in table, table
        assert all(re.search(rf"│\s*{head:,}\s*│", table) for head in heads), table


def test_sessions_fits_with_each_id_at_its_shortest_form(imported: tuple[str, dict[int, str]]) -> None:
    url, _ = imported
    listed = {row["id"]: row for row in json.loads(cli(url, "sessions", "--json").stdout)}
    every = list(listed)
    # the ids of sessions, not subagents (the shipped recordings' ids share their first 28 characters)
    sessions = sorted({sid.partition(":")[0] for sid in every})
    for width in WIDTHS:
        table = cli(url, "sessions", width=width).stdout
        fits(table, width)
        shown = [cells[0] for cells in rows(table) if cells[1]]
        assert len(shown) == len(listed)
        expected = short_ids(every, every)
        assert sorted(shown) == sorted(expected.values())
        for sid, row in listed.items():
            assert whole(row["tokens"], table), (width, sid)  # no figure cut
            if ":" not in sid:  # a session with subagents does not lengthen the others
                assert expected[sid] == short_ids([sid], sessions)[sid]
            else:  # shorter than whole; <session prefix>:<name prefix> where 8 characters name the session
                head = sid.partition(":")[0]
                assert len(expected[sid]) < len(sid)
                assert len(expected[sid]) <= 17 or len(short_ids([head], sessions)[head]) > 8
    for sid, short in list(short_ids(every, every).items())[:12]:  # each shown form names its session
        assert cli(url, "stats", short).stdout.startswith(f"session {sid}\n")


def test_log_search_and_stats_fit(imported: tuple[str, dict[int, str]]) -> None:
    url, _ = imported
    with ss.SessionStore(url) as store:
        longest = max(store.sessions(), key=lambda info: info.head)
        stats = store.stats(longest.id)
    for width in WIDTHS:
        brief = cli(url, "log", longest.id, "--brief", width=width).stdout
        full = cli(url, "log", longest.id, "--upto", "400", width=width).stdout
        hits = cli(url, "search", "the", "--limit", "10", width=width).stdout
        figures = cli(url, "stats", longest.id, width=width).stdout
        for text in (brief, full, hits, figures):
            fits(text, width)
        assert len(brief.splitlines()) == len(cli(url, "log", longest.id, "--brief").stdout.splitlines())
        assert whole(stats.transcript_tokens, figures) and whole(stats.view_tokens, figures)
    piped = cli(url, "log", longest.id, "--brief").stdout  # no width given: lines are not cut
    assert max(len(line) for line in piped.splitlines()) > 120


def test_tool_output_with_tabs_fits(tmp_path: Path) -> None:
    """A tab is as wide as the terminal makes it: `log` and `show` expand them, so that the lines
    they wrap fit."""
    url = f"sqlite:///{tmp_path / 'tabs.db'}"
    cli(url, "import", str(RECORDED))
    with ss.SessionStore(url) as store:
        sid = next(info.id for info in store.sessions() if ":" not in info.id)
        read = [e for e in store.events(sid, kinds=["tool_result"]) if "\t" in str(e.payload["output"])]
    assert len(read) >= 3  # the fixture's Read results
    for width in WIDTHS:
        for args in (["log", sid], ["log", sid, "--brief"], ["log", sid, "--all"], ["search", "logging"]):
            printed = cli(url, *args, width=width).stdout
            fits(printed, width)
            assert "\t" not in printed, args
        assert "\t" not in cli(url, "show", sid, width=width).stdout
    full = cli(url, "log", sid, width=80).stdout
    assert re.search(r"^ {8}2 {7}$", full, re.MULTILINE)  # `2\t`: to the next stop, continuing under the head


def test_control_characters_from_the_data_are_drawn_not_sent(store_url: str) -> None:
    """An escape sequence, a NUL, a carriage return or a backspace from a transcript cannot move the
    cursor, colour or retitle the terminal, or split a line: each is drawn as its symbol."""
    nasty = "red \x1b[31mALERT\x1b[0m nul\x00 back\rspace\x08 csi\x9b2J bell\x07 end"
    store = ss.SessionStore(store_url)
    try:
        sid = store.create_session("ctl", metadata={"title": "title \x1b]0;pwned\x07", "model": "m\x1b[2J"})
        call = ss.tool_call("c1", "Run\x1b[1m", {"cmd": nasty})  # a NUL in the input: searched on PostgreSQL too
        store.append(sid, [ss.user("look: " + nasty), *ss.assistant("ok", tool_calls=[call]),
                           ss.tool_result("c1", "out:\r\n" + nasty)])
    finally:
        store.close()
    for args in (["log", "ctl"], ["log", "ctl", "--brief"], ["show", "ctl"], ["search", "nul"], ["sessions"]):
        for width in (None, 80):
            printed = cli(store_url, *args, width=width, color=True).stdout
            controls = sorted({char for char in printed if ord(char) < 0x20 and char != "\n" or 0x7f <= ord(char) < 0xa0})
            assert not controls, (args, width, controls, printed)
            assert "␛" in printed, (args, printed)
        assert "␛[31mALERT␛[0m" in cli(store_url, *args, width=200, color=True).stdout or args == ["sessions"]
    shown = cli(store_url, "log", "ctl").stdout
    assert "nul␀ back␍space␈ csi\ufffd2J bell␇ end" in shown and "out:\n" in shown  # a CRLF is a line end


def test_replay_fits_without_breaking_a_figure(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    cli(url, "import", str(SMALL))
    with ss.SessionStore(url) as store:
        [info] = store.sessions()
    grid = ["--window", "20000", "--window", "50000", "--strategy", "single", "--strategy", "parallel-stitch"]
    policies = [json.loads(line) for line in cli(url, "replay", info.id, *grid, "--json").stdout.splitlines()]
    assert len(policies) == 4
    for width in WIDTHS:
        table = cli(url, "replay", info.id, *grid, width=width).stdout
        fits(table, width)
        for policy in policies:
            assert whole(policy["input_tokens"], table) and whole(policy["billed_cached"], table), (width, policy)
        assert "parallel-stitch" in table  # the label wraps between words, not inside one
        assert ("left out" in " ".join(table.split())) == (width < 120)  # the note may wrap


# --------------------------------------------------------------------------- text as text, errors that name


def test_text_from_the_data_is_never_read_as_markup(store_url: str) -> None:
    store = ss.SessionStore(store_url)
    try:
        sid = store.create_session("markup-[bold]x", metadata={"title": "[bold]not bold[/bold] :m: openai:m:",
                                                               "model": "[red]m"})
        store.append(sid, [ss.user("look at [link=x]this[/link] and :smile: [/]"),
                           ss.assistant("done :thumbs_up:")])
    finally:
        store.close()
    listing = cli(store_url, "sessions", width=200).stdout
    assert "[bold]not bold[/bold] :m: openai:m:" in listing and "[red]m" in listing and "Ⓜ" not in listing
    for args, said in ((["log", "markup"], ":smile: [/]"), (["show", "markup"], ":smile: [/]"),
                       (["search", "smile"], ":[smile]: [/]")):  # (a hit's match between [ and ] when piped)
        text = cli(store_url, *args, width=200).stdout
        assert "[link=x]this[/link]" in text and said in text and "😄" not in text, (args, text)
    assert "session markup-[bold]x" in cli(store_url, "stats", "markup").stdout
    unknown = cli(store_url, "log", "[bold]nope", code=2)
    assert "no session '[bold]nope'" in unknown.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_summariser_that_refuses_is_named_at_once(tmp_path: Path) -> None:
    """A model server that is not running: one line naming its URL and the model (`m`, as typed),
    from the knock before any request (not the SDK's "Connection error." after its retries)."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    cli(url, "import", str(SMALL))
    base = f"http://127.0.0.1:{_free_port()}/v1"
    for args in (["compact", "b45a" if SHARED else "0638", "--context-window", "40000"], ["replay", "b45a" if SHARED
                                                                                          else "0638"]):
        failed = CliRunner(env={"OPENAI_API_KEY": ""}).invoke(
            main, ["--db", url, *args, "--summarizer", "openai", "--model", "m", "--base-url", base])
        assert failed.exit_code == 2, failed.output
        line = failed.stderr.strip()
        assert len(line.splitlines()) == 1 and "Ⓜ" not in line
        assert f"openai model 'm' at {base}/ refuses connections" in line and "Nothing was sent" in line


def test_a_server_asked_for_its_model_is_named_in_one_clean_sentence(tmp_path: Path) -> None:
    """No --model: the server is asked for its only model; when it cannot be reached, the one line
    names the URL asked, the SDK's reason without its own full stop, and what to do."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    cli(url, "import", str(RECORDED))
    base = f"http://127.0.0.1:{_free_port()}/v1"
    failed = CliRunner(env={"OPENAI_API_KEY": ""}).invoke(
        main, ["--db", url, "compact", "5e55104e", "--summarizer", "openai", "--base-url", base])
    assert failed.exit_code == 2, failed.output
    assert failed.stderr == (f"error: no model named for the OpenAI-compatible server at {base}, and its model list "
                             f"(GET {base}/models) failed: Connection error; pass model= (--model)\n")


def test_a_model_error_names_the_model_and_the_server() -> None:
    from sessionstore.summarizers import SummaryRequest
    from sessionstore.testing.openai_server import OpenAIServer

    with OpenAIServer() as server:
        server.error(400, "invalid_request_error", "model: unknown model")
        summarizer = ss.OpenAISummarizer("m", base_url=server.url + "/v1", api_key="local", max_retries=0)
        with pytest.raises(ss.SummarizerError) as failed:
            summarizer.summarize(SummaryRequest(messages=[{"role": "user", "content": "hi"}]))
        assert f"openai model 'm' at {server.url}/v1/: the summary request was refused" in str(failed.value)


def test_an_unknown_command_suggests_the_nearest() -> None:
    for typed, meant in (("sesions", "sessions"), ("replya", "replay"), ("improt", "import")):
        result = CliRunner().invoke(main, [typed])
        assert result.exit_code == 2 and f"No such command '{typed}'" in result.stderr
        assert "Did you mean" in result.stderr and meant in result.stderr, result.stderr


def test_short_ids_are_the_shortest_that_name_each_session() -> None:
    parent = "258c7280-ae70-4798-800f-63464d01a85d"
    orphan = "741790a4-4fe2-4644-9a51-fb4482074060"
    every = [parent, f"{parent}:agent-a881341", f"{parent}:agent-acompact-fffbd0", "258c7281-0000",
             f"{orphan}:agent-9fa17969", f"{orphan}:agent-668b5ac2", "abc", "abcdefghij"]
    assert short_ids(every, every) == {
        parent: "258c7280", f"{parent}:agent-a881341": "258c7280:agent-a8",
        f"{parent}:agent-acompact-fffbd0": "258c7280:agent-ac", "258c7281-0000": "258c7281",
        f"{orphan}:agent-9fa17969": "741790a4:agent-9f", f"{orphan}:agent-668b5ac2": "741790a4:agent-66",
        "abc": "abc", "abcdefghij": "abcdefgh"}
