"""What an event holds, as HTML: message blocks, long texts behind a "more" fold, tool inputs,
images, and the figures (sizes, token counts, version lists) the page shows beside them.

Apart from the events' cards (transcript.py) and the page's header (page.py), which both use it:
everything here turns one value into escaped HTML or text, and knows nothing of events.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

from ..tokens import OUR_COUNT, PROVIDER_COUNT
from .document import body_text, esc

HEAD_LINES: Final = 30
HEAD_CHARS: Final = 4_000
PREVIEW_CHARS: Final = 180
IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES: Final = 2_000_000
_SMALL_REST_CHARS: Final = 400
_SMALL_REST_LINES: Final = 4
_BASE64: Final = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
# Tool input keys whose value says best what a call does, in order of preference.
_PREVIEW_KEYS: Final = ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt",
                        "input", "arguments")
_ARGV_KEYS: Final = frozenset({"command", "cmd", "argv"})


def blocks_html(blocks: Iterable[Mapping[str, Any]], *, pre: bool = False) -> str:
    parts = []
    for block in blocks:
        btype = block.get("type")
        if btype == "text":
            text = str(block.get("text", ""))
            if text.strip():
                parts.append(pre_html(text) if pre else text_html(text))
        elif btype == "thinking":
            thought = str(block.get("thinking", ""))
            parts.append(f'<details class="inner thinking"><summary>thinking · {esc(size_text(thought))}</summary>'
                         f"{text_html(thought)}</details>")
        elif btype == "redacted_thinking":
            parts.append('<div class="thinking">(redacted thinking)</div>')
        elif btype == "image":
            parts.append(_image(block))
        else:
            parts.append(_native(block))
    return "".join(parts)


def _native(block: Mapping[str, Any]) -> str:
    """A provider-native block kept verbatim (OpenAI reasoning, web search, …): its summary text, and the JSON."""
    summary = block.get("summary")
    texts = [str(s.get("text")) for s in summary if isinstance(s, Mapping) and s.get("text")] \
        if isinstance(summary, list) else []
    shown = text_html("\n\n".join(texts)) if texts else ""
    raw = pretty_json(block)
    return (f'{shown}<details class="inner"><summary>{esc(block.get("type") or "block")} · {esc(size_text(raw))}'
            f'</summary>{pre_html(raw)}</details>')


def _image(block: Mapping[str, Any]) -> str:
    source = block.get("source") if isinstance(block.get("source"), Mapping) else {}
    media = source.get("media_type")
    data = source.get("data")
    if (source.get("type") == "base64" and media in IMAGE_TYPES and isinstance(data, str)
            and len(data) <= MAX_IMAGE_BYTES * 4 // 3 and _BASE64.match(data)):
        return f'<img class="shot" alt="image ({esc(media)})" src="data:{media};base64,{data}">'
    what = media or source.get("type") or "unknown"
    size = f", {len(data) * 3 // 4:,} bytes" if isinstance(data, str) else ""
    return f'<div class="size">[image: {esc(what)}{esc(size)}, not shown]</div>'


def text_html(text: str, *, head_lines: int = HEAD_LINES) -> str:
    """Prose (messages, summaries): the first lines shown, the rest behind a "more" fold."""
    head, rest = _split(text, head_lines, HEAD_CHARS)
    if not rest:
        return f'<div class="text">{body_text(text)}</div>'
    return (f'<div class="text">{body_text(head)}</div><details class="more"><summary>{esc(_more(rest))}</summary>'
            f'<div class="text">{body_text(rest)}</div></details>')


def pre_html(text: str) -> str:
    """Output and code (tool results, inputs): more lines shown before the fold, since they are already folded."""
    head, rest = _split(text, HEAD_LINES * 4, HEAD_CHARS * 4)
    if not rest:
        return f'<pre class="out">{body_text(text)}</pre>'
    return (f'<pre class="out">{body_text(head)}</pre><details class="more"><summary>{esc(_more(rest))}</summary>'
            f'<pre class="out">{body_text(rest)}</pre></details>')


def _split(text: str, max_lines: int, max_chars: int) -> tuple[str, str]:
    """(what to show, what to fold): cut after `max_lines` lines or `max_chars` characters; never fold a
    remainder so small that the fold would hide less than it costs to open."""
    end = len(text)
    pos = -1
    for _ in range(max_lines):
        pos = text.find("\n", pos + 1)
        if pos < 0:
            break
    if pos >= 0:
        end = pos
    end = min(end, max_chars)
    rest = text[end:]
    if len(rest) <= _SMALL_REST_CHARS and rest.count("\n") <= _SMALL_REST_LINES:
        return text, ""
    return text[:end], rest


def _more(rest: str) -> str:
    lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    return f"{lines:,} more line{'s' if lines != 1 else ''} · {len(rest):,} characters"


def size_text(text: str) -> str:
    lines = text.count("\n") + 1 if text else 0
    chars = len(text)
    amount = f"{chars / 1000:.1f}k chars" if chars >= 1000 else f"{chars} chars"
    return f"{lines:,} lines · {amount}" if lines > 1 else amount


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[:PREVIEW_CHARS - 1] + "…"


def call_preview(args: Any) -> str:
    if isinstance(args, Mapping):
        for key in _PREVIEW_KEYS:
            value = args.get(key)
            if key in _ARGV_KEYS and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                value = _argv_text(value)
            if isinstance(value, str) and value.strip():
                return one_line(value)
    return one_line(pretty_json(args))


def _argv_text(argv: Sequence[str]) -> str:
    """An argv as a shell line; a ``sh -c SCRIPT`` with its script verbatim on the next line (quoting a
    script inside quotes would bury it)."""
    if len(argv) >= 3 and argv[-2] in ("-c", "-lc"):
        return f"{shlex.join(argv[:-1])}\n{argv[-1]}"
    return shlex.join(argv)


def args_html(args: Any) -> str:
    """Tool input as name/value pairs, strings shown as written (multi-line edits stay readable)."""
    if not isinstance(args, Mapping) or not args:
        return pre_html(pretty_json(args))
    rows = []
    for key, value in args.items():
        if key in _ARGV_KEYS and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            shown = _argv_text(value)
        else:
            shown = value if isinstance(value, str) else pretty_json(value)
        rows.append(f"<dt>{esc(key)}</dt><dd>{pre_html(shown)}</dd>")
    return f'<dl class="args">{"".join(rows)}</dl>'


def pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def utc_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def version_list(label: str, versions: Sequence[int], limit: int = 12) -> str:
    if not versions:
        return ""
    shown = ", ".join(f'<a href="#v{v}">v{v:,}</a>' for v in versions[:limit])
    more = f" and {len(versions) - limit} more" if len(versions) > limit else ""
    return f"{label} {shown}{more}"


def counted_by(strategy: str, summarizer: str) -> str:
    """Whose count a compaction's figures are: an imported one recorded the agent's own (its
    provider's) count, which the chart's estimate need not match; ours are our estimate."""
    return f"{PROVIDER_COUNT}, recorded by {summarizer or 'the agent'}" if strategy == "imported" else OUR_COUNT


def before_after(before: Any, after: Any, *, bold: bool = False) -> str:
    """"34,344 → 14,060 tokens"; an imported compaction often recorded only the size before."""
    b, e = ("<b>", "</b>") if bold else ("", "")
    if not _is_count(after):
        return f"{b}{figure(before)}{e} tokens before" if _is_count(before) else "tokens not recorded"
    return f"{b}{figure(before)}{e} → {b}{figure(after)}{e} tokens"


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def figure(value: Any) -> str:
    return f"{value:,}" if _is_count(value) else "?"
