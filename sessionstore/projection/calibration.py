"""Self-calibrating token estimates: what the provider will count, learned from what it counted.

Our counts (tiktoken's cl100k_base, stored per event at append) are not the provider's: Claude
counts ~1.2–1.4 tokens per cl100k token, and a request holds what the transcript never
records — the agent's system prompt and tool schemas (~26,000 tokens for Claude Code), the
reminders and files it injects. While the latest usage report is valid the view anchors on it
(`UsageAnchor`); when none is — after a compaction, a prune, a rewrite, or for another model —
the estimate is ``overhead + ratio × view.tokens``, learned per model from the session itself:

- every usage report is an observation: our count of the request it answered (the view as it
  was then, rebuilt from the stored counts in one forward pass — `Scan`) against the
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol

from ..events import StoredEvent
from .fold import Marker
from .texts import MESSAGE_OVERHEAD_TOKENS
from .usage import assistant_side, message_id, prompt_tokens, same_response
from .view import ProjectionInput, ViewItem, resent

DETAILS_KEY: Final = "calibration"
# Before the session's own reports span a range of sizes, the slope leans on this prior: one
# observation PRIOR_SPREAD tokens from the mean, at PRIOR_RATIO (a counter that is the provider's).
PRIOR_RATIO: Final = 1.0
PRIOR_SPREAD: Final = 3_000
RATIO_BOUNDS: Final = (0.5, 3.0)


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


class Viewed(Protocol):
    """What the calibration reads of a view: a `ContextView` (`context`, which sits above this
    module: its `calibrations` and `window_estimate` call the functions below)."""

    @property
    def tokens(self) -> int: ...

    @property
    def compaction(self) -> StoredEvent | None: ...

    @property
    def source(self) -> ProjectionInput: ...

    @property
    def calibrations(self) -> Mapping[str | None, Calibration]: ...

    def scan(self) -> Scan: ...


def calibration_details(view: Viewed) -> dict[str, Any]:
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


def learn_view(view: Viewed) -> dict[str | None, Calibration]:
    """Per model: the calibration the latest compaction recorded, updated with the view's reports
    (read by the forward pass the view keeps: `view.scan()`)."""
    scan = view.scan()
    residual = view.tokens - scan.total
    known = recorded(view.compaction)
    for model, sums in scan.sums.items():
        known[model] = sums.calibration(model, residual, known.get(model))
    return known


@dataclass(frozen=True, slots=True)
class Sums:
    """One model's observations since the latest compaction, as exact integer sums: our counts
    (`x`, without the view's residual — see `Scan`) and the provider's (`y`). Integers, so that
    a view folded forward and one rebuilt learn the very same floats."""

    n: int
    sx: int
    sy: int
    sxx: int
    sxy: int
    first: tuple[int, int]  # (x, y) of the first observation
    last: tuple[int, int, int]  # (version, x, y) of the latest

    def add(self, version: int, x: int, y: int) -> Sums:
        return Sums(self.n + 1, self.sx + x, self.sy + y, self.sxx + x * x, self.sxy + x * y, self.first,
                    (version, x, y))

    @classmethod
    def of(cls, version: int, x: int, y: int) -> Sums:
        return cls(1, x, y, x * x, x * y, (x, y), (version, x, y))

    def calibration(self, model: str | None, residual: int, prior: Calibration | None = None) -> Calibration:
        """The calibration of these observations, our counts shifted by `residual`, their slope's
        evidence pooled with `prior`'s; the intercept is their own (the latest observation)."""
        # Centred sums of squares and products: a shift of every x by `residual` leaves them be.
        sxx = (self.n * self.sxx - self.sx * self.sx) / self.n
        sxy = (self.n * self.sxy - self.sx * self.sy) / self.n
        n = self.n
        if prior is not None:
            n, sxx, sxy = n + prior.samples, sxx + prior.sxx, sxy + prior.sxy
        version, x, y = self.last
        first = prior.first if prior is not None else (self.first[0] + residual, self.first[1])
        return Calibration(model, n, sxx, sxy, x + residual, y, version, *first)


def resent_tokens(view: Viewed) -> int:
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


@dataclass(frozen=True, slots=True)
class Scan:
    """The forward pass over a view's kept tail that finds its usage reports and our count of
    each request they answer, and where it stands after the events it has read.

    Our count of the view at version v is the view's count now, less what the events after v
    added: each event its count as the view holds it (at its stored count until a marker
    changed it, then as the view counts it now: the change falls at the marker's version; a
    dropped event leaves at its drop), each change of speaker a message's overhead. So it is
    ``residual + upto(v)``, where `upto` runs forward over the events and `residual` (what the
    view holds besides them: system prompt, summary, restored files, placeholders) is the same
    for every v. The pass keeps `upto` exactly, and each model's observations as integer sums of
    ``(upto, reported)`` (`Sums`): a view brought up to date reads only the events it gained.
    """

    since: int  # the latest compaction's version: reports from before it are not observations
    upto: int = 0
    pending: tuple[tuple[int, int], ...] = ()  # (version, change) of markers after the position
    speaker: str | None = None
    previous: StoredEvent | None = None
    start: StoredEvent | None = None  # the first event of the response being read
    start_upto: int = 0  # `upto` just before it
    reported: str | None = None  # the message id of the latest report
    sums: Mapping[str | None, Sums] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def total(self) -> int:
        """`upto` after every event and marker: the view's count less its residual."""
        return self.upto + sum(change for _, change in self.pending)

    def read(self, events: Iterable[StoredEvent], now: Mapping[int, ViewItem],
             markers: Mapping[int, Marker] = MappingProxyType({}),
             dropped_calls: Mapping[str, int] = MappingProxyType({})) -> Scan:
        """The pass after the kept tail's next `events` (in-context, version order); `now` holds
        their items as the view counts them; `markers` and `dropped_calls` (call id → the drop
        that took it) say what left the view. Claude Code repeats a response's usage on every
        block: the first report of a response is its request's."""
        upto, speaker, previous, start, start_upto, reported = (self.upto, self.speaker, self.previous, self.start,
                                                               self.start_upto, self.reported)
        pending = list(self.pending)
        sums: dict[str | None, Sums] | None = None
        for event in events:
            version = event.version
            while pending and pending[0][0] < version:
                upto += pending.pop(0)[1]
            if reported is not None and message_id(event) == reported:
                previous = event  # a later block of a reported response, after one of its results
            else:
                if not same_response(previous, event):
                    start, start_upto = (event if assistant_side(event) else None), upto
                previous = event
                prompt = prompt_tokens(event.meta.get("usage")) if start is not None else 0
                if prompt and start is not None:
                    if start.version > self.since:
                        model = event.meta.get("model")
                        model = model if isinstance(model, str) else None
                        sums = dict(self.sums) if sums is None else sums
                        known = sums.get(model)
                        sums[model] = (Sums.of(start.version, start_upto, prompt) if known is None
                                       else known.add(start.version, start_upto, prompt))
                    reported, start = message_id(event), None
            item = now.get(version)
            if item is not None and item.marker is not None and item.marker > version:
                upto += event.tokens
                bisect.insort(pending, (item.marker, item.tokens - event.tokens))
            elif item is not None:
                upto += item.tokens
            else:
                marker = markers.get(version)
                gone = marker.event.version if marker is not None and marker.action == "drop" else None
                call_id = event.payload.get("call_id")
                gone = gone or (dropped_calls.get(call_id) if isinstance(call_id, str) else None)
                if gone is None:
                    continue
                upto += event.tokens
                bisect.insort(pending, (gone, -event.tokens))
            said = "assistant" if assistant_side(event) else "user"
            if said != speaker:
                upto += MESSAGE_OVERHEAD_TOKENS
                speaker = said
        return Scan(self.since, upto, tuple(pending), speaker, previous, start, start_upto, reported,
                    self.sums if sums is None else MappingProxyType(sums))


def dropped_calls(events: Iterable[StoredEvent], markers: Mapping[int, Marker]) -> dict[str, int]:
    """Call id → the first drop that took its call or result (a drop takes the partner with it,
    `fold.drop_marked_pairs`)."""
    found: dict[str, int] = {}
    for event in events:
        marker = markers.get(event.version)
        call_id = event.payload.get("call_id")
        if marker is not None and marker.action == "drop" and isinstance(call_id, str):
            found[call_id] = min(marker.event.version, found.get(call_id, marker.event.version))
    return found
