"""Level 3's summariser requests, planned as steps: one request, or slices whose partial
summaries are reduced — summaries of summaries — until one fits its budget.

Strategies (`CompactionPolicy.strategy`):
- ``single``: one request; if it would overflow the summariser's context (estimated, or the
  summariser says so), the history is sliced and reduced as with ``parallel-stitch``;
- ``parallel-stitch``: the slices are summarised concurrently (one batch); then the partial
  summaries are merged in groups that each fit the summariser's context, level after level,
  until one is left — stitching N partials side by side would grow with N;
- ``sequential-rolling``: each slice updates the running summary (anchored, iterative).

A slice that still overflows is halved, down to single items; a single item too big for any
request is truncated in the request (never in the view). Every answer is held to its budget
with the store's counter, whatever the summariser made of `max_tokens`.

These are generators yielding `SummaryBatch`es (see `summarizers.drive`): the planning is
written once and runs under a blocking driver and an asyncio one.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any, Final, TypeVar

from ..projection.render import render_anthropic
from ..projection.view import ViewItem
from ..summarizers.base import ContextOverflow, SummarizerError, SummaryBatch, SummaryRequest
from ..summarizers import bounded
from ..summarizers.fit import fit_summary_text, shrink_section
from ..summarizers.parse import is_sectioned, parse_sections
from ..summarizers.paths import MODIFIED_LABEL, READ_LABEL, ROOT_LABEL, is_path_line, path_lines
from ..summarizers.sections import every_heading, format_sections
from ..summarizers.typed import USER_MESSAGE_CHARS, typed_messages, user_entry
from ..summarizers.window import ModelWindow, learned_from_error
from ..tokens import TokenCounter
from .cut import safe_cuts
from .policy import CompactionPolicy
from .truncate import fit_text, truncated_item

T = TypeVar("T")
Steps = Generator[SummaryBatch, list["str | Exception"], T]

_MAX_HALVINGS: Final = 8
# What a request holds besides its material: system prompt, task, section guide, budget line
# (~900 tokens measured; the rest is room for a model's own chat template and tokenizer).
PROMPT_OVERHEAD_TOKENS: Final = 1_500
# The same with the brief prompts (`SummaryRequest.brief`; ~250 tokens measured).
BRIEF_OVERHEAD_TOKENS: Final = 400
# A summariser whose window is below this gets the brief prompts: the full ones would take half
# of a 2,048-token window.
BRIEF_BELOW_TOKENS: Final = 16_000
# Times one summarisation starts over when an overflow teaches a smaller window (each time with
# what it learned); past that, overflowing slices are halved.
_MAX_REPLANS: Final = 3
# The turn prefix's note takes this share of the summary budget.
_PREFIX_SHARE: Final = 0.2
# Summaries are asked for this share of their budget: a summariser measures its length in its
# own units (a model's tokenizer, characters), and an answer over budget has to be cut.
_ASK_SHARE: Final = 0.9


def _asked(budget: int) -> int:
    return max(1, int(budget * _ASK_SHARE))


def _budget_of(request: SummaryRequest) -> int:
    return max(request.max_tokens, int(request.max_tokens / _ASK_SHARE))


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    text: str
    calls: int
    slices: int
    merge_levels: int = 0
    window: ModelWindow | None = None  # the summariser's window planned for (learned during the run, or given)


def _tokens(items: Sequence[ViewItem]) -> int:
    return sum(item.tokens for item in items)


def messages_of(items: Sequence[ViewItem]) -> tuple[list[dict[str, Any]], tuple[tuple[int, ...], ...]]:
    """The items as valid Anthropic-shaped messages (what summarisers read), and for each
    message the version of each of its blocks (`SummaryRequest.versions`)."""
    rendered = render_anthropic(items)
    return rendered.messages, tuple(tuple(group.origins) for group in rendered.groups)


def split_slices(items: Sequence[ViewItem], limit: int) -> list[list[ViewItem]]:
    """Consecutive slices of about `limit` tokens, cut between turns; a turn alone over `limit`
    (thousands of calls) between its calls; and a stretch with no such cut (calls answered
    late, after later messages) anywhere, as a last resort — rendering keeps each request
    valid, at the cost of the results whose call lands in the slice before."""
    slices = [list(items)]
    for cuts_of in (safe_cuts, _call_cuts, _any_cuts):
        slices = [piece for whole in slices
                  for piece in (_packed(whole, cuts_of(whole), limit) if _tokens(whole) > limit else [whole])]
    return slices


def _call_cuts(items: Sequence[ViewItem]) -> list[int]:
    return safe_cuts(items, at_calls=True)


def _any_cuts(items: Sequence[ViewItem]) -> list[int]:
    return list(range(len(items)))


def _packed(items: Sequence[ViewItem], safe: Sequence[int], limit: int) -> list[list[ViewItem]]:
    cuts = [c for c in safe if c > 0] + [len(items)]
    upto = [0, *accumulate(item.tokens for item in items)]  # upto[i]: tokens of items[:i]
    slices: list[list[ViewItem]] = []
    start = 0
    previous_cut = 0
    for cut in cuts:
        if upto[cut] - upto[start] > limit and previous_cut > start:
            slices.append(list(items[start:previous_cut]))
            start = previous_cut
        previous_cut = cut
    if start < len(items):
        slices.append(list(items[start:]))
    return slices


def _halves(items: Sequence[ViewItem]) -> tuple[list[ViewItem], list[ViewItem]] | None:
    cuts = [c for c in _call_cuts(items) if 0 < c < len(items)] or list(range(1, len(items)))
    if not cuts:
        return None
    middle = min(cuts, key=lambda c: abs(_tokens(items[:c]) - _tokens(items[c:])))
    return list(items[:middle]), list(items[middle:])


class _Replan(Exception):
    """An overflow taught the summariser's window: the summarisation starts over, planned for it."""


@dataclass
class _Run:
    """One summarisation's bookkeeping: the summariser's window, request sizes, the calls made,
    every answer held to its budget."""

    counter: TokenCounter
    context: int  # the summariser's window in the store's units (`ModelWindow.planning_tokens`)
    files: int  # tokens of the file lists every request carries
    window: ModelWindow | None = None
    calls: int = 0
    slices: int = 0
    levels: int = 0
    replans: int = 0
    _counts: dict[str, int] = field(default_factory=dict)

    def tokens(self, text: str | None) -> int:
        if not text:
            return 0
        if text not in self._counts:
            self._counts[text] = self.counter.count(text)
        return self._counts[text]

    @property
    def brief(self) -> bool:
        """A small window gets the brief prompts (`SummaryRequest.brief`)."""
        return self.context < BRIEF_BELOW_TOKENS

    @property
    def fixed(self) -> int:
        """What every request holds besides its material."""
        return (BRIEF_OVERHEAD_TOKENS if self.brief else PROMPT_OVERHEAD_TOKENS) + self.files

    def most_out(self) -> int:
        """The longest answer a request may ask for: two partial summaries and the answer of
        their merge must fit one request, or the merge could never be asked."""
        return max(1, (self.context - self.fixed) // 3)

    def material(self, out: int) -> int:
        """Tokens of material one request may carry next to an answer of `out` tokens."""
        return max(self.context // 8, self.context - out - self.fixed)

    def request(self, base: SummaryRequest, items: Sequence[ViewItem] = (), **changes: Any) -> SummaryRequest:
        """`base` carrying `items` (or the `partials` of `changes`), with the planner's estimate of its size."""
        request = replace(base, brief=self.brief, **changes)
        if items:
            messages, versions = messages_of(items)
            request = replace(request, messages=messages, versions=versions)
        material = _tokens(items) + sum(self.tokens(p) for p in request.partials)
        return replace(request, estimated_tokens=self.fixed + material + self.tokens(request.previous_summary))

    def learn(self, request: SummaryRequest, overflow: ContextOverflow) -> None:
        """An overflow that states the window: plan for it from now on (`_Replan`), when that is
        smaller than what was planned for; else the caller slices further."""
        window = overflow.window or (overflow.limit + request.max_tokens if overflow.limit else None)
        learned = learned_from_error(window, overflow.tokens, request.estimated_tokens, "a context-length error")
        if learned is None or learned.planning_tokens() >= self.context or self.replans >= _MAX_REPLANS:
            return
        self.window, self.context = learned, learned.planning_tokens()
        self.replans += 1
        raise _Replan(str(overflow))

    def ask(self, requests: Sequence[SummaryRequest]) -> Steps[list[str | ContextOverflow]]:
        """One batch; an overflow comes back to the caller (who slices further) unless it
        teaches the window (`learn`), any other failure is raised; every summary is held to
        its request's budget."""
        self.calls += len(requests)
        answers = yield SummaryBatch(tuple(requests))
        if len(answers) != len(requests):
            raise SummarizerError(f"the driver answered {len(answers)} of {len(requests)} summary requests")
        for request, answer in zip(requests, answers):
            if isinstance(answer, ContextOverflow):
                self.learn(request, answer)
        held: list[str | ContextOverflow] = []
        for request, answer in zip(requests, answers):
            if isinstance(answer, ContextOverflow):
                held.append(answer)
            elif isinstance(answer, Exception):
                raise answer
            elif request.purpose == "turn_prefix" and not is_sectioned(answer):  # a note, not a summary
                held.append(answer if self.tokens(answer) <= _budget_of(request) else fit_text(
                    shrink_section("Current work", answer, len(answer) * _budget_of(request) // self.tokens(answer)),
                    _budget_of(request), self.counter))
            else:
                held.append(held_to(answer, _budget_of(request), self.counter))
        return held


def _fitting(items: Sequence[ViewItem], limit: int, counter: TokenCounter) -> list[ViewItem]:
    """The items, each one bigger than `limit` truncated (for the request only)."""
    return [truncated_item(item, limit, counter) if item.tokens > limit else item for item in items]


def _rolling(run: _Run, items: Sequence[ViewItem], request: SummaryRequest, depth: int = 0) -> Steps[str]:
    """`items` summarised as an update of `request.previous_summary`, halving on overflow."""
    (answer,) = yield from run.ask([run.request(request, items)])
    if not isinstance(answer, ContextOverflow):
        return answer
    halves = _halves(items) if depth < _MAX_HALVINGS else None
    if halves is None:
        raise SummarizerError(f"the history could not be summarised even in single messages: {answer}") from answer
    first = yield from _rolling(run, halves[0], request, depth + 1)
    return (yield from _rolling(run, halves[1], replace(request, previous_summary=first), depth + 1))


def _stitch(run: _Run, pieces: Sequence[Sequence[ViewItem]], request: SummaryRequest) -> Steps[list[str]]:
    """Partial summaries of consecutive pieces, all asked at once (the first one anchored on
    the previous summary); an overflowing piece is halved and asked again."""
    pending = [((i,), list(piece), request if i == 0 else replace(request, previous_summary=None), 0)
               for i, piece in enumerate(pieces)]
    done: dict[tuple[int, ...], str] = {}
    while pending:
        answers = yield from run.ask([run.request(req, piece) for _, piece, req, _ in pending])
        retry = []
        for (key, piece, req, depth), answer in zip(pending, answers):
            if not isinstance(answer, ContextOverflow):
                done[key] = answer
                continue
            halves = _halves(piece) if depth < _MAX_HALVINGS else None
            if halves is None:
                raise SummarizerError(f"the history could not be summarised even in single messages: {answer}"
                                      ) from answer
            retry += [(key + (0,), halves[0], req, depth + 1),
                      (key + (1,), halves[1], replace(req, previous_summary=None), depth + 1)]
        pending = retry
    return [done[key] for key in sorted(done)]


def _groups(sizes: Sequence[int], room: int) -> list[range]:
    """Consecutive groups of partials, each within `room` tokens, at least two a group (so
    that every level halves the count at worst)."""
    groups: list[range] = []
    start = 0
    while start < len(sizes):
        end, total = start, 0
        while end < len(sizes) and (end - start < 2 or total + sizes[end] <= room):
            total += sizes[end]
            end += 1
        groups.append(range(start, end))
        start = end
    return groups


def _reduce(run: _Run, partials: list[str], request: SummaryRequest) -> Steps[str]:
    """Merge partial summaries, level after level, until one is left. Each merge request fits
    the summariser's context; when one overflows anyway, the groups get smaller."""
    base = replace(request, purpose="merge", messages=(), versions=(), previous_summary=None)
    room = run.material(_budget_of(request))
    while len(partials) > 1:
        groups = _groups([run.tokens(p) for p in partials], room)
        merging = [g for g in groups if len(g) > 1]
        answers = iter((yield from run.ask([run.request(base, partials=tuple(partials[i] for i in g))
                                            for g in merging])))
        run.levels += 1
        merged: list[str] = []
        for group in groups:
            if len(group) == 1:
                merged.append(partials[group[0]])
                continue
            answer = next(answers)
            if not isinstance(answer, ContextOverflow):
                merged.append(answer)
            elif len(group) == 2:
                raise SummarizerError("the summariser's context cannot hold even two partial summaries of "
                                      f"{_budget_of(request)} tokens: {answer}") from answer
            else:
                merged.extend(partials[i] for i in group)
                room = min(room, sum(run.tokens(partials[i]) for i in group) // 2)
        partials = merged
    return partials[0]


def held_to(summary: str, max_tokens: int, counter: TokenCounter) -> str:
    """A summary of any writer in our sections, within `max_tokens` by `counter`: reduced
    section by section by priority (`summarizers.fit`), the user's messages, pending tasks and
    current work last. Only a budget too small for the headings themselves falls back to
    cutting the text (`fit_text`), which no policy's floor reaches."""
    fitted = fit_summary_text(summary, max_tokens, counter.count)
    return fitted if counter.count(fitted) <= max_tokens else fit_text(fitted, max_tokens, counter)


def _reduced(summary: str, request: SummaryRequest, counter: TokenCounter) -> str:
    """An older or another agent's summary too big to be updated in one request, within the
    request's budget: reduced by section priority, no model call, nothing cut in its middle."""
    return held_to(summary, _budget_of(request), counter)


def _summarise(run: _Run, items: Sequence[ViewItem], request: SummaryRequest,
               policy: CompactionPolicy) -> Steps[str]:
    """One summary of `items` (updating `request.previous_summary`) within the request's budget."""
    out = _budget_of(request)
    previous = request.previous_summary
    if previous and run.tokens(previous) > run.material(out) // 2:
        # A previous summary too big to be updated in one request: reduced first.
        previous = _reduced(previous, request, run.counter)
        request = replace(request, previous_summary=previous)
    strategy = policy.strategy
    carried = max(out, run.tokens(previous)) if strategy == "sequential-rolling" else run.tokens(previous)
    limit = run.material(out) - carried  # what each request carries besides its slice
    limit = max(run.material(out) // 4, limit)
    items = _fitting(items, limit // 2, run.counter)
    slice_tokens = min(limit, policy.slice_tokens or max(1, run.context // 2))
    pieces = [list(items)] if _tokens(items) <= limit else split_slices(items, slice_tokens)
    run.slices += len(pieces)
    if strategy == "sequential-rolling":
        running = previous
        for piece in pieces:
            running = yield from _rolling(run, piece, replace(request, previous_summary=running))
        return running or ""
    if strategy == "single" and len(pieces) == 1:
        (answer,) = yield from run.ask([run.request(request, pieces[0])])
        if not isinstance(answer, ContextOverflow):
            return answer
        pieces = split_slices(items, slice_tokens // 2)
        if len(pieces) == 1:
            pieces = list(_halves(items) or [list(items)])
        run.slices += len(pieces) - 1
    partials = yield from _stitch(run, pieces, request)
    if len(partials) == 1:
        return partials[0]
    return (yield from _reduce(run, partials, request))


def _entries(typed: Sequence[tuple[int, str]]) -> list[str]:
    return [user_entry(text, version, USER_MESSAGE_CHARS) for version, text in typed]


# A user message in a summary's list costs at least this many tokens (its tag, a few words).
_USER_ENTRY_TOKENS: Final = 16
_USERS: Final = "All user messages"


def noted_users(summary: str, budget: int) -> list[tuple[int, int]]:
    """The versions (first, last) of each note (and each shortened message) in a summary's list
    of the user's messages that a summary of `budget` tokens could list again: one that stands
    for more messages than such a list holds would only be noted again, and is not worth
    reading (`with_noted_users`)."""
    entries = bounded.bullets(parse_sections(summary).get(_USERS, ""))
    found = [bounded.stands_for(e) for e in entries]
    return [(first, last) for count, first, last in filter(None, found) if count <= budget // _USER_ENTRY_TOKENS]


def with_noted_users(summary: str, typed: Sequence[tuple[int, str]]) -> str:
    """`summary` whose list of the user's messages has each note replaced by the messages it
    stands for (`typed`: the user's typed messages, read at the versions the note names).

    A note is where the user's words stay, not where they end: a summary once held to a small
    budget (a large kept tail beside a long system prompt) noted them; the next one, with room,
    lists them again, and its fit notes again only what it cannot hold. A note none of `typed`
    falls in stays as it is."""
    if not typed:
        return summary
    sections = parse_sections(summary)
    entries: list[str] = []
    for entry in bounded.bullets(sections.get(_USERS, "")):
        note = bounded.stands_for(entry)
        inside = [(v, text) for v, text in typed if note is not None and note[1] <= v <= note[2]]
        entries += _entries(inside) if inside else [entry]
    sections[_USERS] = bounded.as_bullets(entries)
    return format_sections(sections)


def users_section(previous: str | None, history: Sequence[ViewItem]) -> str:
    """The summary's list of the user's messages, extracted whatever the summariser wrote of
    them: the previous summary's list (ours, or the transcript's for an imported summary:
    `with_user_messages`), then the messages the user typed in `history`."""
    return bounded.as_bullets([
        *bounded.bullets(parse_sections(previous).get(_USERS, "") if previous else ""),
        *_entries(typed_messages((item.version, item.payload) for item in history if item.kind == "message"))])


def previous_summary(previous: str | None, earlier_users: Sequence[tuple[int, str]] = (),
                     noted: Sequence[tuple[int, str]] = ()) -> str | None:
    """The previous summary as the next one updates it: another agent's read into our sections,
    its list of the user's messages the transcript's (`earlier_users`), the messages its notes
    stand for listed again (`noted`)."""
    return with_noted_users(with_user_messages(previous, earlier_users), noted) if previous else previous


def with_user_messages(summary: str, earlier: Sequence[tuple[int, str]]) -> str:
    """`summary` (any writer's) in our sections, its user-message list replaced by the user's
    own words, verbatim and tagged with their versions. Another agent's summary paraphrases
    them ("How does this project log...") or leaves them out (Pi's); the transcript has them."""
    sections = parse_sections(summary)
    if earlier:
        sections[_USERS] = bounded.as_bullets(_entries(earlier))
    return format_sections(sections)


def with_paths_modified(files: str, request: SummaryRequest) -> str:
    """A summary's "Files and code" (any writer's) whose paths modified are the request's: every
    path an edit, write or patch changed, relative to the project's root, each with what
    changed. A summariser held to a smaller budget than the summary's (its share of it, its own
    measure of tokens) may have counted them away ("… 3 more paths …"), and a model may name them
    its own way or not at all; what no tool can tell the model it changed is put back here, and
    the summary's fit (`held_to`) reduces it last. The writer's paths read and notes on files
    stay after it (the root is the one the offline summariser names: the same paths make it)."""
    if not request.modified_files:
        return files
    ours = [e for e in path_lines(request.modified_files, request.read_files, request.changes, request.project)
            if not is_path_line(e, (READ_LABEL,))]
    theirs = [e for e in bounded.bullets(files) if not is_path_line(e, (ROOT_LABEL, MODIFIED_LABEL))]
    return bounded.as_bullets([*ours, *theirs])


def _flat(note: str) -> str:
    """A turn prefix's note as lines of one section: a model answers it in sections, whose
    headings nested under "Current work" would split the summary when it is read again."""
    if not is_sectioned(note):
        return note.strip()
    return "\n".join(f"{title}: {body.strip()}" if title else body.strip()
                     for title, body in parse_sections(note).items() if body.strip() not in ("", "(none)"))


def summary_steps(history: Sequence[ViewItem], turn_prefix: Sequence[ViewItem], *, previous: str | None,
                  base: SummaryRequest, policy: CompactionPolicy, counter: TokenCounter, budget: int,
                  files_tokens: int = 0, earlier_users: Sequence[tuple[int, str]] = (),
                  noted: Sequence[tuple[int, str]] = (), window: ModelWindow | None = None) -> Steps[SummaryOutcome]:
    """The new summary, within `budget` tokens: `previous` updated with `history`, plus a note
    on the split turn's prefix (whose events `history` also holds). `earlier_users` are the
    messages the user typed before `previous` when another agent wrote it (version, text):
    they replace its list of them; `noted`, the user's messages that notes of `previous`'s list
    stand for (`noted_users`), take the notes' places. Every request fits the summariser's
    `window` (else the policy's `summarizer_context_tokens`); an overflow that states a smaller
    one starts the summarisation over, planned for it (`SummaryOutcome.window` is what was
    learned)."""
    run = _Run(counter, window.planning_tokens() if window else policy.summarizer_context_tokens, files_tokens,
               window)
    previous = previous_summary(previous, earlier_users, noted)
    prefix_budget = max(1, int(budget * _PREFIX_SHARE)) if turn_prefix else 0
    while True:
        main = replace(base, previous_summary=previous,
                       max_tokens=_asked(min(max(1, budget - prefix_budget), run.most_out())))
        try:
            if history:
                text = yield from _summarise(run, history, main, policy)
            elif previous and run.tokens(previous) > _budget_of(main):  # only the previous summary to shrink
                text = _reduced(previous, main, counter)
            else:
                text = previous or ""
            prefix = (yield from _summarise(run, turn_prefix, replace(
                base, purpose="turn_prefix", previous_summary=None,
                max_tokens=_asked(min(prefix_budget, run.most_out()))), replace(policy, strategy="single"))
            ) if turn_prefix else None
            break
        except _Replan:  # planned again, for the window the overflow stated
            continue
    sections = parse_sections(text)
    sections[_USERS] = users_section(previous, history)
    sections["Files and code"] = with_paths_modified(sections.get("Files and code", ""), base)
    if prefix is not None and (note := _flat(prefix)):  # a note held to nothing says nothing: no heading for it
        current = sections.get("Current work", "")
        sections["Current work"] = f"Earlier in the current turn: {note}" + (f"\n\n{current}" if current else "")
    # A summary the summariser held to its budget names only the sections it kept: the others are
    # not "(none)" (`every_heading`).
    final = format_sections(sections, omit_empty=not every_heading(text))
    return SummaryOutcome(held_to(final, budget, counter), run.calls, max(1, run.slices),
                          run.levels, run.window)
