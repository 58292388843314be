"""Benchmark: token estimates against the provider's counts, on every shared transcript with usage.

    .venv/bin/python scripts/bench_calibration.py

For every recorded model call that reported usage, the view an agent on this library would have
sent just before it (`sessionstore.lab.recorded_calls`; the recording agent's compactions record
what this library's planner records) is estimated for the model that answered, and compared
with the provider's prompt count. Relative errors, |estimate − provider| / provider, per
situation:

- anchored: a valid usage anchor (the last report + what followed, scaled by the learned ratio);
- after compaction: the first call after a compaction — no anchor, the learned overhead + ratio;
- unanchored: any other call without an anchor (the first of a session, another model's turn);
- every call, anchor ignored: the learned overhead + ratio alone at every call, as right after a
  prune or a rewrite (which void the anchor without changing much else).

"today" is the method before calibration: the last assistant message's prompt + output +
our count of what followed, and without an anchor our count × 1.35 (the ratio the README measured).
Goals: after a compaction within 10% of the provider; anchored calls within 3% at p90.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import TRANSCRIPTS, print_table, quiet, sqlite_stores  # noqa: E402

from sessionstore.importers import import_path  # noqa: E402
from sessionstore.lab import RecordedCall, recorded_calls  # noqa: E402
from sessionstore.projection import ContextView  # noqa: E402
from sessionstore.projection.usage import reported_tokens  # noqa: E402

# The provider-to-cl100k ratios the README measured, the fallback (and prior) an agent would configure.
RATIOS = {"claude": 1.35, "gpt": 1.1}


def ratio_for(model: str | None) -> float:
    return next((r for prefix, r in RATIOS.items() if (model or "").startswith(prefix)), 1.0)
SITUATIONS = ("anchored", "after-compaction", "unanchored", "anchor ignored")


def today(view: ContextView, ratio: float) -> int:
    """The estimate before calibration (kept here to measure the improvement)."""
    last_change = max((e.version for e in view.source.tail if e.kind in ("compaction", "prune", "rewrite")),
                      default=0)
    tail = [i for i in view.items if i.origin == "tail"]
    for index in range(len(tail) - 1, -1, -1):
        item = tail[index]
        if item.version <= last_change:
            break
        if item.kind == "message" and item.role == "assistant":
            reported = reported_tokens(item.event.meta.get("usage"))
            if reported:
                return reported + sum(i.tokens for i in tail[index + 1:])
    return round(view.tokens * ratio)


def errors(call: RecordedCall) -> dict[str, tuple[float, float]]:
    """Situation → (our error, today's error), both relative and signed."""
    ratio = ratio_for(call.model)
    found = {call.situation: (call.error(call.estimate(ratio)), call.error(today(call.view, ratio)))}
    calibration = call.view.calibrations.get(call.model)
    if calibration is not None:
        found["anchor ignored"] = (call.error(calibration.predict(call.view.tokens, ratio)),
                                   call.error(round(call.view.tokens * ratio)))
    return found


def summary(values: list[float]) -> str:
    if not values:
        return "—"
    absolute = sorted(abs(v) for v in values)
    p90 = absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))]
    return f"{statistics.median(absolute):.1%} / {p90:.1%} / {absolute[-1]:.1%}"


def main() -> int:
    quiet()
    if not TRANSCRIPTS.is_dir():
        print(f"no transcripts at {TRANSCRIPTS}")
        return 1
    pooled: dict[str, list[tuple[float, float]]] = defaultdict(list)
    rows = []
    firsts = []
    with sqlite_stores() as (make, _):
        store = make("calibration")
        import_path(store, str(TRANSCRIPTS))
        for info in sorted(store.sessions(), key=lambda s: -s.head):
            per: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for call in recorded_calls(info.id, store.transcript(info.id)):
                for situation, pair in errors(call).items():
                    per[situation].append(pair)
                if call.situation == "after-compaction":
                    firsts.append([f"{info.metadata.get('source')} {info.id[:8]}", f"v{call.version}",
                                   call.reported, call.estimate(ratio_for(call.model)),
                                   f"{call.error(call.estimate(ratio_for(call.model))):+.1%}",
                                   today(call.view, ratio_for(call.model)),
                                   f"{call.error(today(call.view, ratio_for(call.model))):+.1%}"])
            if not per:
                continue
            for situation, pairs in per.items():
                pooled[situation].extend(pairs)
            name = f"{info.metadata.get('source')} {info.id[:8]}"
            for situation in SITUATIONS:
                pairs = per.get(situation, [])
                if pairs:
                    rows.append([name, situation, len(pairs), summary([o for o, _ in pairs]),
                                 summary([t for _, t in pairs])])
                    name = ""
        store.close()
    print("Errors against the provider's prompt count, |estimate − provider| / provider: p50 / p90 / max")
    print_table(["transcript", "situation", "calls", "calibrated", "today"], rows)
    print("\nAll transcripts together")
    print_table(["situation", "calls", "calibrated", "today"],
                [[s, len(pooled[s]), summary([o for o, _ in pooled[s]]), summary([t for _, t in pooled[s]])]
                 for s in SITUATIONS if pooled[s]])
    print("\nThe first call after each compaction (goal: within 10%)")
    print_table(["transcript", "call", "provider", "calibrated", "error", "today", "error"], firsts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
