"""Self-calibrating token estimates: what the provider will count, learned from what it counted.

Our counts (tiktoken's cl100k_base, stored per event at append) are not the provider's: Claude
counts ~1.2–1.4 tokens per cl100k token, and a request holds what the transcript never
records — the agent's system prompt and tool schemas (~26,000 tokens for Claude Code), the
reminders and files it injects. While the latest usage report is valid the view anchors on it
(`UsageAnchor`); when none is — after a compaction, a prune, a rewrite, or for another model —
the estimate is ``overhead + ratio × view.tokens``, learned per model from the session itself:

- every usage report is an `Observation`: our count of the request it answered (the view as it
  was then, rebuilt from the stored counts in one pass — `request_estimates`) against the
  provider's prompt count;
- `ratio` is the least-squares slope of the provider's counts on ours. Compactions split a
  session into segments, each with its own intercept (what the agent injects changes: Claude
  Code re-attaches files after compacting) and one shared slope (the tokenizer does not
  change): each compaction records its segment's statistics in ``details["calibration"]``
  (`calibration_details`), and the next segment pools them with its own;
- `overhead` is the latest observation's residual: what the provider counted beyond
  ``ratio × our count`` on the last call. It follows what an agent adds mid-session (tools
  loaded on demand, a mode entered, the reminders it injects) where an intercept fitted over
  the whole session would not.

The first call after a compaction is different: the compaction dropped what the agent had
injected along the way, and the agent sends again what it always sends with a fresh
conversation. So the estimate there (`Calibration.after_compaction`) starts from the residual
of the session's *first* call (`base`: system prompt, tools, what the agent attaches to a new
conversation), and counts, besides the view, what the agent sent again with the summary that
the view does not hold: the files Claude Code re-attaches, the messages Codex's replacement
history keeps (`resent_tokens`: the events the importer named in the compaction's
``meta["resent"]``). The first report after the compaction takes over from there.

Pure: events in, figures out; no tokenizer, no database.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..events import StoredEvent
from .fold import MESSAGE_OVERHEAD_TOKENS, collect_markers, kept_tail
from .usage import assistant_side, reports
from .view import resent

if TYPE_CHECKING:
    from .context import ContextView

DETAILS_KEY: Final = "calibration"
# Before the session's own reports span a range of sizes, the slope leans on this prior: one
# observation PRIOR_SPREAD tokens from the mean, at PRIOR_RATIO (a counter that is the provider's).
PRIOR_RATIO: Final = 1.0
PRIOR_SPREAD: Final = 3_000
RATIO_BOUNDS: Final = (0.5, 3.0)


@dataclass(frozen=True, slots=True)
class Observation:
    """One usage report: our count of the request against the provider's."""

    version: int  # the first event of the response the provider reported on
    model: str | None
    estimate: int  # our count of the view just before `version`
    reported: int  # the provider's prompt tokens for that request


@dataclass(frozen=True, slots=True)
class Calibration:
    """Provider tokens ≈ `overhead()` + `ratio()` × our count, for one model.

    Kept as the statistics they come from, so that they pool across compactions and take the
    caller's prior: `sxx`/`sxy`, the centred sums of squares and products of every segment
    learned from (the slope's evidence), and the latest observation (`estimate`, `reported`).
    """

    model: str | None
    samples: int
    sxx: float
    sxy: float
    estimate: int  # our count of the latest request observed
    reported: int  # the provider's count of it
    version: int  # the first event of the response that reported it
    # The session's first observation for the model (`base`); a record without it: the latest.
    first_estimate: int | None = None
    first_reported: int | None = None

    def ratio(self, prior: float = PRIOR_RATIO) -> float:
        """Provider tokens per token of ours: the pooled least-squares slope, leaning on `prior`
        (e.g. the policy's `estimate_ratio`) while the observations span few sizes."""
        weight = PRIOR_SPREAD ** 2
        return min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], (self.sxy + weight * prior) / (self.sxx + weight)))

    def overhead(self, prior: float = PRIOR_RATIO) -> int:
        """What the provider counted beyond ``ratio × our count`` on the latest call: the system
        prompt, tool schemas and whatever else the agent sends that the transcript does not hold."""
        return round(self.reported - self.ratio(prior) * self.estimate)

    def predict(self, tokens: int, prior: float = PRIOR_RATIO) -> int:
        """The provider's count of a view that our count puts at `tokens`."""
        return max(0, round(self.reported + self.ratio(prior) * (tokens - self.estimate)))

    @property
    def first(self) -> tuple[int, int]:
        """(our count, the provider's) of the session's first call observed for the model."""
        if self.first_estimate is None or self.first_reported is None:
            return self.estimate, self.reported
        return self.first_estimate, self.first_reported

    def base(self, prior: float = PRIOR_RATIO) -> int:
        """What the provider counted beyond ``ratio × our count`` on the session's first call:
        what the agent sends with any conversation (system prompt, tools, what it attaches to a
        new one), without what it injected along the way."""
        estimate, reported = self.first
        return round(reported - self.ratio(prior) * estimate)

    def after_compaction(self, tokens: int, prior: float = PRIOR_RATIO) -> int:
        """The provider's count of the first request after a compaction, whose view and what the
        agent sent again besides it our count puts at `tokens`: `base` + ratio × `tokens`."""
        estimate, reported = self.first
        return max(0, round(reported + self.ratio(prior) * (tokens - estimate)))

    def as_details(self) -> dict[str, Any]:
        first = {} if self.first_estimate is None else {"first_estimate": self.first_estimate,
                                                        "first_reported": self.first_reported}
        return {"model": self.model, "samples": self.samples, "sxx": self.sxx, "sxy": self.sxy,
                "estimate": self.estimate, "reported": self.reported, "version": self.version, **first,
                "ratio": round(self.ratio(), 4), "overhead": self.overhead(),  # these three for people
                "base": self.base()}

    @classmethod
    def from_details(cls, data: Any) -> Calibration | None:
        """A recorded calibration, or None when the record is not one (details are free-form JSON)."""
        if not isinstance(data, Mapping):
            return None
        try:
            model = data.get("model")
            calibration = cls(model if isinstance(model, str) else None, int(data["samples"]), float(data["sxx"]),
                              float(data["sxy"]), int(data["estimate"]), int(data["reported"]), int(data["version"]),
                              *_first(data))
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        first_estimate, first_reported = calibration.first
        valid = (calibration.samples > 0 and 0 <= calibration.sxx < math.inf and math.isfinite(calibration.sxy)
                 and calibration.estimate >= 0 and calibration.reported > 0 and first_estimate >= 0
                 and first_reported > 0)
        return calibration if valid else None


def _first(data: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """A record's first observation; (None, None) in records made before it was kept."""
    if data.get("first_estimate") is None or data.get("first_reported") is None:
        return None, None
    return int(data["first_estimate"]), int(data["first_reported"])


def for_model(calibrations: Mapping[str | None, Calibration], model: str | None) -> Calibration | None:
    """The calibration an estimate for `model` rests on: the model's own, else — a model the
    session switched to, which has not reported yet — that of the latest model of the same
    family (``claude-…``, ``gpt-…``): the agent sends the same system prompt and tools whichever
    model answers, and one vendor's models share a tokenizer. None for a model of another family."""
    own = calibrations.get(model)
    if own is not None or model is None:
        return own
    kin = [c for c in calibrations.values() if c.model is not None and _family(c.model) == _family(model)]
    return max(kin, key=lambda c: c.version, default=None)


def _family(model: str) -> str:
    """A model name's vendor prefix: ``claude-haiku-4-5`` → ``claude``, ``gpt-5.5`` → ``gpt``."""
    return model.lower().split("-", 1)[0]


def calibration_details(view: ContextView) -> dict[str, Any]:
    """Entries for a compaction's `details`: what `view` taught about token estimates, so that
    views after the compaction — which no longer hold the usage reports — can still be estimated."""
    calibrations = view.calibrations
    if not calibrations:
        return {}
    return {DETAILS_KEY: [c.as_details() for c in sorted(calibrations.values(), key=lambda c: c.version)]}


def recorded(compaction: StoredEvent | None) -> dict[str | None, Calibration]:
    """The calibrations a compaction recorded, per model: in its details when our planner made
    it, in its meta when it was imported (another agent's compaction: the importer learned them
    from the usage reports before it, and the payload stays the file's, so re-imports match)."""
    details = (compaction.payload.get("details") or {}) if compaction is not None else {}
    entries = details.get(DETAILS_KEY) if isinstance(details, Mapping) else None
    if entries is None and compaction is not None:
        entries = compaction.meta.get(DETAILS_KEY)
    found = (Calibration.from_details(e) for e in entries) if isinstance(entries, list) else ()
    return {c.model: c for c in found if c is not None}


def learn_view(view: ContextView) -> dict[str | None, Calibration]:
    """Per model: the calibration the latest compaction recorded, updated with the view's reports."""
    known = recorded(view.compaction)
    by_model: dict[str | None, list[Observation]] = {}
    for observation in observations(view):
        by_model.setdefault(observation.model, []).append(observation)
    for model, seen in by_model.items():
        known[model] = learn(seen, known.get(model))
    return known


def learn(seen: Sequence[Observation], prior: Calibration | None = None) -> Calibration:
    """The calibration of one segment's observations (in version order), its slope's evidence
    pooled with `prior`'s; the intercept is the segment's own (its latest observation)."""
    if not seen:
        raise ValueError("learn() needs at least one observation")
    n = len(seen)
    mean_x = sum(o.estimate for o in seen) / n
    mean_y = sum(o.reported for o in seen) / n
    sxx = sum((o.estimate - mean_x) ** 2 for o in seen)
    sxy = sum((o.estimate - mean_x) * (o.reported - mean_y) for o in seen)
    if prior is not None:
        n, sxx, sxy = n + prior.samples, sxx + prior.sxx, sxy + prior.sxy
    last = seen[-1]
    first = prior.first if prior is not None else (seen[0].estimate, seen[0].reported)
    return Calibration(last.model, n, sxx, sxy, last.estimate, last.reported, last.version, *first)


def resent_tokens(view: ContextView) -> int:
    """Our count of what the agent sent again with its compaction's summary besides the view
    (the events the importer named in ``meta["resent"]``: files Claude Code re-attached, the
    messages of Codex's replacement history); 0 for this library's own compactions, whose
    view holds everything it sends."""
    shares = resent(view.compaction)
    if not shares:
        return 0
    events = {e.version: e for e in (*view.source.anchored, *view.source.tail) if e.version in shares}
    return round(sum(e.tokens * shares[v] for v, e in events.items()))


# --------------------------------------------------------------------------- our count, back in time


def observations(view: ContextView) -> list[Observation]:
    """The usage reports made since the view's latest compaction, each against our count of the
    request it answered. Reports from before it describe a context the view cannot rebuild (the
    compaction recorded what they taught)."""
    since = view.compaction.version if view.compaction is not None else 0
    made = [r for r in reports(kept_tail(view.source)) if r.start.version > since]
    if not made:  # most turns of a session that reports no usage: no pass over the view
        return []
    estimate = request_estimates(view)
    return [Observation(r.start.version, r.model, estimate(r.start.version - 1), r.prompt) for r in made]


def request_estimates(view: ContextView) -> Callable[[int], int]:
    """``estimate(version)``: our count of the view as it was at `version`, for any version from
    the view's first kept one on — `view.tokens` minus what the view gained after `version`.

    One pass over the view's events instead of a projection per version: an event counts from
    its version on, at its stored count until a marker changes it (a prune clears or drops it,
    a rewrite outlines it), then as the view counts it now; each change of speaker adds a
    message's overhead. The summary, restored files and system prompt are those of the view.
    """
    now = {item.version: item for item in view.items if item.origin == "tail"}
    tail = kept_tail(view.source)
    markers = collect_markers(view.source.tail)
    dropped_calls: dict[str, int] = {}  # a drop takes the call's partner with it (fold.drop_marked_pairs)
    for event in tail:
        marker = markers.get(event.version)
        call_id = event.payload.get("call_id")
        if marker is not None and marker.action == "drop" and isinstance(call_id, str):
            dropped_calls[call_id] = min(marker.event.version, dropped_calls.get(call_id, marker.event.version))
    changes: list[tuple[int, int]] = []
    role: str | None = None
    for event in tail:
        item = now.get(event.version)
        if item is not None and item.marker is not None and item.marker > event.version:
            changes += [(event.version, event.tokens), (item.marker, item.tokens - event.tokens)]
        elif item is not None:
            changes.append((event.version, item.tokens))
        else:
            marker = markers.get(event.version)
            gone = marker.event.version if marker is not None and marker.action == "drop" else None
            call_id = event.payload.get("call_id")
            gone = gone or (dropped_calls.get(call_id) if isinstance(call_id, str) else None)
            if gone is None:
                continue
            changes += [(event.version, event.tokens), (gone, -event.tokens)]
        speaker = "assistant" if assistant_side(event) else "user"
        if speaker != role:
            changes.append((event.version, MESSAGE_OVERHEAD_TOKENS))
            role = speaker
    changes.sort()
    versions = [v for v, _ in changes]
    later = [0] * (len(changes) + 1)  # later[i] = what changes[i:] add
    for i in range(len(changes) - 1, -1, -1):
        later[i] = later[i + 1] + changes[i][1]

    def estimate(version: int) -> int:
        return view.tokens - later[bisect.bisect_right(versions, version)]

    return estimate

