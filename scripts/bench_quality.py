"""Benchmark: what a model can still know after a compaction — the agent's own against ours.

    .venv/bin/python scripts/bench_quality.py [--postgres] [--transcripts DIR]

For every transcript (the shipped fixtures and the shared corpus) that holds an agent's own
compaction (Claude Code's compact_boundary, Pi's compaction entries, Codex's compacted items,
OpenHands' condensations, OpenCode's summary messages, Gemini CLI's recorded compressions),
the probes of `sessionstore.quality` are taken from the history before it — the user's typed
requests, the files modified, the latest todo/plan items, the last errors, the current work —
and each is *kept* when its text is in the rendered view. Rows per compaction:

- agent: the view right after the agent's compaction (its summary, what it kept);
- ours: our compaction of the same history (a fork just before the agent's) under a policy
  whose threshold is the agent's view (`*` marks ours larger: no compaction could fit);
- ours #2, #3: the next parts of the recorded session appended to that fork and compacted again
  under the same limit, judged by the probes of everything the fork holds then.

Goal (issue 29): at every agent compaction, ours keeps at least the agent's share of every
class — user requests, files modified, todo items, errors, current work — in a view no larger
than the agent's. Issue 17's: every user request still kept after three compactions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, TRANSCRIPTS, postgres_stores, print_table, quiet, sqlite_stores  # noqa: E402

from sessionstore.importers import find_transcripts, import_path  # noqa: E402
from sessionstore.lab import Judged, judge_compactions  # noqa: E402
from sessionstore.quality import KINDS  # noqa: E402
from sessionstore.summarizers.offline import OfflineSummarizer  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
SHORT = {"user_requests": "user", "modified_files": "files", "todo_items": "todo", "last_errors": "errors",
         "current_work": "work"}
WHO = ("agent", "ours", "ours #2", "ours #3")


def _cell(kept: int, total: int) -> str:
    return f"{kept}/{total}" if total else "-"


def short_fall(agent: Judged, ours: Judged) -> list[str]:
    """What keeps `ours` from the goal against `agent`: a larger view, or a class it keeps less of."""
    missed = [SHORT[k] for k in KINDS if _rate(ours.recall[k]) < _rate(agent.recall[k])]
    return ([f"view {ours.tokens:,} > {agent.tokens:,} tokens"] if ours.tokens > agent.tokens else []) + missed


def measure(make: object, folders: list[Path]) -> bool:
    store = make("quality")  # type: ignore[operator]
    summarizer = OfflineSummarizer()
    rows: list[list[object]] = []
    missed: list[str] = []
    lost_users: list[str] = []
    totals = {who: {k: [0, 0] for k in KINDS} for who in WHO}
    tokens = {who: 0 for who in WHO}
    for folder in folders:
        for path in (p for p in find_transcripts(folder) if "subagents" not in p.parts):
            before = {s.id for s in store.sessions()}
            import_path(store, path)
            for info in store.sessions():
                # Subagents and summariser transcripts (their importer names the parent session) are
                # not the conversation; OpenHands' evaluation sessions ("instance:run") are.
                if info.id in before or info.metadata.get("parent_session"):
                    continue
                for event in list(store.events(info.id, kinds=["compaction"])):
                    judged = judge_compactions(store, info.id, event.version, summarizer)
                    agent = judged[0]
                    name = f"{path.parent.name}/{path.name}"[-34:]
                    for j in judged:
                        over = "*" if j.who == "ours" and j.tokens > agent.tokens else ""
                        rows.append([name if j.who == "agent" else "", j.version, j.who, f"{j.tokens:,}{over}",
                                     *(_cell(*j.recall[k]) for k in KINDS)])
                        tokens[j.who] += j.tokens
                        for k in KINDS:
                            totals[j.who][k][0] += j.recall[k][0]
                            totals[j.who][k][1] += j.recall[k][1]
                    ours = next((j for j in judged if j.who == "ours"), None)
                    failed = ["no compaction"] if ours is None else short_fall(agent, ours)
                    if failed:
                        missed.append(f"{name} v{event.version}: {', '.join(failed)}")
                    last = judged[-1]
                    if last.who == "ours #3" and last.recall["user_requests"][0] < last.recall["user_requests"][1]:
                        lost_users.append(f"{name} v{event.version}: {_cell(*last.recall['user_requests'])}")
    print_table(["transcript", "v", "view", "tokens", *(SHORT[k] for k in KINDS)], rows)
    print()
    print_table(["all compactions", "tokens", *(SHORT[k] for k in KINDS)],
                [[who, f"{tokens[who]:,} ({tokens[who] / max(1, tokens['agent']):.2f}x)",
                  *(_pct(*totals[who][k]) for k in KINDS)] for who in WHO])
    print(f"\ngoal (issue 29: ours >= agent on {', '.join(SHORT[k] for k in KINDS)} at <= the agent's tokens, "
          f"at every compaction): {'MISSED' if missed else 'MET'}")
    for line in missed:
        print(f"  {line}")
    print(f"goal (issue 17: every user request kept after three compactions): {'MISSED' if lost_users else 'MET'}")
    for line in lost_users:
        print(f"  {line}")
    return not missed and not lost_users


def _rate(score: tuple[int, int]) -> float:
    kept, total = score
    return kept / total if total else 1.0


def _pct(kept: int, total: int) -> str:
    return f"{100 * kept / total:.0f}% ({kept}/{total})" if total else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", action="store_true", help="also run against a throwaway PostgreSQL")
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    args = parser.parse_args()
    quiet()
    folders = [FIXTURES] + ([args.transcripts] if args.transcripts.is_dir() else [])
    ok = True
    with sqlite_stores() as (make, _):
        print("SQLite")
        ok = measure(make, folders) and ok
    if args.postgres:
        with postgres_stores() as (make, _):
            print("\nPostgreSQL")
            ok = measure(make, folders) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
