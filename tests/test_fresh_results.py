"""What the model has not seen yet reaches it whole (issue 17 item 5): a tool result that came
back after the model's last reply is never outlined, cleared or dropped; when it alone cannot
fit, it is truncated head and tail with the version that keeps it all named."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import sessionstore as ss
from sessionstore import CompactionPolicy, SessionStore
from sessionstore.compaction.skeleton import outliner as skeleton_module
from sessionstore.compaction.prune import plan_prunes
from sessionstore.compaction.rewrite import plan_rewrites
from sessionstore.importers import import_path
from sessionstore.lab import replay

from .test_compaction import SMALL, Recording, pair, view_of
from .test_replay import recorded_session

BIG = "\n".join(f"line {i}: " + "output " * 20 for i in range(200))


def test_prune_does_not_clear_a_fresh_result() -> None:
    policy = SMALL.with_(rules=("keep_recent_results",), keep_tool_results=0)
    old, fresh = pair("b1", "Bash", {"command": "make"}, BIG), pair("b2", "Bash", {"command": "make test"}, BIG)
    (decision,) = plan_prunes(view_of(ss.user("go"), old, ss.assistant("again"), fresh).items, policy)
    assert decision.targets == (3,)  # the old output only; version 6, just back, stays
    (seen,) = plan_prunes(view_of(ss.user("go"), old, ss.assistant("again"), fresh, ss.assistant("ok")).items, policy)
    assert seen.targets == (3, 6)  # once the model has answered, it may go


def test_rewrite_does_not_outline_a_fresh_python_read() -> None:
    source = inspect.getsource(skeleton_module).splitlines()[:300]
    assert len(source) == 300
    policy = SMALL.with_(prune_protect_tokens=0)
    read = pair("r1", "Read", {"file_path": "skeleton.py"}, "\n".join(source))
    assert plan_rewrites(view_of(ss.user("read it"), read).items, policy) == []
    (outline,) = plan_rewrites(view_of(ss.user("read it"), read, ss.assistant("read")).items, policy)
    assert outline.target_version == 3 and outline.content.startswith("[COMPRESSED: ")


def test_a_fresh_36k_read_is_truncated_head_and_tail_not_cleared(store: SessionStore) -> None:
    policy = CompactionPolicy.for_window(32_000)
    sid = store.create_session()
    store.append(sid, [ss.user("show me the log"), ss.assistant("Reading.", tool_calls=[
        ss.tool_call("r1", "Read", {"file_path": "server.log"})])])
    text = "FIRST LINE\n" + "\n".join(f"{i:06d} INFO request served in {i % 997} ms" for i in range(3_600)) + "\nLAST LINE"
    store.append(sid, ss.tool_result("r1", text))
    result_version = store.version(sid)
    assert 33_000 < store.context(sid).tokens
    result = store.maybe_compact(sid, policy, Recording())
    assert result is not None and [t.target_version for t in result.plan.truncations] == [result_version]
    assert not any(p.mode == "clear_output" and result_version in p.targets for p in result.plan.prunes)
    view = store.context(sid)
    assert policy.window_tokens(view) <= policy.threshold
    (item,) = [i for i in view.items if i.version == result_version]
    output = item.payload["output"]
    output = output if isinstance(output, str) else "\n".join(b["text"] for b in output)
    assert not item.cleared and output.startswith("FIRST LINE\n000000 INFO") and output.endswith("LAST LINE")
    assert f"the full text is version {result_version} of the transcript" in output


class _Watching:
    """The scratch store of a replay, looking at the view each model call would get."""

    def __init__(self, store: SessionStore) -> None:
        self.store, self.checked = store, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def maybe_compact(self, sid: str, *args: Any, **kwargs: Any) -> Any:
        result = self.store.maybe_compact(sid, *args, **kwargs)
        events = self.store.transcript(sid)
        last = max((e.version for e in events if e.kind in ("message", "tool_call")
                    and (e.kind == "tool_call" or e.payload.get("role") == "assistant")), default=0)
        for item in self.store.context(sid).items:
            if item.kind == "tool_result" and item.version > last:
                self.checked += 1
                assert not item.cleared, item.version
                if item.rewritten:
                    output = str(item.payload["output"])
                    assert "[COMPRESSED" not in output and "of the transcript" in output, item.version
        return result


def test_no_model_call_sees_its_fresh_result_rewritten(store: SessionStore) -> None:
    source, _ = recorded_session(store, turns=6)
    watching = _Watching(store)
    policy = SMALL.with_(prune_protect_tokens=0, keep_tool_results=0)
    row = replay(watching, source, list(store.events(source)), policy, Recording())  # type: ignore[arg-type]
    assert row.compactions and watching.checked >= 6


def test_the_shipped_transcripts_relived_never_show_a_fresh_result_rewritten(store: SessionStore) -> None:
    fixtures = Path(__file__).parent / "fixtures" / "transcripts"
    assert import_path(store, fixtures).files
    policy = CompactionPolicy(context_window=12_000, reserve_tokens=1_000, keep_recent_tokens=2_000,
                              prune_protect_tokens=0, prune_minimum_tokens=0)
    watching, compacted = _Watching(store), 0
    for source in [s.id for s in store.sessions() if s.head >= 40 and s.parent_id is None]:
        row = replay(watching, source, list(store.events(source)), policy, Recording())  # type: ignore[arg-type]
        compacted += len(row.compactions)
    assert compacted and watching.checked >= 10
