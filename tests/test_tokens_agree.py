"""Token figures that agree with the provider's and say whose they are (issue 18, item 6).

Encrypted or opaque blobs (Codex reasoning and compaction items' ``encrypted_content``, a
thinking block's ``signature``, redacted thinking's ``data``) are not text a model reads: a
tokenizer would count base64 at ~1 token per 2–3 characters.
"""

from __future__ import annotations

import base64
import math
import os
import random
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.display import stats_rows
from sessionstore.importers import import_path
from sessionstore.tokens import default_counter, event_text, transcript_tokens

from .conftest import FIXTURE_TRANSCRIPTS, SHARED, TRANSCRIPTS, shipped

CODEX = FIXTURE_TRANSCRIPTS / shipped("codex/recorded/*.jsonl")
BLOB = base64.b64encode(os.urandom(15_000)).decode()  # 20,000 characters of ciphertext


def tokens_of(content: list[dict[str, object]]) -> int:
    text, _ = event_text("message", {"role": "assistant", "content": content})
    return default_counter().count(text)


def test_opaque_blobs_are_not_counted_as_text() -> None:
    summary = [{"type": "summary_text", "text": "**Reading the parser** then the tests."}]
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": summary, "content": None, "encrypted_content": BLOB}
    assert tokens_of([reasoning]) == default_counter().count(summary[0]["text"])  # type: ignore[index]
    thinking = {"type": "thinking", "thinking": "check the edge case", "signature": BLOB}
    assert tokens_of([thinking]) == default_counter().count("check the edge case")
    assert tokens_of([{"type": "redacted_thinking", "data": BLOB}]) == 0
    assert tokens_of([{"type": "compaction", "id": "cmp_1", "encrypted_content": BLOB}]) == 0
    search = {"type": "web_search_call", "id": "ws_1", "action": {"query": "sqlite fts5 trigram"}}
    assert 0 < tokens_of([search]) < 30  # a provider-native block with readable fields still counts them


def test_a_codex_session_counts_near_the_providers_figure(store: SessionStore) -> None:
    report = import_path(store, CODEX)
    assert report.issues == []
    (info,) = store.sessions()
    events = list(store.events(info.id))
    reasoning = [e for e in events if e.kind == "message"
                 and any(b.get("type") == "reasoning" for b in e.payload["content"])]
    assert reasoning and all(b.get("encrypted_content") for e in reasoning for b in e.payload["content"])
    for event in reasoning:  # the summary text only, never the ciphertext
        summaries = [p["text"] for b in event.payload["content"] for p in b.get("summary") or ()]
        assert event.tokens == default_counter().count("\n".join(summaries)), event.version
    # Codex recorded its provider's count when it compacted: ours of the same history is near it
    # (below it by the tool schemas and instructions a request carries besides the transcript).
    compaction = next(e for e in events if e.kind == "compaction")
    provider = compaction.payload["tokens_before"]
    ours = transcript_tokens(e for e in events if e.version < compaction.version)
    assert 0.75 * provider <= ours <= provider, (ours, provider)
    assert store.transcript_tokens([info.id])[info.id] == transcript_tokens(events)


def test_stats_labels_each_figure_and_claims_no_saving_without_compaction(store: SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user("hello"), ss.assistant("hi", meta={"usage": {"input_tokens": 900, "output_tokens": 5}})])
    rows = dict(stats_rows(store.stats(sid)))
    assert rows["view tokens (our estimate)"].endswith("(nothing compacted)")
    assert "smaller" not in " ".join(rows.values())
    assert rows["view tokens (provider's count)"].startswith("9")  # the usage report's 900 + what followed
    assert "transcript tokens (our estimate)" in rows


def test_the_page_says_whose_count_a_compaction_shows(store: SessionStore, tmp_path: Path) -> None:
    import_path(store, CODEX)
    (info,) = store.sessions()
    page = tmp_path / "codex.html"
    result = CliRunner().invoke(main, ["--db", store.url, "html", info.id[:8], "-o", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "provider&#x27;s count, recorded by codex" in text or "provider's count, recorded by codex" in text
    assert "transcript tokens (our estimate)" in text


class Recording:
    """A token counter that remembers what it was asked to count (tiktoken's counts)."""

    name = "recording"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def count(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        self.asked += texts
        return default_counter().count_many(texts)


def test_only_what_a_model_can_read_goes_to_the_counter(tmp_path: Path) -> None:
    """A custom event kept out of the context (a framework's checkpoint, an importer's progress
    record) is never rendered: it gets the chars/4 estimate, and the counter (an HTTP request
    each with Anthropic's) never sees it; an in-context one is counted like any message."""
    counter = Recording()
    with SessionStore(f"sqlite:///{tmp_path / 'c.db'}", token_counter=counter) as store:
        store.migrate()
        sid = store.create_session()
        bookkeeping = {"checkpoint": "1f1e91ed-5c86-6fce-8008-ae049fb99312", "step": 8, "channels": ["messages"]}
        note = {"ticket": "ENG-1142", "status": "reopened by the customer"}
        store.append(sid, [ss.user("where is the parser?"), ss.custom("langgraph:checkpoint", bookkeeping),
                           ss.custom("ticket", note, in_context=True)])
        message, kept_out, shown = store.events(sid)
    assert kept_out.tokens == math.ceil(len(event_text("custom", kept_out.payload)[0]) / 4)
    assert shown.tokens == default_counter().count(event_text("custom", shown.payload)[0])
    assert message.tokens == default_counter().count("where is the parser?")
    assert counter.asked == ["where is the parser?", event_text("custom", shown.payload)[0]]
    assert "1f1e91ed" not in "".join(counter.asked)


def test_a_long_text_counted_line_by_line_is_counted_exactly() -> None:
    """`TiktokenCounter.count` counts a long text line by line and remembers the lines: the sum
    must be tiktoken's count of the whole: on the head of every real file we hold and a quarter of
    their lines long enough to be split (the whole corpus was checked once; too slow for the
    suite), on lines that start with spaces, tabs, blank lines and CRLF, and on random texts built
    from the characters tiktoken's pieces turn on."""
    counter = ss.TiktokenCounter()
    whole = counter._encoding.encode_ordinary  # what the counter must agree with
    folders = [FIXTURE_TRANSCRIPTS, *([TRANSCRIPTS] if SHARED else [])]
    files = [path.read_text(encoding="utf-8", errors="replace")
             for folder in folders for path in sorted(folder.rglob("*")) if path.is_file()]
    texts = [text[:20_000] for text in files]  # a file's head: JSON lines of every kind, split
    texts += [line[:20_000] for text in files for line in text.splitlines() if len(line) >= 4_096][::4]
    rnd = random.Random(7)
    alphabet = ["\n", "\n\n", "\r\n", " ", "  ", "\t", "a", "Bc", "12345", ".", "-", "'s", "é", "中", "😀", "\u00a0", "/"]
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(2_000, 6_000))) for _ in range(200)]
    texts += ["- [v2] a line\n  an indented one\n\n\tafter a tab\r\nand CRLF.\n" * 400]
    assert sum(len(text) >= 4_096 for text in texts) > 300
    for text in texts:
        expected = len(whole(text))
        assert counter.count(text) == expected
        assert counter.count(text) == expected  # again, from the lines remembered
