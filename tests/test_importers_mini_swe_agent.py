"""The mini-SWE-agent importer on a trajectory recorded with real mini 2.4.6
(scripts/record_mini_swe_agent.py), and on the 1.x text-based layout written from it: calls paired
with their results, a failed command an error, usage and metadata, the view a valid request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.importers import detect_format, import_file
from sessionstore.testing.anthropic_server import validate_request

from .conftest import FIXTURE_TRANSCRIPTS

TRAJECTORY = FIXTURE_TRANSCRIPTS / "mini-swe-agent" / "recorded" / "slugify.traj.json"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_recorded_trajectory_pairs_calls_with_results(store: SessionStore) -> None:
    assert detect_format(TRAJECTORY) == "mini-swe-agent"
    result = import_file(store, TRAJECTORY)
    assert result.ok and result.session_id.startswith("slugify-")
    meta = store.session(result.session_id).metadata
    assert (meta["agent_version"], meta["model"], meta["exit_status"], meta["api_calls"]) == (
        "2.4.6", "openai/gpt-4.1", "Submitted", 5)
    assert meta["first_prompt"].startswith("Please solve this issue: Make slugify() strip surrounding spaces.")
    events = store.transcript(result.session_id)
    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool_call"}
    results = {e.payload["call_id"]: e for e in events if e.kind == "tool_result"}
    assert set(calls) == set(results) and len(calls) == 5
    failed = [e for e in results.values() if e.payload["is_error"]]
    assert [calls[e.payload["call_id"]].payload["input"]["command"] for e in failed] == [
        "python -m pytest -q test_slug.py", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]  # exit 4; not run (-1)
    fixed = next(e for e in results.values() if "strip()" in calls[e.payload["call_id"]].payload["input"]["command"])
    assert json.loads(fixed.payload["output"])["output"] == "'a-b'\n"  # what mini sent the model, as it sent it
    replies = [e for e in events if e.kind == "message" and e.payload["role"] == "assistant"]
    assert all(r.meta["usage"]["prompt_tokens"] > 700 for r in replies)
    assert [e.payload["type"] for e in events if e.kind == "custom"] == ["mini-swe-agent:exit"]
    request = store.context(result.session_id).to_anthropic()
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 64, **request})


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_text_based_trajectory_reads_the_bash_block_as_the_call(store: SessionStore, tmp_path: Path) -> None:
    data = {"info": {"mini_version": "1.17.3", "exit_status": "Submitted"}, "trajectory_format": "mini-swe-agent-1",
            "messages": [{"role": "system", "content": "You are a helpful assistant."},
                         {"role": "user", "content": "<pr_description>Fix slugify</pr_description>"},
                         {"role": "assistant", "content": "THOUGHT: read it.\n\n```bash\ncat slug.py\n```"},
                         {"role": "user", "content": "<returncode>0</returncode>\n<output>\ndef slugify(t): ...\n"
                                                     "</output>"},
                         {"role": "assistant",
                          "content": "THOUGHT: two blocks.\n\n```bash\nls\n```\n```bash\npwd\n```"},
                         {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."}]}
    path = tmp_path / "old.traj.json"
    path.write_text(json.dumps(data, indent=1))
    result = import_file(store, path)
    kinds = [(e.kind, e.payload.get("role") or e.payload.get("name")) for e in store.transcript(result.session_id)]
    assert kinds == [("system", None), ("message", "user"), ("message", "assistant"), ("tool_call", "bash"),
                     ("tool_result", None), ("message", "assistant"), ("message", "user")]
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 64,
                      **store.context(result.session_id).to_anthropic()})
