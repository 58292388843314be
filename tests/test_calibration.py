"""Self-calibrating token estimates (projection.calibration): learned from the session's own usage
reports, carried across compactions, per model; measured against real providers' counts."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.lab import recorded_calls
from sessionstore.projection.calibration import DETAILS_KEY, Calibration, calibration_details, recorded, resent_tokens
from sessionstore.projection.view import resent

from .conftest import FIXTURE_TRANSCRIPTS, TRANSCRIPTS, cases, imported_store
from .test_projection import view_of

OVERHEAD = 7_000  # what a fake agent sends besides the transcript (system prompt, tool schemas)


def provider_count(tokens: int, overhead: int = OVERHEAD, ratio: float = 1.3) -> int:
    """The fake provider: a fixed overhead plus its own tokenizer, `ratio` tokens per token of ours."""
    return overhead + round(ratio * tokens)


def answer(store: SessionStore, sid: str, text: str, model: str = "claude-x", **provider: float) -> int:
    """Append a model response carrying the fake provider's count of the request; returns that count."""
    prompt = provider_count(store.context(sid).tokens, **provider)  # type: ignore[arg-type]
    store.append(sid, ss.assistant(text, meta={"model": model, "usage": {"input_tokens": prompt,
                                                                          "output_tokens": 30}}))
    return prompt


def conversation(store: SessionStore, turns: int, *, sid: str | None = None, model: str = "claude-x",
                 **provider: float) -> str:
    sid = sid or store.create_session()
    for t in range(turns):
        store.append(sid, ss.user(f"Turn {t}: please explain " + "the design of the projection " * (5 + 150 * t)))
        answer(store, sid, f"Answer {t}: " + "it folds events into a view. " * 8, model, **provider)
    return sid


def compact_like_the_planner(store: SessionStore, sid: str, summary: str) -> ss.StoredEvent:
    """A compaction recording what the planner records (the lead wires `calibration_details`
    into the pipeline): here appended by hand, keeping the last two events."""
    view = store.context(sid)
    first_kept = store.version(sid) - 1
    details = {"critical": [], "restored": [], **calibration_details(view)}
    store.append(sid, ss.events.compaction(summary, first_kept, details=details))
    compaction = store.context(sid).compaction
    assert compaction is not None
    return compaction


def test_the_first_call_after_a_compaction_keeps_the_learned_overhead(store: SessionStore) -> None:
    sid = conversation(store, 6)
    anchored = store.context(sid)
    assert anchored.window_estimate().basis == "usage"
    compaction = compact_like_the_planner(store, sid, "We discussed the projection's design at length.")
    learned = recorded(compaction)["claude-x"]
    assert compaction.payload["details"][DETAILS_KEY][0]["model"] == "claude-x" and learned.samples == 6
    # The slope leans on the prior (1.0, or the policy's estimate_ratio) while the sizes seen span little.
    assert learned.ratio() == pytest.approx(1.3, abs=0.05) and learned.ratio(1.3) == pytest.approx(1.3, abs=0.005)
    assert learned.overhead(1.3) == pytest.approx(OVERHEAD, abs=50)
    store.append(sid, ss.user("Now, what about compaction?"))
    view = store.context(sid)
    assert view.usage is None and view.model == "claude-x"
    estimate = view.window_estimate()
    truth = provider_count(view.tokens)
    assert estimate.basis == "calibration" and abs(estimate.tokens - truth) / truth < 0.02
    # Without calibration the overhead vanished with the anchor: the old estimate was far too low.
    assert abs(view.tokens * 1.3 - truth) / truth > 0.3
    assert ss.CompactionPolicy().window_tokens(view) == estimate.tokens
    # The next compaction pools the recorded slope with the new reports instead of starting over.
    answer(store, sid, "Compaction appends an event.")
    second = compact_like_the_planner(store, sid, "Projection, then compaction.")
    assert recorded(second)["claude-x"].samples == 7


def test_the_first_call_after_a_compaction_starts_from_the_first_overhead(store: SessionStore) -> None:
    """An agent injects reminders along the way (the provider counts them, the transcript does not
    hold them); a compaction drops them. The estimate after it starts from what the first call
    cost beyond the conversation, not from the last call's overhead."""
    sid = store.create_session()
    for t in range(6):  # from the third turn on, 3,000 tokens of reminders
        store.append(sid, ss.user(f"Turn {t}: " + "explain the projection again " * (5 + 100 * t)))
        answer(store, sid, f"Answer {t}.", overhead=OVERHEAD + (3_000 if t >= 2 else 0))
    learned = recorded(compact_like_the_planner(store, sid, "We discussed the projection."))["claude-x"]
    store.append(sid, ss.user("And now?"))
    view = store.context(sid)
    estimate, truth = view.window_estimate(fallback_ratio=1.3), provider_count(view.tokens)
    assert learned.base(1.3) == pytest.approx(OVERHEAD, abs=50)
    assert estimate.basis == "calibration" and abs(estimate.tokens - truth) / truth < 0.10
    # The last call's overhead also holds the reminders the compaction dropped (the slope took in
    # part of them, a limit of fitting a line to an agent that adds to its requests as it goes).
    latest = learned.predict(view.tokens, 1.3)
    assert latest - truth > 1_500 and abs(estimate.tokens - truth) < (latest - truth) / 2
    # the first report after the compaction takes over
    answer(store, sid, "It folds events.")
    store.append(sid, ss.user("Thanks."))
    after = store.context(sid)
    assert after.window_estimate(fallback_ratio=1.3).basis == "usage"


def test_what_the_agent_sent_again_besides_the_view_is_counted(store: SessionStore) -> None:
    """An agent's own compaction (imported) sends more than its summary: Claude Code re-attaches
    the files it read last, Codex's replacement history keeps the user's messages. The importer
    names those events in the compaction's ``meta["resent"]`` (a version, or [version, share]
    when only a share of the event was sent); the first estimate after it counts them."""
    sid = conversation(store, 3)
    store.append(sid, [ss.assistant("Reading.", tool_calls=[ss.tool_call("r", "Read", {"file_path": "a.py"})]),
                       ss.tool_result("r", "def f():\n    return 1\n" * 300)])
    answer(store, sid, "Read it.")
    read = store.version(sid) - 1
    first_kept = store.version(sid) + 1
    meta = {"resent": [read, [2, 0.5], "x", [3], [True, 0.5], [4, 2.0]], **calibration_details(store.context(sid))}
    store.append(sid, ss.events.compaction("The file a.py defines f.", first_kept, meta=meta))
    store.append(sid, ss.user("What does f return?"))
    view = store.context(sid)
    events = {e.version: e for e in store.transcript(sid)}
    assert resent(view.compaction) == {read: 1.0, 2: 0.5}  # what is not a version, or a share, is ignored
    assert resent_tokens(view) == round(events[read].tokens + 0.5 * events[2].tokens) > 1_000
    truth = provider_count(view.tokens + events[read].tokens + events[2].tokens // 2)
    estimate = view.window_estimate(fallback_ratio=1.3)
    assert abs(estimate.tokens - truth) / truth < 0.02
    assert [i.version for i in view.items if i.origin != "tail"] == [view.compaction.version]  # not in the view


def test_a_model_switched_to_borrows_the_calibration_of_its_family(store: SessionStore) -> None:
    """A model that has not reported yet: the agent sends it the same system prompt and tools, and
    one vendor's models share a tokenizer, so it takes the calibration of the latest model of the
    same family; a model of another family starts from the fallback ratio."""
    sid = conversation(store, 4, model="claude-sonnet-4-5", overhead=9_000)
    compact_like_the_planner(store, sid, "Projection.")
    store.append(sid, ss.user("Go on."))
    view = store.context(sid)
    truth = provider_count(view.tokens, 9_000)
    switched = view.window_estimate("claude-haiku-4-5", fallback_ratio=1.3)
    assert switched.basis == "calibration" and abs(switched.tokens - truth) / truth < 0.02
    other = view.window_estimate("gpt-5.5", fallback_ratio=1.1)
    assert other.basis == "ratio" and other.tokens == math.ceil(view.tokens * 1.1)


def test_calibrations_are_per_model(store: SessionStore) -> None:
    sid = conversation(store, 4, model="big", overhead=20_000)
    conversation(store, 4, sid=sid, model="small", overhead=2_000, ratio=1.1)
    view = store.context(sid)
    assert view.model == "small" and view.window_estimate().basis == "usage"
    switched = view.window_estimate("big")  # a switch back: the small model's report says nothing of it
    assert switched.basis == "calibration" and switched.model == "big"
    assert abs(switched.tokens - provider_count(view.tokens, 20_000)) / switched.tokens < 0.05
    never = view.window_estimate("other", fallback_ratio=1.5)
    assert never.basis == "ratio" and never.tokens == -(-view.tokens * 3 // 2)


def test_a_prune_voids_the_anchor_but_not_the_calibration(store: SessionStore) -> None:
    sid = conversation(store, 4)
    store.append(sid, [ss.assistant("Reading.", tool_calls=[ss.tool_call("r", "Read", {"file_path": "a"})]),
                       ss.tool_result("r", "line of a file\n" * 400)])
    answer(store, sid, "Read it.")
    store.append(sid, ss.events.prune([store.version(sid) - 1], rule="test"))
    view = store.context(sid)
    assert view.usage is None
    estimate = view.window_estimate()
    truth = provider_count(view.tokens)
    assert estimate.basis == "calibration" and abs(estimate.tokens - truth) / truth < 0.02


def test_what_is_not_a_calibration_is_ignored(store: SessionStore) -> None:
    assert calibration_details(view_of(ss.user("hello"))) == {}  # no usage reported: nothing learned
    sid = conversation(store, 2)
    bad = [{"model": "m", "samples": "many"}, {"samples": 0, "sxx": 0, "sxy": 0, "estimate": 1, "reported": 1,
                                                 "version": 1}, "text", None]
    store.append(sid, ss.events.compaction("s", store.version(sid), details={DETAILS_KEY: bad}))
    store.append(sid, ss.user("next"))
    view = store.context(sid)
    assert recorded(view.compaction) == {} and view.calibrations == {}
    assert view.window_estimate(fallback_ratio=1.0).basis == "ratio"
    good = Calibration("m", 3, 10.0, 12.0, 100, 1_000, 4)
    assert Calibration.from_details(good.as_details()) == good
    first = Calibration("m", 3, 10.0, 12.0, 100, 1_000, 4, 20, 900)
    assert Calibration.from_details(first.as_details()) == first and first.base(1.0) == 880
    assert good.first == (100, 1_000) and good.base(1.0) == 900  # a record made before the first was kept


def test_view_tokens_leave_out_what_rendering_drops(store: SessionStore) -> None:
    """Unsigned thinking (recorded from another provider) is not sent: the view does not count it,
    whether it is a message of its own or sits beside the text of the answer."""
    thinking = {"type": "thinking", "thinking": "let me weigh every option carefully " * 200}
    answer_text = {"type": "text", "text": "The projection folds events into a view."}
    plain, mixed, alone = (store.create_session() for _ in range(3))
    store.append(plain, [ss.user("question"), ss.assistant([answer_text])])
    store.append(mixed, [ss.user("question"), ss.assistant([thinking, answer_text])])
    store.append(alone, [ss.user("question"), ss.assistant([thinking]), ss.assistant([answer_text])])
    assert store.transcript(mixed)[1].tokens > 1_000  # stored whole: the transcript keeps everything
    sent = store.context(plain).tokens
    assert "dropped_block:thinking" in {d.code for d in store.context(mixed).diagnostics}
    assert abs(store.context(mixed).tokens - sent) <= 3  # the stored count split by characters
    assert store.context(alone).tokens == sent


# --------------------------------------------------------------------------- real providers' counts


@pytest.fixture(scope="module", params=cases([("sqlite", "fixtures"), ("postgresql", "fixtures")],
                                             [("sqlite", "shared"), ("postgresql", "shared")]), ids="-".join)
def recorded_store(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SessionStore]]:
    """The transcripts with a compaction written by the recording agent, imported once per backend:
    the shipped fixtures, and the shared corpus's when it is there."""
    backend, corpus = request.param
    if corpus == "shared":
        spotter = TRANSCRIPTS / "claude-code" / "spotter"
        paths = [*sorted(spotter.glob("*.jsonl")), TRANSCRIPTS / "pi" / "before-compaction.jsonl"]
    else:
        paths = [FIXTURE_TRANSCRIPTS / "claude-code", FIXTURE_TRANSCRIPTS / "pi", FIXTURE_TRANSCRIPTS / "codex"]
    with imported_store(request, tmp_path_factory, f"calibration_{corpus}", *paths, backend=backend) as store:
        yield corpus, store


def prior_ratio(info: ss.SessionInfo) -> float:
    """The ratio an agent would configure: Claude's to our count (1.3) for real sessions; 1.0 for
    those recorded against this project's local server (``*/recorded*/``), which counts
    characters / 4, about our count."""
    parts = Path(str(info.metadata.get("source_path") or "")).parts
    return 1.0 if any(part.startswith("recorded") for part in parts) else 1.3


def test_estimates_against_the_providers_counts(recorded_store: tuple[str, SessionStore]) -> None:
    """Issue 7's and issue 29's goals on real sessions: anchored calls within 3% at p90; the first
    call after every agent compaction within 10% of the provider's count (Claude Code's, Pi's and
    Codex's: what Claude Code re-attaches and Codex's replacement history keeps are counted).

    The shipped fixtures: one session with Anthropic's own counts (agentcmd) and the others recorded
    against the local server, whose counts are its estimate of the whole request (system prompt and
    tools included), so the same estimator is measured against a second, independent count; Claude
    Code 2.1.330 records the files it re-attaches after /compact, 2.1.39 and 2.0.29 were resumed
    after it (what they re-attach lives in the process that compacted, and is gone)."""
    corpus, store = recorded_store
    anchored: list[float] = []
    firsts: dict[str, list[float]] = {}
    for info in store.sessions():
        if info.metadata.get("role") in ("subagent", "compaction"):
            continue
        for call in recorded_calls(info.id, store.transcript(info.id)):
            error = abs(call.error(call.estimate(prior_ratio(info))))
            if call.situation == "anchored":
                anchored.append(error)
            elif call.situation == "after-compaction":
                source = Path(str(info.metadata["source_path"]))
                firsts.setdefault(f"{source.parent.name}/{info.id[:8]}", []).append(error)
    anchored.sort()
    assert all(e < 0.10 for errors in firsts.values() for e in errors), firsts
    if corpus == "fixtures":
        assert len(anchored) > 25 and anchored[int(0.9 * len(anchored))] < 0.05, anchored
        assert set(firsts) == {"recorded/5e55104e", "recorded-2.1.39/5e55104e", "recorded-2.0.29/5e55104e",
                               "recorded/01a208ca", "recorded/01a208dd"}, firsts  # Claude Code ×3, Pi, Codex
        return
    assert len(anchored) > 700 and anchored[int(0.9 * len(anchored))] < 0.03
    assert set(firsts) == {"spotter/258c7280", "spotter/8463c716", "pi/ffae836b"}, firsts
    assert len(firsts["pi/ffae836b"]) == 2


@pytest.mark.parametrize("folder", ["claude-code/recorded-2.1.39", "claude-code/recorded", "pi/recorded",
                                    "codex/recorded"])
def test_imported_compactions_carry_the_calibration(store: SessionStore, folder: str) -> None:
    """An agent's compaction is imported with what our planner records in its own (in its meta,
    the payload staying the file's): the first estimate after it knows the agent's overhead."""
    from sessionstore.importers import import_path
    from sessionstore.projection.usage import prompt_tokens

    path = FIXTURE_TRANSCRIPTS / folder
    import_path(store, path)
    sid = next(s.id for s in store.sessions() if ":" not in s.id)
    compaction = next(iter(store.events(sid, kinds=["compaction"])))
    assert recorded(compaction) and "calibration" not in compaction.payload["details"]
    after = next(e for e in store.transcript(sid) if e.version > compaction.version and prompt_tokens(e.meta.get("usage")))
    view = store.context(sid, at=after.version - 1)
    # (the local server counts characters / 4, about our count: the fallback ratio 1.0 is right for it)
    estimate, provider = view.window_estimate(after.meta.get("model")).tokens, prompt_tokens(after.meta["usage"])
    if folder.startswith("claude-code"):  # Claude Code records neither its system prompt nor its tools
        assert estimate > 1.3 * view.tokens  # the overhead our count of the events cannot see is there
    assert abs(estimate - provider) / provider < 0.10
    # What the agent sent again besides the view: the files Claude Code 2.1.330 re-attached (recorded
    # as attachment lines), the messages Codex's replacement history kept; nothing where Claude Code
    # was resumed after compacting (2.1.39: those lived in the process that compacted) or for Pi.
    events = {e.version: e for e in store.transcript(sid)}
    sent = {events[v].kind for v in resent(compaction)}
    assert sent == {"claude-code/recorded": {"custom"}, "codex/recorded": {"message"}}.get(folder, set())
    assert resent_tokens(view) > 0 or not sent
    again = import_path(store, path)
    assert again.ok and again.events_added == 0  # a re-import still matches the file
