"""The strategy lab: `sessionstore replay` re-lives a stored session under policies side by side."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main

from .test_calibration import answer, provider_count


def recorded_session(store: SessionStore, turns: int = 8) -> tuple[str, list[int]]:
    """A session as an agent records it: questions, file reads, answers reporting the provider's count."""
    sid = store.create_session()
    store.append(sid, ss.system("You are a coding agent."))
    prompts = []
    for t in range(turns):
        store.append(sid, ss.user(f"Question {t}: what does module {t} do?"))
        for text, call in (("Reading.", ss.tool_call(f"r{t}", "Read", {"file_path": f"src/m{t}.py"})),
                           ("Editing.", ss.tool_call(f"e{t}", "Edit", {"file_path": f"src/m{t}.py",
                                                                       "old_string": "x", "new_string": "y"}))):
            prompts.append(provider_count(store.context(sid).tokens))
            store.append(sid, ss.assistant(text, tool_calls=[call], meta={
                "model": "claude-x", "usage": {"input_tokens": prompts[-1], "output_tokens": 20}}))
            store.append(sid, ss.tool_result(call.payload["call_id"], f"def f{t}(x):\n    return x + {t}\n" * 120
                                             if text == "Reading." else "ok"))
        prompts.append(answer(store, sid, f"Module {t} adds {t}."))
    return sid, prompts


def run(url: str, *args: str, code: int = 0) -> CliRunner:
    result = CliRunner().invoke(main, ["--db", url, "--log-format", "json", *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def test_replay_compares_policies_without_touching_the_session(store: SessionStore, store_url: str,
                                                               tmp_path: Path) -> None:
    sid, prompts = recorded_session(store)
    head = store.version(sid)
    policy = tmp_path / "prune.json"
    policy.write_text(json.dumps([{"label": "prune first", "context_window": 16_000, "reserve_tokens": 2_000,
                                   "keep_recent_tokens": 3_000, "prune_protect_tokens": 2_000,
                                   "prune_minimum_tokens": 500, "early_exit_ratio": 1.0}]))
    result = run(store_url, "replay", sid, "--window", "200000", "--window", "16000", "--json",
                 "--policy-json", str(policy))
    rows = {row["label"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert list(rows) == ["200k single", "16k single", "prune first"]
    whole, small = rows["200k single"], rows["16k single"]
    assert store.version(sid) == head  # only read: the replay lives in a scratch store
    # Nothing compacted at 200k: the re-lived requests are the recorded ones, and the provider
    # simulated from the session's own reports bills what the session was billed.
    assert whole["compactions"] == [] and whole["model_calls"] == len(prompts)
    assert abs(whole["input_tokens"] - sum(prompts)) / sum(prompts) < 0.02
    assert whole["billed_cached"] < whole["input_tokens"] / 3  # each request's prefix is the previous one
    assert whole["user_messages"] == [8, 8] and whole["modified_files"] == [8, 8]
    assert len(small["compactions"]) >= 1 and small["summarizer_calls"] >= 1
    assert small["peak_view"] <= 16_000 < whole["peak_view"] and small["input_tokens"] < whole["input_tokens"]
    assert all(row["invalid_requests"] == 0 and row["calls_over_window"] == 0 for row in rows.values())
    assert small["user_messages"][1] == 8 and small["user_messages"][0] >= 1
    # what the small window's compaction took out of the view comes back byte-identical
    assert whole["recalled"] == [0, 0] and rows["prune first"]["recalled"][0] == rows["prune first"]["recalled"][1] > 0
    table = run(store_url, "replay", sid, "--window", "16000", "--strategy", "sequential-rolling").stdout
    assert "16k" in table and "sequential" in table and "caching" in table


def test_replay_table_stays_narrow_at_any_number_of_compactions(store: SessionStore, store_url: str) -> None:
    sid, _ = recorded_session(store, turns=64)
    result = run(store_url, "replay", sid, "--window", "16000", "--window", "200000", "--detail")
    rows = json.loads(run(store_url, "replay", sid, "--window", "16000", "--json").stdout.splitlines()[0])
    assert len(rows["compactions"]) >= 30 and set(rows["survived"]) == set(ss.quality.KINDS)
    lines = result.stdout.splitlines()
    table = lines[:next(n for n, line in enumerate(lines) if line.startswith("16k single: "))]
    assert max(len(line.rstrip()) for line in table) < 120, "\n".join(table)
    assert any(line.startswith("16k single: ") and line.count("→") == len(rows["compactions"]) for line in lines)
    assert "thrashes" in result.stderr


def test_replay_names_what_is_wrong_with_a_policy_file(store: SessionStore, store_url: str, tmp_path: Path) -> None:
    sid, _ = recorded_session(store, turns=1)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"context_windo": 1000}))

    def error(*args: str) -> str:
        return " ".join(run(store_url, "replay", *args, code=2).stderr.split())  # unwrapped

    assert "policy 1 has unknown fields ['context_windo']" in error(sid, "--policy-json", str(bad))
    bad.write_text("{not json")
    assert "bad.json: cannot read a JSON policy" in error(sid, "--policy-json", str(bad))
    assert "no session 'nope'" in error("nope")  # the one SID resolver every command uses
