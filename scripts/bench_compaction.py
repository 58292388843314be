"""Benchmark: the compaction pipeline on the shared transcripts — its speed and what it saves.

    .venv/bin/python scripts/bench_compaction.py

1. Speed, on the view of `pi/before-compaction.jsonl` just before Pi's own second compaction
   (about 185k tokens by Pi's count): level 1 (prune rules) + cut planning (target < 200 ms),
   level 2 alone (the tree-sitter rewrite pass over its TypeScript reads, target < 300 ms,
   parsers created once), and the whole plan with the offline summariser.
2. Token accounting: the provider-reported input of recorded requests against our estimate
   of the same context (tiktoken cl100k_base, and chars/4).
3. Token reduction on every shared transcript: each is lived again without its recorded
   compactions, so that ours do the work — appended in chunks with `maybe_compact()` before
   each, as an agent would (window 200,000 tokens; a session smaller than that gets a window
   of half its size, `CompactionPolicy.for_window`). Beside it, what the recording agent
   achieved where the file holds its own compaction: Pi's tokensBefore, Claude Code's
   preTokens, and the provider-reported usage of the first answer after it.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import TRANSCRIPTS, best_of, print_table, quiet, sqlite_stores  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore import CompactionPolicy, SessionStore  # noqa: E402
from sessionstore.compaction.cut import plan_cut  # noqa: E402
from sessionstore.compaction.pipeline import plan_compaction, plan_markers  # noqa: E402
from sessionstore.compaction.prune import plan_prunes  # noqa: E402
from sessionstore.compaction.rewrite import plan_rewrites  # noqa: E402
from sessionstore.importers import import_path  # noqa: E402
from sessionstore.projection import reported_tokens  # noqa: E402
from sessionstore.summarizers.offline import OfflineSummarizer  # noqa: E402

PI = "ffae836b-9420-4060-ac13-7745215f90ff"  # pi/before-compaction.jsonl
WINDOW = 200_000
CHUNK = 50


def speed(store: SessionStore) -> None:
    compactions = [e for e in store.events(PI) if e.kind == "compaction"]
    view = store.context(PI, at=compactions[-1].version - 1)
    policy = CompactionPolicy()
    prune_ms = best_of(lambda: plan_prunes(view.items, policy), 7) * 1000
    cut_ms = best_of(lambda: plan_cut(view.items, policy.keep_recent_tokens), 7) * 1000
    rewrites = plan_rewrites(view.items, policy)
    rewrite_ms = best_of(lambda: plan_rewrites(view.items, policy), 7) * 1000
    markers_ms = best_of(lambda: plan_markers(view, policy), 5) * 1000
    counter, summarizer = store.token_counter, OfflineSummarizer()
    plan = plan_compaction(view, policy=policy, counter=counter, summarizer=summarizer)
    plan_ms = best_of(lambda: plan_compaction(view, policy=policy, counter=counter, summarizer=summarizer), 5) * 1000
    reads = sum(1 for i in view.items if i.kind == "tool_call" and i.payload["name"] == "read")
    print(f"pi/before-compaction.jsonl, view at v{view.version} before Pi's second compaction: "
          f"{len(view.items)} items, {view.tokens:,} tokens (Pi counted {compactions[-1].payload['tokens_before']:,}), "
          f"{reads} reads")
    print_table(["step", "ms (best of 5-7)", "target", "result"], [
        ["level 1: prune rules", prune_ms, "", ""],
        ["cut planning", cut_ms, "", ""],
        ["prune + plan (cut)", prune_ms + cut_ms, "< 200", ""],
        ["level 2: rewrite pass", rewrite_ms, "< 300", f"{len(rewrites)} skeletons"],
        ["levels 1 + 2 (markers)", markers_ms, "", ""],
        ["whole plan, offline summary", plan_ms, "", f"{plan.tokens_before:,} → {plan.tokens_after:,} tokens"],
    ])


def agent_own(store: SessionStore, sid: str) -> list[str]:
    """What the recording agent's own compactions did: before → the first reported usage after."""
    events = list(store.events(sid))
    results = []
    for event in events:
        if event.kind != "compaction":
            continue
        before = event.payload.get("tokens_before")
        after = next((reported_tokens(e.meta.get("usage")) for e in events
                      if e.version > event.version and e.kind == "message" and e.payload["role"] == "assistant"
                      and reported_tokens(e.meta.get("usage"))), None)
        results.append(f"{before:,} → {after:,}" if before and after else f"{before or '?'} → ?")
    return results


def without_usage(meta: dict) -> dict:
    """Recorded usage describes the recording agent's own (compacted) context, not the view a
    replay without its compactions sends: left in, it would anchor our estimate to a wrong count."""
    return {k: v for k, v in meta.items() if k != "usage"}


def replay(store: SessionStore, source: list[ss.StoredEvent], policy: CompactionPolicy | None) -> tuple[str, list]:
    """Append `source` in chunks as an agent would, with maybe_compact() before each chunk."""
    sid = store.create_session()
    results = []
    for start in range(0, len(source), CHUNK):
        if policy is not None:
            result = store.maybe_compact(sid, policy)
            if result is not None:
                results.append(result)
        store.append(sid, [ss.NewEvent(e.kind, e.payload, without_usage(e.meta), f"{sid[:6]}{e.event_id}",
                                       e.created_at) for e in source[start:start + CHUNK]], strict=False)
    return sid, results


def reduction(store: SessionStore, ratios: dict[str, float]) -> None:
    rows = []
    for info in sorted(store.sessions(), key=lambda s: -s.head):
        if info.parent_id or info.metadata.get("parent_session") or info.head < 100:
            continue
        source = [e for e in store.events(info.id) if e.kind != "compaction"]
        plain, _ = replay(store, source, None)
        whole = store.context(plain).tokens
        ratio = ratios.get(str(info.metadata.get("source")), 1.0)
        own = agent_own(store, info.id)
        # Like with like: where the agent compacted, its real window; else one the session overflows.
        window = WINDOW if own or whole * ratio > WINDOW else max(20_000, int(whole * ratio) // 2)
        policy = CompactionPolicy.for_window(window, estimate_ratio=round(ratio, 2))
        sid, results = replay(store, source, policy)

        def provider(tokens: int) -> str:
            return f"{int(tokens * ratio):,}"

        ours = [f"{provider(r.tokens_before)} → {provider(r.tokens_after)} ({'prune' if r.early_exit else 'summary'})"
                for r in results if r.events]
        rows.append([f"{info.metadata.get('source', '?')} {info.id[:8]}", len(source), provider(whole),
                     f"{window:,}", provider(store.context(sid).tokens),
                     "; ".join(ours[:3]) + (f" … ({len(ours)} in all)" if len(ours) > 3 else "") or "—",
                     "; ".join(own) or "—"])
    print_table(["transcript", "events", "tokens, no compaction", "window", "view at the end",
                 "ours: before → after", "recording agent: before → after"], rows)


def calibration(store: SessionStore) -> dict[str, float]:
    """Provider-reported input tokens against our estimate of the same context, fitted as
    reported ≈ slope × estimate + intercept: the slope is the tokenizers' ratio, the intercept
    what the transcript does not record (system prompt and tool definitions)."""
    rows = []
    slopes: dict[str, float] = {}
    for fmt in ("claude-code", "pi", "codex"):
        points: dict[str, list[tuple[float, float]]] = {"tiktoken": [], "chars/4": []}
        for info in store.sessions():
            if info.metadata.get("source") != fmt or info.parent_id:
                continue
            for event in list(store.events(info.id))[20::5]:
                reported = reported_tokens(event.meta.get("usage")) if event.kind == "message" else 0
                if not reported or event.payload.get("role") != "assistant":
                    continue
                view = store.context(info.id, at=event.version - 1)
                if view.compaction is not None or not view.items:
                    continue
                chars = sum(len(str(i.payload)) for i in view.items) + len(view.system or "")
                points["tiktoken"].append((view.tokens, reported))
                points["chars/4"].append((chars / 4, reported))
        if len(points["tiktoken"]) >= 3:
            fits = {name: statistics.linear_regression(*zip(*pts)) for name, pts in points.items()}
            slopes[fmt] = fits["tiktoken"].slope
            rows.append([fmt, len(points["tiktoken"]), f"{fits['tiktoken'].slope:.2f}",
                         f"{fits['tiktoken'].intercept:,.0f}", f"{fits['chars/4'].slope:.2f}",
                         f"{fits['chars/4'].intercept:,.0f}"])
    print_table(["transcripts", "requests", "tiktoken: slope", "+ tokens", "chars/4: slope", "+ tokens"], rows)
    return slopes


def main() -> int:
    quiet()
    if not TRANSCRIPTS.is_dir():
        print(f"no transcripts at {TRANSCRIPTS}")
        return 1
    with sqlite_stores() as (make, _):
        store = make("compaction")
        import_path(store, str(TRANSCRIPTS))
        speed(store)
        print("\nToken accounting: the provider's reported input against our estimate of the same context")
        ratios = calibration(store)
        print("\nToken reduction, each transcript lived again (its own compactions left out). All figures are "
              "provider tokens: ours estimated (tiktoken × the slope above), the agents' as reported.")
        reduction(store, ratios)
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
