"""Compaction: planned purely (`compaction.pipeline`), its summaries asked of the door as
`Summarize` ops, recorded as events."""

from __future__ import annotations

from typing import Final

from ..compaction import native as provider_compaction
from ..compaction.files import modified_changes
from ..compaction.pipeline import compaction_steps, provisional
from ..compaction.summarize import noted_users
from ..compaction.policy import CompactionPolicy
from ..errors import CompactionFailed
from ..projection import ContextView
from ..summarizers.base import Summarizer, SummaryBatch
from ..summarizers.compacting import NotCompacted, ProviderCompactor
from ..summarizers.offline import OfflineSummarizer
from ..summarizers.typed import typed_messages
from .base import Part, answered, log
from .ops import Program, Summarize
from .results import CompactionResult


# Forks followed back to find a session's working directory.
_FORK_DEPTH: Final = 8


class CompactingPart(Part):
    # ------------------------------------------------------------------ compaction

    def compact(self, session_id: str, policy: CompactionPolicy | None = None,
                summarizer: Summarizer | None = None, instructions: str | None = None, *, trigger: str = "manual",
                dry_run: bool = False) -> Program[CompactionResult | None]:
        """Prune, rewrite and summarise the session's current view; append the decisions as events.

        Returns None when there is nothing to do. A recorded compaction leaves the view within
        the policy's threshold (escalating to a bounded summary, a smaller kept tail and
        truncated items when the levels are not enough); when nothing can, `CompactionFailed`
        is raised and nothing is recorded. The transcript is never changed: the new events
        only change what `context()` shows. Appends do not wait for the summariser: the
        decisions hold for the history they were made on, and events appended meanwhile land
        in the kept tail.
        """
        view = yield from self._current_view(session_id)
        return (yield from self._compact(view, policy or CompactionPolicy(), summarizer, instructions, trigger,
                                         dry_run))

    def maybe_compact(self, session_id: str, policy: CompactionPolicy | None = None,
                      summarizer: Summarizer | None = None) -> Program[CompactionResult | None]:
        """Compact only when the view is past the policy's threshold (call it before each model call).

        It cannot loop: a compaction that returns leaves the view within the threshold, so the
        next call does nothing until the session grows; one that cannot fit raises
        `CompactionFailed` before any summariser call, so asking again costs no model call.
        """
        policy = policy or CompactionPolicy()
        view = yield from self._current_view(session_id)
        if not policy.over_threshold(view):
            return None
        return (yield from self._compact(view, policy, summarizer, None, "auto", False))

    def _project_directory(self, session_id: str) -> Program[str | None]:
        """The session's working directory (`cwd` in its metadata, an importer's or the agent's),
        a fork's taken from the session it was forked from."""
        for _ in range(_FORK_DEPTH):
            info = yield from self.session(session_id)
            cwd = info.metadata.get("cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
            parent = info.metadata.get("forked_from")
            if not isinstance(parent, str):
                return None
            session_id = parent
        return None

    def _compact(self, view: ContextView, policy: CompactionPolicy, summarizer: Summarizer | None,
                 instructions: str | None, trigger: str, dry_run: bool) -> Program[CompactionResult | None]:
        counter = self._counter()
        summarizer = summarizer or OfflineSummarizer()
        earlier: list[tuple[int, str]] = []
        modified: dict[str, str] = {}
        if view.compaction is not None and view.compaction.payload.get("strategy") == "imported":
            # Another agent's summary paraphrases the user's words and names files its own way, or
            # leaves them out: the transcript has them.
            before = yield from self.events_page(view.session_id, upto=view.compaction.payload["first_kept_version"]
                                                 - 1, kinds=("message", "tool_call"))
            earlier = typed_messages((e.version, e.payload) for e in before if e.kind == "message")
            modified = modified_changes((e.payload for e in before if e.kind == "tool_call"), policy)
        noted: list[tuple[int, str]] = []
        if view.compaction is not None and not earlier:
            # The user's messages our previous summary noted for lack of room: read again, so that
            # a summary with room lists them (`summarize.with_noted_users`).
            for first, last in noted_users(view.compaction.payload.get("summary") or "", policy.summary_cap):
                page = yield from self.events_page(view.session_id, after=first - 1, upto=last, kinds=("message",))
                noted += typed_messages((e.version, e.payload) for e in page)
        project = yield from self._project_directory(view.session_id)
        steps = compaction_steps(view, policy=policy, counter=counter, summarizer_name=summarizer.name,
                                 trigger=trigger, instructions=instructions, earlier_users=earlier,
                                 earlier_modified=modified, noted_users=noted, project=project)
        try:
            plan = yield from answered(steps, summarizer)
        except CompactionFailed as exc:
            log.warning("cannot compact", session_id=view.session_id, tokens=view.tokens, reason=exc.reason)
            raise
        if isinstance(summarizer, ProviderCompactor) and plan.first_kept_version is not None and not dry_run:
            request = provider_compaction.native_request(view, plan.first_kept_version, instructions)
            (answer,) = yield Summarize(summarizer, SummaryBatch((request,)))
            if isinstance(answer, NotCompacted):
                log.warning("the provider did not compact: recorded with the portable summary",
                            session_id=view.session_id, reason=str(answer))
                plan = provider_compaction.declined(plan, str(answer))
            elif isinstance(answer, Exception):
                raise answer
            else:
                plan = provider_compaction.with_native(plan, view, answer, counter)
        if not plan.events:
            log.info("nothing to compact", session_id=view.session_id, tokens=view.tokens, reason=plan.reason)
            return None
        if dry_run:
            stored = tuple(provisional(plan.events, view, counter))
        else:
            result = yield from self.append(view.session_id, plan.events)
            stored = tuple((yield from self.events_page(view.session_id, after=result.version - len(plan.events),
                                                        upto=result.version)))
        log.info("compacted" if not dry_run else "compaction planned", session_id=view.session_id, trigger=trigger,
                 tokens_before=plan.tokens_before, tokens_after=plan.tokens_after, escalation=plan.escalation,
                 prunes=len(plan.prunes), rewrites=len(plan.rewrites), truncations=len(plan.truncations),
                 summarizer_calls=plan.summarizer_calls)
        return CompactionResult(view.session_id, trigger, stored, plan, dry_run)
