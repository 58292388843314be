"""Self-calibrating token estimates (projection.calibration): learned from the session's own usage
reports, carried across compactions, per model; measured against real providers' counts."""

from __future__ import annotations

from collections.abc import Iterator
import pytest

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.lab import recorded_calls
from sessionstore.projection.calibration import DETAILS_KEY, Calibration, calibration_details, recorded

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
        paths = [FIXTURE_TRANSCRIPTS / "claude-code", FIXTURE_TRANSCRIPTS / "pi"]
    with imported_store(request, tmp_path_factory, f"calibration_{corpus}", *paths, backend=backend) as store:
        yield corpus, store


def test_estimates_against_the_providers_counts(recorded_store: tuple[str, SessionStore]) -> None:
    """Issue 7's goals on real sessions: anchored calls within 3% at p90; the first call after
    Pi's and Claude Code's compactions within 10% of the provider's count — where the agent
    records what it sends (Claude Code 8463c716 re-attaches ~17k tokens of files it never writes
    to the transcript: no estimate from the transcript can see them).

    The shipped fixtures: one session with Anthropic's own counts (agentcmd) and two recorded
    against the local server, whose counts are its estimate of the whole request (system prompt and
    tools included), so the same estimator is measured against a second, independent count; Claude
    Code 2.1.330 re-attaches the files it read after /compact, as 8463c716 does."""
    corpus, store = recorded_store
    anchored: list[float] = []
    firsts: dict[str, list[float]] = {}
    for info in store.sessions():
        if info.metadata.get("role") in ("subagent", "compaction"):
            continue
        for call in recorded_calls(info.id, store.transcript(info.id)):
            error = abs(call.error(call.estimate(1.3)))
            if call.situation == "anchored":
                anchored.append(error)
            elif call.situation == "after-compaction":
                firsts.setdefault(info.id[:8], []).append(error)
    anchored.sort()
    if corpus == "fixtures":
        assert len(anchored) > 25 and anchored[int(0.9 * len(anchored))] < 0.05, anchored
        # Claude Code 2.1.330's first call after /compact: −40% (its request carries the TodoWrite
        # schema and files it re-attaches, which the calibration before the compaction underrates).
        assert len(firsts) >= 2 and all(e < 0.45 for errors in firsts.values() for e in errors), firsts
        return
    assert len(anchored) > 700 and anchored[int(0.9 * len(anchored))] < 0.03
    assert set(firsts) >= {"258c7280", "8463c716"} and sum(len(f) for f in firsts.values()) >= 4
    assert all(e < 0.10 for sid, errors in firsts.items() for e in errors if sid != "8463c716"), firsts
    assert all(e < 0.35 for e in firsts["8463c716"])  # was 90% before calibration


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
    estimate, provider = view.window_estimate(after.meta.get("model")).tokens, prompt_tokens(after.meta["usage"])
    if folder.startswith("claude-code"):  # Claude Code records neither its system prompt nor its tools
        assert estimate > 1.3 * view.tokens  # the overhead our count of the events cannot see is there
    if folder.endswith("2.1.39"):
        assert abs(estimate - provider) / provider < 0.10
    again = import_path(store, path)
    assert again.ok and again.events_added == 0  # a re-import still matches the file
