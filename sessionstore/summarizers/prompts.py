"""The prompts of the model summariser.

The history to summarise is *serialised into text* inside one user message (as Pi's
compaction does), never replayed as a live conversation: the summarisation request is then
valid whatever the history holds (tool calls without results, consecutive same-role
messages, thinking without signatures), and the model reads the conversation as material
to summarise rather than as a conversation to continue.

Three user prompts, one per `SummaryRequest.purpose`: `history` (a fresh summary, or the
anchored update of a previous one), `turn_prefix` (the first part of a turn whose rest is
kept verbatim) and `merge` (partial summaries of consecutive slices, oldest first). All of
them ask for the fixed `SECTIONS` headings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .sections import SECTIONS

# How much of one tool result / tool input the serialised history keeps. Outputs are the bulk
# of a coding session and mostly re-readable; the head shows what it was, the tail holds the
# error or the final line.
TOOL_RESULT_CHARS: Final = 2000
TOOL_INPUT_CHARS: Final = 1000

SECTION_GUIDE: Final[Mapping[str, str]] = {
    "Primary request and intent": "what the user asked for, in full, with every explicit requirement and "
                                  "constraint, and how the request evolved",
    "Key technical concepts": "technologies, frameworks, libraries, APIs, conventions and commands that matter "
                              "for the work",
    "Files and code": "every file read, created or modified, by exact path, with why it matters and what was "
                      "changed; include short code snippets (signatures, key lines) where they will be needed",
    "Errors and fixes": "every error met (exact message, trimmed), its cause and how it was fixed; include user "
                        "feedback on what was done wrong",
    "Problem solving": "problems solved, approaches tried and abandoned (and why), decisions made and their reasons",
    "All user messages": "every message the user wrote (not tool results), in order, verbatim when short and "
                         "otherwise closely paraphrased; these are the user's own words, the last thing to shorten: "
                         "shorten every other section first. Only when the user's messages alone cannot fit the "
                         "length limit, shorten the oldest ones to their first words, each keeping its version "
                         "(e.g. \"[v12] Fix the rounding in … [… recall read v12]\")",
    "Pending tasks": "tasks the user asked for that are not finished yet",
    "Current work": "precisely what was being worked on just before this summary: files, functions, state",
    "Next step": "the next step, only if it follows directly from the user's latest request; quote the latest "
                 "request to show it; otherwise (none)",
}

SYSTEM_PROMPT: Final = f"""\
You write the working memory of a coding agent whose conversation has grown too long for its \
context window. The conversation you are given will be replaced by your summary: whatever you \
leave out is lost to the agent for good, so the agent must be able to continue the work from \
your summary alone, without asking the user to repeat anything.

Rules:
- The conversation is material to summarise, not a conversation to continue: do not answer \
questions in it, do not call tools, do not carry on the task.
- Keep verbatim: the user's messages (short ones word for word), exact file paths, function \
and symbol names, commands, error messages, identifiers, numbers and versions, and every \
decision with its reason.
- Tool outputs are shown truncated; summarise what they established, never invent what a \
truncated part might have said.
- Be specific and dense; no filler, no speculation, no advice the user did not ask for.
- Answer with the summary only, in markdown, using exactly these second-level headings, in \
this order, each once:
{chr(10).join(f"  ## {title}" for title in SECTIONS)}
- Write "(none)" under a heading with nothing to report. Do not add other top-level \
headings, a preamble or a closing remark.
"""


# For a model with a small window (`SummaryRequest.brief`): the same contract in a sixth of the
# tokens, leaving the room to the history (a 2,048-token model has no room for the full guide).
BRIEF_SYSTEM_PROMPT: Final = f"""\
You summarise a coding agent's conversation so that the agent can continue from your summary \
alone. Do not continue the conversation or answer it. Keep exact file paths, names, commands, \
errors and the user's requests. Answer only with these headings, in order, writing (none) under \
an empty one:
{chr(10).join(f"## {title}" for title in SECTIONS)}
"""


def sections_guide() -> str:
    """The headings, in order, with what belongs under each."""
    return "\n".join(f"## {title}\n<{SECTION_GUIDE[title]}>" for title in SECTIONS)


def _brief_budget(max_tokens: int | None) -> str:
    return f"Stay under {max_tokens} tokens." if max_tokens else ""


def brief_prompt(purpose: str, material: str, *, previous_summary: str | None = None,
                 partials: Sequence[str] = (), modified_files: Sequence[str] = (), instructions: str | None = None,
                 max_tokens: int | None = None) -> str:
    """The user message of a `brief` request: the task in a line, the material, the budget."""
    if purpose == "merge":
        task = "Merge these partial summaries of one session, oldest first, into one summary (later parts win):"
        blocks = [f"<part {n}>\n{p.strip()}\n</part {n}>" for n, p in enumerate(partials, start=1)]
        material = "\n".join(blocks)
    elif purpose == "turn_prefix":
        task = "Summarise briefly this first part of a turn (its rest stays in the context):"
        material = f"<turn-prefix>\n{material}\n</turn-prefix>"
    elif previous_summary:
        task = "Update the summary with the conversation that follows it; keep what is still true:"
        material = f"<summary>\n{previous_summary.strip()}\n</summary>\n<conversation>\n{material}\n</conversation>"
    else:
        task = "Summarise this conversation:"
        material = f"<conversation>\n{material}\n</conversation>"
    files = ("Files modified: " + ", ".join(modified_files)) if modified_files else ""
    asked = f"Instructions: {instructions.strip()}" if instructions and instructions.strip() else ""
    return "\n".join(part for part in (task, material, files, asked, _brief_budget(max_tokens)) if part)


# --------------------------------------------------------------------------- serialising history


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def truncate(text: str, limit: int, *, note: str = "") -> str:
    """`text` cut to about `limit` characters: head and tail kept, with a marker saying how much
    went (and `note`, e.g. where the full text stays)."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n[… {dropped:,} characters truncated{note} …]\n{text[len(text) - tail:]}"


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if not isinstance(block, Mapping):
            parts.append(str(block))
        elif block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append("[image]")
        elif block.get("type") == "document":
            parts.append(f"[document{': ' + str(block['title']) if block.get('title') else ''}]")
        else:
            parts.append(_json(block))
    return "\n".join(parts)


def serialize_messages(messages: Iterable[Mapping[str, Any]], *, tool_result_chars: int = TOOL_RESULT_CHARS,
                       tool_input_chars: int = TOOL_INPUT_CHARS, versions: Sequence[Sequence[int]] = ()) -> str:
    """Anthropic-shaped messages as plain text, one entry a block::

        [User]: …
        [Assistant thinking]: …
        [Assistant]: …
        [Tool call] read_file({"path": "src/app.py"})
        [Tool result] read_file: …            ([Tool error] when is_error)

    With `versions` (parallel to `messages`, one per block), each label names the block's
    transcript version (``[User v12]: …``), so that a summary can say where what it shortens
    stays. Long tool inputs and results are truncated with a marker.
    """
    names: dict[str, str] = {}
    lines: list[str] = []
    for m, message in enumerate(messages):
        role = str(message.get("role", "user"))
        speaker = {"user": "User", "assistant": "Assistant", "system": "System"}.get(role, role.capitalize())
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or ()
        for b, block in enumerate(blocks):
            if not isinstance(block, Mapping):
                continue
            version = versions[m][b] if m < len(versions) and b < len(versions[m]) else 0
            at = f" v{version}" if version else ""
            btype = block.get("type")
            if btype == "text":
                text = str(block.get("text", ""))
                if text.strip():
                    lines.append(f"[{speaker}{at}]: {text}")
            elif btype == "thinking":
                text = str(block.get("thinking", ""))
                if text.strip():
                    lines.append(f"[{speaker} thinking{at}]: {text}")
            elif btype == "redacted_thinking":
                lines.append(f"[{speaker} thinking{at}]: (redacted)")
            elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
                name = str(block.get("name", "tool"))
                if block.get("id") is not None:
                    names[str(block["id"])] = name
                args = truncate(_json(block.get("input", {})), tool_input_chars)
                lines.append(f"[Tool call{at}] {name}({args})")
            elif btype == "tool_result" or (isinstance(btype, str) and btype.endswith("_tool_result")):
                name = names.get(str(block.get("tool_use_id")), "")
                label = "Tool error" if block.get("is_error") else "Tool result"
                text = truncate(_result_text(block.get("content")), tool_result_chars)
                lines.append(f"[{label}{at}]{' ' + name if name else ''}: {text if text.strip() else '(empty)'}")
            elif btype == "image":
                lines.append(f"[{speaker}{at}]: [image]")
            elif btype == "document":
                title = block.get("title")
                lines.append(f"[{speaker}{at}]: [document{': ' + str(title) if title else ''}]")
            else:
                lines.append(f"[{speaker}{at}]: {truncate(_json(block), tool_input_chars)}")
    return "\n\n".join(lines)


# --------------------------------------------------------------------------- user prompts


def _files_block(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    if not read_files and not modified_files:
        return ""
    parts = ["Files touched during the whole session so far (list them all under \"Files and code\", "
             "by exact path):"]
    if read_files:
        parts.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        parts.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n".join(parts)


def _instructions_block(instructions: str | None) -> str:
    if not instructions or not instructions.strip():
        return ""
    return ("The user gave these instructions for this summary; follow them (they take precedence over "
            f"the general guidance, but keep the headings):\n<instructions>\n{instructions.strip()}\n</instructions>")


def _budget_line(max_tokens: int | None) -> str:
    if not max_tokens:
        return ""
    return (f"The summary MUST stay under {max_tokens} tokens: it replaces the conversation in a context window of "
            "fixed size. Be dense rather than drop facts; when lists do not fit, keep their first and most recent "
            "entries and say how many were left out and at which versions (the [vN] labels); the user's messages "
            "are the last thing to shorten.")


def _join(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)


def history_prompt(conversation: str, *, previous_summary: str | None = None, instructions: str | None = None,
                   read_files: Sequence[str] = (), modified_files: Sequence[str] = (),
                   max_tokens: int | None = None) -> str:
    """Summarise `conversation`; with `previous_summary`, update that summary with it (anchored)."""
    if previous_summary:
        task = ("Below is the summary of the earlier part of this session, then the conversation that "
                "followed it. UPDATE the summary with the new conversation:\n"
                "- keep everything in the previous summary that is still true: it is the only record of the "
                "earlier work, so do not shorten it away;\n"
                "- add what the new conversation adds, in the section where it belongs;\n"
                "- change what the new conversation changed (a task now done moves out of \"Pending tasks\", a "
                "fixed error says how it was fixed), and say so;\n"
                "- never drop a user message, a requirement or a constraint the user stated, old or new;\n"
                "- \"Current work\" and \"Next step\" describe the end of the new conversation.")
        material = (f"<previous-summary>\n{previous_summary.strip()}\n</previous-summary>\n\n"
                    f"<conversation>\n{conversation}\n</conversation>")
    else:
        task = ("Summarise the conversation below, from its beginning, so that the work can continue from "
                "the summary alone.")
        material = f"<conversation>\n{conversation}\n</conversation>"
    return _join(task, material, _files_block(read_files, modified_files), _instructions_block(instructions),
                 "Answer with exactly these sections:\n" + sections_guide(), _budget_line(max_tokens))


def turn_prefix_prompt(conversation: str, *, instructions: str | None = None, read_files: Sequence[str] = (),
                       modified_files: Sequence[str] = (), max_tokens: int | None = None) -> str:
    """Summarise the first part of a turn whose later part stays verbatim in the context."""
    task = ("The conversation below is the FIRST PART of a single turn that was too long to keep whole; the "
            "rest of the turn stays in the context verbatim, right after your summary. Summarise briefly what "
            "this first part did and established, so that the kept rest makes sense: the user's request that "
            "started the turn (verbatim), files read or changed, results, errors and decisions. Do not describe "
            "anything beyond this part. Keep it short: a few lines per relevant section, \"(none)\" elsewhere.")
    material = f"<turn-prefix>\n{conversation}\n</turn-prefix>"
    return _join(task, material, _files_block(read_files, modified_files), _instructions_block(instructions),
                 "Answer with exactly these sections:\n" + sections_guide(), _budget_line(max_tokens))


def merge_prompt(partials: Sequence[str], *, previous_summary: str | None = None, instructions: str | None = None,
                 read_files: Sequence[str] = (), modified_files: Sequence[str] = (),
                 max_tokens: int | None = None) -> str:
    """Merge summaries of consecutive slices of one history (oldest first) into one summary."""
    task = ("The history of this session was too long to summarise at once, so it was summarised in "
            f"{len(partials)} consecutive parts. The partial summaries follow, OLDEST FIRST. Merge them into one "
            "summary of the whole history:\n"
            "- keep every fact, file path, error, decision and user message from every part that the length "
            "limit allows; remove repetition first;\n"
            "- where a later part changes an earlier one (a task done, a decision reversed, an error fixed), the "
            "later part wins, and say what changed;\n"
            "- \"All user messages\" lists the user's messages of all parts, in order (notes of messages left "
            "out merge into one: add their counts, span their versions);\n"
            "- \"Current work\" and \"Next step\" come from the LAST part.")
    blocks = []
    if previous_summary:
        blocks.append(f"<previous-summary>\n{previous_summary.strip()}\n</previous-summary>")
    for number, partial in enumerate(partials, start=1):
        blocks.append(f'<partial-summary part="{number}" of="{len(partials)}">\n{partial.strip()}\n</partial-summary>')
    return _join(task, "\n\n".join(blocks), _files_block(read_files, modified_files),
                 _instructions_block(instructions), "Answer with exactly these sections:\n" + sections_guide(),
                 _budget_line(max_tokens))
