"""The first hour's edges (issue 37): a missing extra is one line naming the command that installs
it from a checkout (exit 2, no traceback); ids in the tables on one line at 80, 100 and 120 columns,
whole or at their shortest unique form; "started" is the session's own start, with the year where it
is not this year's; no "None" for a figure an agent did not record."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import sessionstore as ss
from sessionstore.cli import main
from sessionstore.summarizers.openai import OpenAISummarizer

from .conftest import FIXTURE_TRANSCRIPTS

WIDTHS = (80, 100, 120)
SWE = next((FIXTURE_TRANSCRIPTS / "swe-agent").rglob("*.traj"))
GEMINI_2026 = FIXTURE_TRANSCRIPTS / "gemini-cli" / "subagents" / "chats"


def cli(url: str, *args: str, width: int = 80, code: int = 0) -> Result:
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(main, ["--db", url, *args], catch_exceptions=False)
    assert result.exit_code == code, (args, result.output)
    return result


def one_line_error(result: Result, extra: str) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert f"pip install -e '.[{extra}]'" in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- a missing extra


def test_a_missing_extra_is_one_line_with_the_command_that_installs_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    with ss.SessionStore(url) as store:
        store.migrate()
        sid = store.create_session(events=[ss.user("Fix the parser."), ss.assistant("Done.")])
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed: importing it fails
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    for args in (["compact", sid, "--summarizer", "openai", "--base-url", "http://127.0.0.1:9/v1"],
                 ["compact", sid, "--summarizer", "openai-compact", "--dry-run"],
                 ["replay", sid, "--summarizer", "openai", "--base-url", "http://127.0.0.1:9/v1"]):
        assert "openai summariser" in one_line_error(cli(url, *args, code=2), "openai")
    assert "mcp` needs the MCP SDK" in one_line_error(cli(url, "mcp", code=2), "mcp")
    with pytest.raises(ss.MissingExtra) as caught:  # the Python API says the same, as an ImportError
        OpenAISummarizer("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert isinstance(caught.value, ImportError) and caught.value.extra == "openai"


@pytest.mark.parametrize(("module", "framework", "extra"), [
    ("openai_agents", "agents", "openai-agents"), ("adk", "google.adk", "adk"), ("langchain", "langchain_core", "langchain"),
    ("langgraph", "langgraph", "langgraph"), ("langchain_middleware", "langchain", "langgraph")])
def test_an_integration_without_its_framework_names_its_extra(module: str, framework: str, extra: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == framework or m.startswith(framework + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, framework, None)
    path = Path(ss.__file__).parent / "integrations" / f"{module}.py"
    # a fresh copy of the module (the real one may be imported already), in its package
    spec = importlib.util.spec_from_file_location(f"sessionstore.integrations._fresh_{module}", path)
    assert spec is not None and spec.loader is not None
    with pytest.raises(ss.MissingExtra) as caught:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert f"pip install -e '.[{extra}]'" in str(caught.value) and "\n" not in str(caught.value)


# --------------------------------------------------------------------------- ids, dates, figures


def _rows(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("│").split("│")] for line in table.splitlines()
            if line.startswith("│")]


def _column(table: str, header: str) -> list[str]:
    headers = [cell.strip() for cell in next(line for line in table.splitlines() if line.startswith("┃"))
               .strip("┃").split("┃")]
    return [row[headers.index(header)] for row in _rows(table)]


def test_ids_stay_on_one_line_and_started_is_the_sessions_own(tmp_path: Path) -> None:
    """Ids that share long prefixes (a benchmark's runs): each id one line, and each shown form names
    its session. A SWE-agent trajectory records no time: its start is the file's modification time,
    not the import's."""
    folder = tmp_path / "trajectories_demonstrations_ctf"
    folder.mkdir()
    long_ago = datetime(2019, 12, 24, 10, 30, tzinfo=timezone.utc)
    for name in ("trajectories_demonstrations_ctf_crypto_katy", "trajectories_demonstrations_ctf_crypto_kaspar"):
        run = json.loads(SWE.read_text())  # two instances: their tasks differ, so they are two runs
        run["history"][0]["content"] = f"{run['history'][0]['content']}\n(instance {name})"
        copy = folder / f"{name}.traj"
        copy.write_text(json.dumps(run))
        os.utime(copy, (long_ago.timestamp(), long_ago.timestamp()))
    url = f"sqlite:///{tmp_path / 'ids.db'}"
    with ss.SessionStore(url) as store:
        store.migrate()
        now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
        recent = store.create_session("trajectories_demonstrations_ctf_crypto_kaspar-today",
                                      {"started_at": now.isoformat()}, events=[ss.user("hello")])
        store.create_session("trajectories_demonstrations_ctf_crypto_katy-today",
                             {"started_at": now.isoformat()}, events=[ss.user("hello again")])
    for width in WIDTHS:
        imported = cli(url, "import", str(folder), width=width).stdout
        listed = cli(url, "sessions", width=width).stdout
        for table in (imported, listed):
            assert all(len(line) <= width for line in table.splitlines()), table
        sessions = _column(imported, "sessions")
        assert len(sessions) == 2 and all(sessions), imported  # one id a file, on its own line
        rows = _rows(listed)
        assert len(rows) == 4 and all(r[0] and r[1] for r in rows), listed  # no row continues on a second line
        ids = [r["id"] for r in json.loads(cli(url, "sessions", "--json").stdout)]
        for shown in [*sessions, *(r[0] for r in rows)]:  # each shown form names its session
            named = [i for i in ids if i.startswith(shown.rstrip("…"))]
            assert len(named) == 1, (shown, ids)
            assert cli(url, "stats", shown).stdout.startswith(f"session {named[0]}")
        started = {r[0]: r[1] for r in rows}
        old = [s for s in started.values() if "2019" in s]
        assert old == ["2019-12-24 10:30"] * 2, started  # the file's time, with its year at every width
        assert started[next(r[0] for r in rows if recent.startswith(r[0]) or r[0] == recent)] == (
            f"{now:%Y-%m-%d %H:%M}" if width >= 100 else f"{now:%m-%d %H:%M}")
    listing = json.loads(cli(url, "sessions", "--json").stdout)
    assert sorted(r["started_at"][:16] for r in listing)[:2] == ["2019-12-24T10:30"] * 2
    # newest first: this year's session above December of an earlier year
    assert cli(url, "sessions").stdout.index(recent[:8]) < cli(url, "sessions").stdout.index("2019-12-24")


def test_a_compaction_without_its_after_figure_says_none_of_none(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    cli(url, "import", str(GEMINI_2026))
    parent = json.loads(next(GEMINI_2026.glob("session-*.jsonl")).read_text().splitlines()[0])["sessionId"]
    shown = cli(url, "log", parent, "--kind", "compaction", width=300).stdout
    assert "None" not in shown and "(auto, gemini-cli; 9,987 tokens before)" in shown
    assert "from 68% to 3%" in shown
