"""Every view an agent reached, ours can reach: on each agent compaction the shipped recordings
hold (Claude Code, Codex, Pi, Gemini CLI, OpenCode, OpenHands, Copilot CLI, Qwen Code…), our
compaction of the same history, under a policy whose threshold is the agent's view, succeeds and
makes a view no larger than the agent's. `$SESSIONSTORE_UNSEEN_TRANSCRIPTS`, when set, adds a
folder of sessions kept apart from the project (never committed) to the same check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sessionstore as ss
from sessionstore.importers import find_transcripts, import_path
from sessionstore.lab import _within

from .conftest import FIXTURE_TRANSCRIPTS

_UNSEEN = os.environ.get("SESSIONSTORE_UNSEEN_TRANSCRIPTS")
FOLDERS = [FIXTURE_TRANSCRIPTS, *([Path(_UNSEEN)] if _UNSEEN else [])]


def _agent_compactions(store: ss.SessionStore, folder: Path) -> list[tuple[str, str, int]]:
    """(transcript, session, version) of every agent compaction in `folder`'s conversations."""
    found = []
    for path in (p for p in find_transcripts(folder) if "subagents" not in p.parts):
        before = {s.id for s in store.sessions()}
        import_path(store, path)
        for info in store.sessions():
            if info.id not in before and not info.metadata.get("parent_session"):
                found += [(path.name, info.id, e.version) for e in store.events(info.id, kinds=["compaction"])]
    return found


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: "fixtures" if f == FIXTURE_TRANSCRIPTS else "unseen")
def test_ours_reaches_every_view_the_agent_reached(tmp_path: Path, folder: Path) -> None:
    with ss.SessionStore(f"sqlite:///{tmp_path / 'reach.db'}") as store:
        store.migrate()
        compactions = _agent_compactions(store, folder)
        formats = {store.session(sid).metadata.get("source") for _, sid, _ in compactions}
        if folder == FIXTURE_TRANSCRIPTS:  # the shipped recordings cover every agent that compacts
            assert len(compactions) >= 10 and len(formats) >= 8, (compactions, formats)
        refused = []
        for name, sid, version in compactions:
            agent = store.context(sid, at=version)
            policy = _within(agent, 1.0)
            fork = store.fork(sid, at=version - 1)
            try:
                store.compact(fork, policy, ss.OfflineSummarizer())
            except ss.CompactionFailed:
                refused.append(store.session(sid).metadata.get("source"))
                continue
            ours = store.context(fork)
            assert policy.window_tokens(ours) <= policy.threshold, (name, version)
            assert ours.tokens <= agent.tokens, (name, version, ours.tokens, agent.tokens)
        # Cline's views keep a summary alone (59 and 95 tokens) or a summary and the last call
        # (140), the recorded OpenCode 1.18 compaction its summary and one message (118): ours
        # reaches them with a summary under the usual floor, or the summary alone (issue 36).
        assert refused == [], refused


def test_a_view_below_what_any_compaction_leaves_is_refused_with_the_figures(tmp_path: Path) -> None:
    """Under the smallest view (the smallest summary alone, nothing kept after it), the refusal
    says what that smallest view takes; nothing is recorded."""
    with ss.SessionStore(f"sqlite:///{tmp_path / 'refuse.db'}") as store:
        store.migrate()
        ((_, sid, version),) = _agent_compactions(store, FIXTURE_TRANSCRIPTS / "gemini-cli")
        agent = store.context(sid, at=version)
        fork = store.fork(sid, at=version - 1)
        head = store.version(fork)
        policy = _within(agent, 0.05)
        with pytest.raises(ss.CompactionFailed, match=r"even a \d+-token summary alone, nothing kept after it, "
                                                      r"leaves [\d,]+ tokens") as refused:
            store.compact(fork, policy, ss.OfflineSummarizer())
        smallest = int(str(refused.value).rsplit(" leaves ", 1)[1].split(" ")[0].replace(",", ""))
        assert smallest > policy.threshold and store.version(fork) == head


def test_the_latest_todo_list_leaves_the_view_last(tmp_path: Path) -> None:
    """The todo list a compaction keeps after its summary is no fixed block: where nothing else
    can shrink, it leaves the view for the summary (whose history holds it), and a view the agent's
    own compaction could reach (a summary and the smallest tail, no list) is reached."""
    todos = [{"content": f"step {i}: refactor module {i} and its tests", "status": "pending",
              "activeForm": f"refactoring {i}"} for i in range(12)]
    events = [ss.user("plan the refactor"),
              ss.assistant("planning", tool_calls=[ss.tool_call("t1", "TodoWrite", {"todos": todos})]),
              ss.tool_result("t1", "Todos have been modified successfully. " * 10)]
    for i in range(12):
        events += [ss.user(f"request {i}: " + "look at this " * 20),
                   ss.assistant(f"reading {i}", tool_calls=[ss.tool_call(f"c{i}", "Bash", {"command": f"cat f{i}"})]),
                   ss.tool_result(f"c{i}", "line of output\n" * 200)]
    with ss.SessionStore(f"sqlite:///{tmp_path / 'todo.db'}") as store:
        store.migrate()
        sid = store.create_session("todo", events=events)

        def compact(threshold: int) -> ss.ContextView:
            fork = store.fork(sid, at=store.version(sid))
            store.compact(fork, ss.CompactionPolicy(
                context_window=threshold + 1_000, reserve_tokens=1_000, keep_recent_tokens=threshold // 3,
                summary_max_tokens=threshold // 2, restore_budget_tokens=0, min_summarized_tokens=0),
                ss.OfflineSummarizer())
            return store.context(fork)

        roomy = compact(1_000)
        assert {3, 4} <= {i.version for i in roomy.items if i.origin == "critical"}  # the list, kept
        tight = compact(250)
        assert tight.tokens <= 250 and not [i for i in tight.items if i.origin == "critical"]
