"""What it cost: `store.usage` and `sessionstore usage` (issue 38, item 4).

On Claude Code files the figures are ccusage's, day by day, with the real ccusage (npm, offline)
run on the same files; Codex, Pi, Gemini CLI and OpenCode usage is checked against the files'
own reports, read here independently of the importers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import AsyncSessionStore, HeuristicCounter, InvalidUsageQuery, SessionStore
from sessionstore.accounting import UsageRecord, counted, rows
from sessionstore.cli import main
from sessionstore.errors import ConfigurationError
from sessionstore.importers import import_path
from sessionstore.pricing import PRICES_ENV, price_table, shipped
from sessionstore.projection.usage import Billed, billed
from sessionstore.testing import ccusage

from .conftest import FIXTURE_TRANSCRIPTS, SHARED, TRANSCRIPTS, table_counts

ROOT = Path(__file__).resolve().parents[1]
ZONE = "America/Los_Angeles"  # days there differ from UTC days on these files: the zone is honoured
TOKENS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


# --------------------------------------------------------------------------- Claude Code: ccusage's figures


@pytest.fixture(scope="module")
def claude_code(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionStore, list[Path]]]:
    """The Claude Code transcripts (shipped, and the shared corpus when present) imported into SQLite."""
    roots = [FIXTURE_TRANSCRIPTS / "claude-code", *([TRANSCRIPTS / "claude-code"] if SHARED else [])]
    folders = [folder for root in roots for folder in ccusage.project_folders(root)]
    store = SessionStore(f"sqlite:///{tmp_path_factory.mktemp('usage') / 'cc.db'}", token_counter=HeuristicCounter())
    store.migrate()
    report = import_path(store, *folders)
    assert report.issues == [] and report.files
    yield store, folders
    store.close()


def test_claude_code_days_equal_ccusage(claude_code: tuple[SessionStore, list[Path]], tmp_path: Path) -> None:
    store, folders = claude_code
    try:
        entry = ccusage.install(ROOT / ".cache" / "ccusage")  # scripts/bootstrap --test put it there
    except ccusage.CcusageUnavailable as exc:
        pytest.fail(f"the parity test needs the real ccusage: {exc}")
    theirs = ccusage.daily(entry, ccusage.lay_out(folders, tmp_path / "claude"), ZONE)
    ours = [row.to_dict() for row in store.usage(by="day", timezone=ZONE)]
    assert [row["day"] for row in ours] == [row["day"] for row in theirs]
    assert len(ours) >= (15 if SHARED else 3)
    for mine, other in zip(ours, theirs):
        assert {t: mine[t] for t in TOKENS} == {t: other[t] for t in TOKENS}, mine["day"]
        assert mine["cost_usd"] == pytest.approx(other["cost_usd"], rel=0.01), mine["day"]
    assert sum(row["cost_usd"] for row in ours) > (40 if SHARED else 0)
    projects = {row.key for row in store.usage(by="project")}  # the sessions' working folders
    assert None not in projects and ("/Users/dain/workspace/claude-code-log" in projects or not SHARED)


# --------------------------------------------------------------------------- the other agents: their own figures


def _codex(path: Path) -> Billed:
    """A rollout's own reports: its token_usage_record lines, else its token counts (a count that
    repeats the previous total reports nothing new)."""
    objs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    records = [o["payload"]["usage"] for o in objs if o.get("type") == "token_usage_record"]
    if not records:
        previous = None
        for o in objs:
            info = o.get("payload", {}).get("info") if o.get("type") == "event_msg" else None
            if o.get("payload", {}).get("type") == "token_count" and isinstance(info, dict):
                if info["total_token_usage"] != previous:
                    records.append(info["last_token_usage"])
                previous = info["total_token_usage"]
    return _add(Billed(u["input_tokens"] - u.get("cached_input_tokens", 0), u["output_tokens"], 0,
                       u.get("cached_input_tokens", 0)) for u in records)


def _pi(path: Path) -> Billed:
    usages = [o["message"]["usage"] for o in map(json.loads, path.read_text().splitlines())
              if o.get("type") == "message" and o["message"].get("role") == "assistant" and "usage" in o["message"]]
    return _add(Billed(u["input"], u["output"], u["cacheWrite"], u["cacheRead"]) for u in usages)


def _gemini(path: Path) -> Billed:
    """The last tokens written for each Gemini reply (a reply is rewritten as it goes; one taken
    back by a rewind was still paid for)."""
    if path.suffix == ".json":
        records = json.loads(path.read_text())["messages"]
    else:
        records = [o for o in map(json.loads, path.read_text().splitlines()) if "id" in o]
    tokens = {r["id"]: r["tokens"] for r in records if r.get("type") == "gemini" and r.get("tokens")}
    return _add(Billed(t["input"] - t["cached"] + t["tool"], t["output"] + t["thoughts"], 0, t["cached"])
                for t in tokens.values())


def _opencode(path: Path) -> Billed:
    """Each step's tokens (a message is as many requests as it has steps)."""
    if path.is_file():
        parts = [p for m in json.loads(path.read_text())["messages"] for p in m["parts"]]
    else:
        parts = [json.loads(p.read_text()) for p in sorted((path / "part").rglob("*.json"))]
    steps = [p["tokens"] for p in parts if p.get("type") == "step-finish"]
    return _add(Billed(t["input"], t["output"] + t["reasoning"], t["cache"]["write"], t["cache"]["read"])
                for t in steps)


def _copilot(path: Path) -> Billed:
    """Each of Copilot's usage records (one a model request): input includes the cache."""
    records = [o["data"]["usage"] for o in map(json.loads, (path / "events.jsonl").read_text().splitlines())
               if o.get("type") == "session.usage_record"]
    return _add(Billed(u["inputTokens"] - u["cacheReadTokens"] - u["cacheWriteTokens"], u["outputTokens"],
                       u["cacheWriteTokens"], u["cacheReadTokens"]) for u in records)


def _qwen(path: Path) -> Billed:
    """Each Qwen Code reply's usageMetadata (Gemini's spelling: the prompt includes the cache)."""
    records = [o["usageMetadata"] for o in map(json.loads, path.read_text().splitlines()) if "usageMetadata" in o]
    return _add(Billed(u["promptTokenCount"] - u["cachedContentTokenCount"],
                       u["candidatesTokenCount"] + u["thoughtsTokenCount"], 0, u["cachedContentTokenCount"])
                for u in records)


def _add(items: Any) -> Billed:
    return Billed(*(sum(column) for column in zip(*items, Billed(0, 0, 0, 0))))


AGENTS = [("codex", _codex, FIXTURE_TRANSCRIPTS / "codex" / "recorded"),
          ("pi", _pi, FIXTURE_TRANSCRIPTS / "pi" / "recorded"),
          ("gemini-cli", _gemini, FIXTURE_TRANSCRIPTS / "gemini-cli" / "chats"),
          ("opencode", _opencode, FIXTURE_TRANSCRIPTS / "opencode" / "export-ses_6a1f58d7affeHs2Lq0PzN4cYbV.json"),
          ("opencode", _opencode, FIXTURE_TRANSCRIPTS / "opencode" / "storage"),
          ("copilot-cli", _copilot, FIXTURE_TRANSCRIPTS / "copilot-cli" / "recorded" /
           "5e551075-c0b1-4c71-9a7e-2026c0de0001"),
          ("qwen-code", _qwen, FIXTURE_TRANSCRIPTS / "qwen-code" / "recorded" / "chats")]


def _sources(folder: Path, suffixes: tuple[str, ...] = (".jsonl", ".json")) -> list[Path]:
    return [folder] if not folder.is_dir() or folder.name == "storage" or (folder / "events.jsonl").exists() else sorted(
        p for p in folder.iterdir() if p.suffix in suffixes)


def _check_agent(store: SessionStore, oracle: Any, source: Path) -> None:
    report = import_path(store, source)
    assert report.issues == [] and report.files, source
    sessions = [s.session_id for f in report.files for s in f.sessions]
    rows = store.usage(by="session", session_ids=sessions)
    got = Billed(*(sum(getattr(r, t) for r in rows) for t in TOKENS))
    assert got == oracle(source) and any(got), source


@pytest.mark.parametrize("agent,oracle,folder", AGENTS, ids=[f"{a[0]}-{a[2].name[:12]}" for a in AGENTS])
def test_other_agents_count_as_their_files_say(store: SessionStore, agent: str, oracle: Any, folder: Path) -> None:
    for source in _sources(folder):
        _check_agent(store, oracle, source)


@pytest.mark.parametrize("agent,oracle", [("codex", _codex), ("pi", _pi)])
def test_shared_codex_and_pi_count_as_their_files_say(tmp_path: Path, agent: str, oracle: Any) -> None:
    """The shared corpus's Codex and Pi files when it is there, else the shipped recordings (never a skip)."""
    store = SessionStore(f"sqlite:///{tmp_path / 'shared.db'}", token_counter=HeuristicCounter())
    store.migrate()
    for source in _sources(TRANSCRIPTS / agent if SHARED else FIXTURE_TRANSCRIPTS / agent / "recorded", (".jsonl",)):
        _check_agent(store, oracle, source)
    store.close()


# --------------------------------------------------------------------------- the rules, on events of our own


def _reply(model: str, usage: dict[str, Any], when: datetime, **ids: str) -> ss.NewEvent:
    return ss.assistant("ok", meta={"model": model, "usage": usage, **ids}, created_at=when)


DAY1 = datetime(2026, 3, 1, 23, 30, tzinfo=timezone.utc)  # 2026-03-01 in UTC, 2026-03-02 in Tokyo
DAY2 = datetime(2026, 3, 3, 12, 0, tzinfo=timezone.utc)
ANTHROPIC = {"input_tokens": 10, "output_tokens": 100, "cache_creation_input_tokens": 1000,
             "cache_read_input_tokens": 10_000}


def _recorded(store: SessionStore) -> tuple[str, str]:
    first = store.create_session(metadata={"cwd": "/work/a"}, events=[
        ss.user("hi", created_at=DAY1),
        # one message written as two lines (Claude Code): one request
        _reply("claude-sonnet-4-5-20250929", ANTHROPIC, DAY1, message_id="msg_1", request_id="req_1"),
        _reply("claude-sonnet-4-5-20250929", ANTHROPIC, DAY1, message_id="msg_1", request_id="req_1"),
        _reply("gpt-5-codex", {"input_tokens": 3000, "cached_input_tokens": 2000, "output_tokens": 50}, DAY2),
    ])
    second = store.create_session(metadata={"project": "b"}, events=[
        _reply("claude-sonnet-4-5-20250929", ANTHROPIC, DAY2, message_id="msg_2", request_id="req_2"),
        _reply("some-local-model", {"input": 5, "output": 5, "cost": {"total": 0.25}}, DAY2),
    ])
    return first, second


def test_usage_rows_on_both_backends(store: SessionStore) -> None:
    first, second = _recorded(store)
    sonnet = (10 * 3 + 100 * 15 + 1000 * 3.75 + 10_000 * 0.3) / 1e6
    codex = (1000 * 1.25 + 50 * 10 + 2000 * 0.125) / 1e6
    days = store.usage(by="day", timezone="UTC")
    assert [(r.key, r.input_tokens, r.output_tokens, r.cache_creation_tokens, r.cache_read_tokens, r.requests)
            for r in days] == [("2026-03-01", 10, 100, 1000, 10_000, 1), ("2026-03-03", 1015, 155, 1000, 12_000, 3)]
    assert days[0].cost_usd == pytest.approx(sonnet)
    assert days[1].cost_usd == pytest.approx(sonnet + codex + 0.25)  # the agent's own cost where no price is known
    assert days[1].unpriced == ("some-local-model",)
    assert [r.key for r in store.usage(by="day", timezone="Asia/Tokyo")] == ["2026-03-02", "2026-03-03"]
    assert {r.key: r.requests for r in store.usage(by="session")} == {first: 2, second: 2}
    assert {r.key for r in store.usage(by="project")} == {"/work/a", "b"}
    assert [r.key for r in store.usage(by="model")] == ["some-local-model", "claude-sonnet-4-5-20250929",
                                                        "gpt-5-codex"]  # the costliest first
    totals = {sum((getattr(r, t) for r in store.usage(by=by)), 0) for by in ("day", "session", "model", "project")
              for t in TOKENS[:1]}
    assert totals == {1025}  # every grouping adds up to the same requests
    assert [r.key for r in store.usage(session_ids=[second], timezone="UTC")] == ["2026-03-03"]
    assert store.usage(session_ids=[]) == []
    assert [r.key for r in store.usage(since=date(2026, 3, 2), timezone="UTC")] == ["2026-03-03"]
    assert [r.key for r in store.usage(until=date(2026, 3, 1), timezone="UTC")] == ["2026-03-01"]  # the whole day
    assert store.usage(since=DAY2 + timedelta(seconds=1)) == []
    fork = store.fork(first)  # a fork's inherited requests stay its parent's: counted once
    assert sum(r.requests for r in store.usage(by="session")) == 4 and store.usage(session_ids=[fork]) == []
    # the async door runs the same program
    async def read() -> list[ss.UsageRow]:
        async with AsyncSessionStore(store.url) as door:
            return await door.usage(by="session")
    assert asyncio.run(read()) == store.usage(by="session")


def test_local_days_follow_daylight_saving(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a zone, days are the local zone's as ccusage's are, its offset at each instant (not today's)."""
    summer = datetime(2026, 7, 1, 4, 30, tzinfo=timezone.utc)  # 00:30 in New York (EDT); 23:30 the day before in EST
    store.create_session(events=[_reply("gpt-5", {"input_tokens": 1, "output_tokens": 1}, summer)])
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert [r.key for r in store.usage()] == [r.key for r in store.usage(timezone="America/New_York")] == \
            ["2026-07-01"]
        assert [r.key for r in store.usage(since=date(2026, 7, 1), until=date(2026, 7, 1))] == ["2026-07-01"]
    finally:
        monkeypatch.undo()
        time.tzset()


def test_bad_arguments_are_typed_errors(store: SessionStore) -> None:
    for kwargs, field in [({"by": "week"}, "by"), ({"since": date.today() + timedelta(days=2)}, "since"),
                          ({"since": "2026-01-01"}, "since"), ({"timezone": "Mars/Olympus"}, "timezone"),
                          ({"since": date(2026, 2, 1), "until": date(2026, 1, 1)}, "until")]:
        with pytest.raises(InvalidUsageQuery) as caught:
            store.usage(**kwargs)
        assert caught.value.field == field


def test_provider_spellings_and_request_ids() -> None:
    assert billed({"input_tokens": 5, "output_tokens": 7, "cache_creation_input_tokens": 11,
                   "cache_read_input_tokens": 13}) == Billed(5, 7, 11, 13)
    assert billed({"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 9,
                   "reasoning_output_tokens": 4}) == Billed(40, 9, 0, 60)  # Codex: reasoning is in the output
    assert billed({"prompt_tokens": 100, "completion_tokens": 9,
                   "prompt_tokens_details": {"cached_tokens": 30}}) == Billed(70, 9, 0, 30)
    assert billed({"input": 100, "output": 9, "cached": 60, "thoughts": 4, "tool": 2}) == Billed(42, 13, 0, 60)
    assert billed({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "reasoning": 5}) == Billed(1, 7, 4, 3)
    assert billed(None) == billed("x") == Billed(0, 0, 0, 0)
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def record(message: str | None, request: str | None, response: str | None = None) -> UsageRecord:
        return UsageRecord("s", at, {}, "m", message, request, response, None, None)

    kept = counted([record("a", "r"), record("a", "r"), record("a", "r2"), record("a", None), record("a", None),
                    record(None, None, "resp"), record(None, None, "resp"), record(None, None)])
    assert len(kept) == 6


def test_price_table_names_long_context_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = shipped()
    assert table.date and table.price("claude-sonnet-4-5-20250929") is table.price("anthropic/claude-sonnet-4-5")
    assert table.price("gpt-5-2025-08-07") is table.price("gpt-5")
    assert table.price("claude-opus-4-5-20251101") is not table.price("claude-opus-4-20250514")
    assert table.price("claude-opus-9") is None and table.price(None) is None
    sonnet = table.price("claude-sonnet-4-5")
    assert sonnet is not None
    assert sonnet.cost(100_000, 0, 0, 0) == pytest.approx(0.3)
    assert sonnet.cost(100_000, 0, 0, 100_001) == pytest.approx((100_000 * 6 + 100_001 * 0.6) / 1e6)  # over 200k
    opus = table.price("claude-opus-4-6")
    assert opus is not None and opus.cost(1000, 0, 0, 0, fast=True) == pytest.approx(6 * opus.cost(1000, 0, 0, 0))
    fast = UsageRecord("s", datetime(2026, 1, 1, tzinfo=timezone.utc), {"input_tokens": 1000, "output_tokens": 0,
                                                                         "speed": "fast"}, "claude-opus-4-6",
                       None, None, None, None, None)
    assert rows([fast], "model", None, table)[0].cost_usd == pytest.approx(6 * 5 * 1000 / 1e6)
    own = tmp_path / "prices.json"
    own.write_text(json.dumps({"date": "2026-12-01", "models": {"claude-opus-9": {"input": 1, "output": 2,
                                                                                  "cache_read": 0.1}}}))
    monkeypatch.setenv(PRICES_ENV, str(own))
    mine = price_table()
    assert mine.price("claude-opus-9") is not None and mine.price("claude-sonnet-4-5") == sonnet
    assert price_table({"models": {"gpt-5": {"input": 0, "output": 0, "cache_read": 0}}}).price("gpt-5") != \
        table.price("gpt-5")
    for bad in ({"models": {"x": {"input": "free"}}}, [], {"models": {"x": {"input": -1, "output": 1, "cache_read": 0}}}):
        with pytest.raises(ConfigurationError):
            price_table(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        price_table(tmp_path / "missing.json")


# --------------------------------------------------------------------------- the command


def test_cli_usage_json_and_bad_input(store_url: str, tmp_path: Path) -> None:
    with SessionStore(store_url) as store:
        _recorded(store)
    runner = CliRunner()

    def cli(*args: str) -> Any:
        return runner.invoke(main, ["--db", store_url, "usage", *args], catch_exceptions=False)

    done = cli("--by", "day", "--json", "--timezone", "UTC")
    assert done.exit_code == 0, done.output
    rows = json.loads(done.stdout)
    assert [list(row) for row in rows] == [["day", *TOKENS, "cost_usd"]] * 2
    assert [row["day"] for row in rows] == ["2026-03-01", "2026-03-03"]
    assert "some-local-model" in done.stderr  # named as unpriced
    table = cli("--by", "model", "--since", "20260301")
    assert table.exit_code == 0 and "claude-sonnet-4-5-20250929" in table.stdout and "total" in table.stdout
    before = table_counts(store_url)
    future = (date.today() + timedelta(days=3)).isoformat()
    for args in (["--by", "week"], ["--since", "2026-02-30"], ["--since", future], ["--until", "soon"],
                 ["--timezone", "Nowhere/Land"], ["--prices", str(tmp_path / "none.json")]):
        bad = cli(*args)
        assert bad.exit_code == 2, (args, bad.output)
        assert bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    assert table_counts(store_url) == before
