"""Cline, Roo Code and Kilo Code tasks, and the Cline CLI's sessions.

Two layouts of one conversation: Anthropic-style messages (``{role, content}``, content a string
or typed blocks) written whole at every change.

* **VS Code extension tasks** (Cline ``saoudrizwan.claude-dev``, Roo Code
  ``rooveterinaryinc.roo-cline`` and Kilo Code ``kilocode.kilo-code`` keep the same files):
  ``<globalStorage>/tasks/<task id>/api_conversation_history.json`` (the messages, a JSON
  array; Roo and Kilo add ``ts`` to each), beside ``ui_messages.json`` (what the panel showed:
  ``{ts, type: say|ask, say|ask, text, conversationHistoryIndex}``; ``api_req_started`` rows
  hold the request's ``tokensIn``, ``tokensOut``, ``cacheReads``, ``cacheWrites`` and ``cost``)
  and ``task_metadata.json`` (Cline: ``model_usage``, ``environment_history`` with
  ``cline_version``). The history file is the transcript; the other two are its companions.
* **Cline CLI 3** (npm ``cline``): ``~/.cline/data/sessions/<id>/<id>.messages.json``
  (``{version, sessionId, origin, messages: [{id, role, content, ts, modelInfo, metrics}],
  system_prompt}``) beside ``<id>.json`` (cwd, model, provider, start time).

Which agent wrote a task is told from its path (the extension's storage folder), else from its
files (Cline's ``task_metadata.json``, Roo's ``<slug>`` mode tags, a mention of Kilo Code):
``metadata["agent"]`` is ``cline``, ``roo-code`` or ``kilo-code``. What each block becomes:

* text, image and thinking blocks → a message of the block's role, in runs between tool blocks;
* ``tool_use`` → a `tool_call`; ``tool_result`` (Roo, Kilo, the CLI) → its `tool_result`;
* Cline's results returned as user text (``[read_file for 'a.py'] Result:`` and the output, in
  one block or in the blocks after it) → the `tool_result` of the call of that name in the
  assistant message before (by order), the rest of the message (``<environment_details>``,
  feedback) a user message after the results;
* older versions' XML tool tags in the assistant's text (``<read_file><path>a.py</path>
  </read_file>``) → a `tool_call` each (id ``cline:<item>:<n>``, its parameters as input), the
  text around them the assistant message;
* compactions: Cline's ``summarize_task`` / ``condense`` call (its ``context`` is the summary)
  → a `compaction` after its result; Roo's and Kilo's condensed summary (``isSummary``) and the
  CLI's ``compaction_summary`` message → a `compaction` in its place. The summary stands for
  everything before; what follows is kept (``first_kept_version``: the compaction's own version;
  for the CLI, whose ``<id>.compaction.json`` holds its latest compaction and the messages it
  kept, the first kept message's). Roo's ``condense_context`` panel row gives the context size
  before and after. The CLI keeps only its latest compaction: a session that compacts again
  after it was imported no longer matches what is stored (the re-import reports a divergence;
  ``--on-divergence fork`` continues it).

Times: a message's ``ts`` where it has one; else (Cline) the first panel row written once the
message before it existed (``conversationHistoryIndex``). Usage: the message's own ``metrics``,
else the panel's ``api_req_started`` row of the request that answered it, in ``meta["usage"]``
in Anthropic's spelling (``cost`` beside it, the source's own figures in ``usage_source``).

The CLI's messages only shown to the user (``metadata.displayOnly``, an API error) → custom
events ``cline:display``, not in context.

A companion that cannot be read (the agent is rewriting it) is a warning: the messages import
without the times and usage it holds (events never change, so those stay without them; the
messages added later get theirs).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from ..errors import TranscriptError
from ..projection.usage import prompt_tokens
from .reading import SourceObject, read_document
from .reports import ParsedTranscript, TranscriptWarning
from .rules import (EventBuilder, as_int, as_list, image_block, parse_time, source_meta, text_blocks, text_of,
                    tool_output)
from .steps import object_input, pick_text, session_metadata, tool_name

FORMAT: Final = "cline"
HISTORY: Final = "api_conversation_history.json"
COMPANIONS: Final = ("ui_messages.json", "task_metadata.json")
AGENT_FOLDERS: Final = {"saoudrizwan.claude-dev": "cline", "rooveterinaryinc.roo-cline": "roo-code",
                        "kilocode.kilo-code": "kilo-code"}
FOLDERS: Final = tuple(f"{base}/User/globalStorage/{ext}/tasks" for base in
                       ("~/.config/Code", "~/Library/Application Support/Code", "~/.config/Cursor",
                        "~/.vscode-server/data") for ext in AGENT_FOLDERS) + ("~/.cline/data/tasks",
                                                                             "~/.cline/data/sessions")
# Cline's tools (and Roo's), as XML tags in older versions' assistant text.
XML_TOOLS: Final = frozenset({
    "read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace",
    "execute_command", "search_files", "list_files", "list_code_definition_names", "codebase_search",
    "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question", "attempt_completion",
    "plan_mode_respond", "new_task", "switch_mode", "condense", "summarize_task", "load_mcp_documentation",
    "web_fetch", "new_rule", "report_bug", "update_todo_list", "fetch_instructions", "run_slash_command"})
COMPACTING_TOOLS: Final = frozenset({"summarize_task", "condense"})
_XML_CALL = re.compile(r"<(" + "|".join(sorted(XML_TOOLS)) + r")>(.*?)</\1>", re.S)
_XML_PARAM = re.compile(r"<([a-z_]+)>\n?(.*?)\n?</\1>", re.S)
_RESULT_HEAD = re.compile(r"\[([a-z_]+)(?: for [^\n]*?)?\] Result:")
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \(([^)\n]+)\) Files")
_TASK = re.compile(r"<(?:task|user_input[^>]*)>\s*(.*?)\s*</(?:task|user_input)>", re.S)


def _message_like(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("role") in ("user", "assistant")
            and isinstance(value.get("content"), (str, list)))


def looks_like_document(value: Any) -> bool:
    """A task's message history (an array of messages, the first the user's), or a CLI session's messages file."""
    if isinstance(value, list):
        return bool(value) and _message_like(value[0]) and value[0]["role"] == "user" and all(
            _message_like(v) for v in value[:5])
    return (isinstance(value, dict) and isinstance(value.get("sessionId"), str)
            and isinstance(value.get("messages"), list) and isinstance(value.get("origin"), dict))


def history_file_of(path: Path) -> Path | None:
    """The transcript a companion file belongs to: a task's panel rows and metadata, a CLI session's record."""
    if path.name in COMPANIONS:
        found = path.parent / HISTORY
        return found if found.is_file() else None
    if path.name in (f"{path.parent.name}.json", f"{path.parent.name}.compaction.json"):
        found = path.parent / f"{path.parent.name}.messages.json"
        return found if found.is_file() else None
    return None


def _companion(path: Path, issues: list[TranscriptError]) -> Any:
    """A companion file's JSON, or None (absent, or being rewritten: a warning, nothing is lost)."""
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        issues.append(TranscriptWarning(str(path), 0, f"not read ({exc}): its times and usage wait for a later "
                                                      "import"))
        return None


def parse_file(path: Path) -> ParsedTranscript:
    document = read_document(path)
    root = document.root
    issues = document.issues
    folder = Path(path).parent
    metadata = session_metadata(FORMAT, path)
    rows: list[dict[str, Any]] = []
    if isinstance(root, dict):  # the CLI
        items = document.objects("messages")
        sid = root["sessionId"] or folder.name
        record = _companion(folder / f"{sid}.json", issues)
        _cli_metadata(metadata, root, record if isinstance(record, dict) else {})
        compacted = _companion(folder / f"{sid}.compaction.json", issues)
    else:
        items = document.objects("")
        sid = folder.name
        compacted = None
        ui = _companion(folder / COMPANIONS[0], issues)
        rows = [r for r in as_list(ui) if isinstance(r, dict)]
        task = _companion(folder / COMPANIONS[1], issues)
        _task_metadata(metadata, Path(path), items, rows, task if isinstance(task, dict) else {})
    state = _State(EventBuilder(FORMAT, sid, str(path), issues), rows)
    after, summary, kept = _cli_compaction(compacted)
    for so in items:
        if not _message_like(so.obj):
            state.b.issue(so.line, f"message {so.index} has no role user/assistant and content")
            continue
        state.message(so)
        if so.index == after and summary is not None:
            state.cli_compaction(so, summary, kept)
    events = state.b.finish()
    if "started_at" not in metadata:
        first = rows[0].get("ts") if rows else None
        started = parse_time(first) or next((e.created_at for e in events if e.created_at), None)
        if started is not None:
            metadata["started_at"] = started.isoformat()
    return ParsedTranscript(str(path), FORMAT, sid, metadata, events, issues, document.lines)


def _cli_compaction(state: Any) -> tuple[int | None, dict[str, Any] | None, list[str]]:
    """The CLI's compaction state: (the index of the last message it summarised, its summary message, the ids
    of the messages it kept after the summary)."""
    if not isinstance(state, dict) or as_int(state.get("source_message_count")) is None:
        return None, None, []
    messages = [m for m in as_list(state.get("messages")) if isinstance(m, dict)]
    summary = next((m for m in messages if isinstance(m.get("metadata"), dict)
                    and m["metadata"].get("kind") == "compaction_summary"), None)
    kept = [m["id"] for m in messages if m is not summary and isinstance(m.get("id"), str)]
    return state["source_message_count"] - 1, summary, kept


def _cli_metadata(metadata: dict[str, Any], root: dict[str, Any], record: dict[str, Any]) -> None:
    metadata["agent"] = "cline"
    origin = root.get("origin") if isinstance(root.get("origin"), dict) else {}
    metadata.update(pick_text(record, {"cwd": "cwd", "model": "model", "provider": "provider",
                                       "started_at": "started_at", "status": "status", "prompt": "first_prompt"}))
    title = (record.get("metadata") or {}).get("title") if isinstance(record.get("metadata"), dict) else None
    if isinstance(title, str) and title:
        metadata["title"] = title
    if isinstance(origin.get("version"), str):
        metadata["agent_version"] = origin["version"]
    if isinstance(root.get("agent"), str):
        metadata["cline_agent"] = root["agent"]


def _task_metadata(metadata: dict[str, Any], path: Path, items: list[SourceObject], rows: list[dict[str, Any]],
                   task: dict[str, Any]) -> None:
    metadata["agent"] = _agent(path, items, rows, task)
    environments = [e for e in as_list(task.get("environment_history")) if isinstance(e, dict)]
    version = next((e.get("cline_version") for e in reversed(environments) if e.get("cline_version")), None)
    if isinstance(version, str):
        metadata["agent_version"] = version
    models = [m for m in as_list(task.get("model_usage")) if isinstance(m, dict)]
    if models and isinstance(models[0].get("model_id"), str):
        metadata["model"] = models[0]["model_id"]
        if isinstance(models[0].get("model_provider_id"), str):
            metadata["provider"] = models[0]["model_provider_id"]
    first = text_of(items[0].obj.get("content")) if items else ""
    cwd = _CWD.search(first)
    if cwd:
        metadata["cwd"] = cwd.group(1)
    asked = rows[0].get("text") if rows and rows[0].get("say") == "text" else None
    task_text = _TASK.search(first)
    prompt = asked if isinstance(asked, str) and asked else task_text.group(1) if task_text else None
    if prompt:
        metadata["first_prompt"] = " ".join(prompt.split())[:300]


def _agent(path: Path, items: list[SourceObject], rows: list[dict[str, Any]], task: dict[str, Any]) -> str:
    """Cline, Roo Code or Kilo Code: the extension's storage folder, else what the task's files hold."""
    for part in path.parts:
        if part.lower() in AGENT_FOLDERS:
            return AGENT_FOLDERS[part.lower()]
    if task.get("environment_history") or task.get("model_usage"):
        return "cline"
    first = text_of(items[0].obj.get("content")) if items else ""
    if "kilo" in first.lower() or any("kilo" in str(r.get("text", "")).lower()[:2000] for r in rows[:3]):
        return "kilo-code"
    if "<slug>" in first or any("ts" in so.obj for so in items[:3]):
        return "roo-code"
    return "cline"


def _usage(source: dict[str, Any]) -> dict[str, Any]:
    """Usage in Anthropic's spelling, from Cline's ``metrics`` (either shape) or an ``api_req_started`` row."""
    tokens = source.get("tokens") if isinstance(source.get("tokens"), dict) else source
    pairs = (("input_tokens", ("prompt", "inputTokens", "tokensIn")),
             ("output_tokens", ("completion", "outputTokens", "tokensOut")),
             ("cache_read_input_tokens", ("cached", "cacheReadTokens", "cacheReads")),
             ("cache_creation_input_tokens", ("cacheWriteTokens", "cacheWrites")))
    usage = {}
    for name, keys in pairs:
        value = next((as_int(tokens.get(k)) for k in keys if as_int(tokens.get(k)) is not None), None)
        if value is not None:
            usage[name] = value
    return usage


class _State:
    def __init__(self, builder: EventBuilder, rows: list[dict[str, Any]]) -> None:
        self.b = builder
        self.pending: list[tuple[str, str, dict[str, Any]]] = []  # (call id, name, input) not yet answered
        self.compacting: dict[str, str] = {}  # call id -> summary of a summarize_task / condense call
        self.times: dict[int, int] = {}  # history index -> the first panel row written after the message before it
        self.requests: dict[int, dict[str, Any]] = {}  # history index before a request -> its api_req_started
        self.first_version: dict[str, int] = {}  # message id -> the version of its first event
        # Roo's and Kilo's condensations, in order: their context sizes before and after
        self.condensed = [r["contextCondense"] for r in rows if r.get("say") == "condense_context"
                          and isinstance(r.get("contextCondense"), dict)]
        for row in rows:
            index, ts = as_int(row.get("conversationHistoryIndex")), as_int(row.get("ts"))
            if index is not None and ts is not None and (index + 1 not in self.times or ts < self.times[index + 1]):
                self.times[index + 1] = ts
            if row.get("say") == "api_req_started" and index is not None and isinstance(row.get("text"), str):
                try:
                    info = json.loads(row["text"])
                except ValueError:
                    continue
                if isinstance(info, dict):
                    self.requests.setdefault(index, info)
        if rows and as_int(rows[0].get("ts")) is not None:
            self.times[0] = min(self.times.get(0, rows[0]["ts"]), rows[0]["ts"])

    def message(self, so: SourceObject) -> None:
        obj = so.obj
        index = so.index or 0
        created = parse_time(obj.get("ts")) or parse_time(self.times.get(index))
        meta = source_meta(so, message_id=obj.get("id") if isinstance(obj.get("id"), str) else None)
        model = obj.get("modelInfo") if isinstance(obj.get("modelInfo"), dict) else {}
        if isinstance(model.get("modelId") or model.get("id"), str):
            meta["model"] = model.get("modelId") or model.get("id")
        for key in ("condenseId", "condenseParent", "truncationParent", "metadata"):
            if obj.get(key) is not None:
                meta[key] = obj[key]
        if obj["role"] == "assistant":
            self._usage(obj, index, meta)
        if isinstance(obj.get("id"), str):
            self.first_version.setdefault(obj["id"], self.b.next_version)
        content = obj["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if isinstance(obj.get("metadata"), dict) and obj["metadata"].get("kind") == "compaction_summary":
            self._compaction(so, str(obj["metadata"].get("summary") or text_of(content)), meta, created,
                             tokens_before=as_int(obj["metadata"].get("tokensBefore")))
        elif isinstance(obj.get("metadata"), dict) and obj["metadata"].get("displayOnly") is True:
            self.b.custom(f"{FORMAT}:display", obj, meta, key=so.key, line=so.line, created_at=created)
        elif obj.get("isSummary") is True:
            sizes = self.condensed.pop(0) if self.condensed else {}
            self._compaction(so, text_of(content), meta, created, tokens_before=as_int(sizes.get(
                "prevContextTokens")), tokens_after=as_int(sizes.get("newContextTokens")))
        elif obj["role"] == "assistant":
            self._assistant(so, blocks, meta, created)
        else:
            self._user(so, blocks, meta, created)

    def cli_compaction(self, so: SourceObject, summary: dict[str, Any], kept: list[str]) -> None:
        """The CLI's latest compaction, after the last message it summarised; its kept messages stay in view."""
        info = summary["metadata"]
        meta = source_meta(so, compaction_state=True, kept_messages=kept, details=info.get("details"),
                           generated_at=info.get("generatedAt"))
        first_kept = min((self.first_version[mid] for mid in kept if mid in self.first_version),
                         default=self.b.next_version)
        text = info.get("summary") if isinstance(info.get("summary"), str) else text_of(summary.get("content"))
        self._compaction(so, text, meta, parse_time(info.get("generatedAt")),
                         tokens_before=as_int(info.get("tokensBefore")), key=f"compaction:{so.key}",
                         first_kept=first_kept)

    def _usage(self, obj: dict[str, Any], index: int, meta: dict[str, Any]) -> None:
        metrics = obj.get("metrics") if isinstance(obj.get("metrics"), dict) else None
        request = self.requests.get(index - 2)
        source = metrics if metrics is not None else request
        if source is None:
            return
        usage = _usage(source)
        if usage:
            meta["usage"] = usage
            meta["usage_source"] = {k: v for k, v in source.items() if k != "request"}
        cost = (request or source).get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            meta["cost"] = cost

    def _assistant(self, so: SourceObject, blocks: list[Any], meta: dict[str, Any], created: Any) -> None:
        self.pending = []  # a call the user's next message did not answer stays unanswered
        run: list[dict[str, Any]] = []
        first = [meta]  # the message's meta (usage, model) goes on its first event only

        def take() -> dict[str, Any]:
            taken = first.pop() if first else {k: v for k, v in meta.items() if k not in ("usage", "usage_source",
                                                                                           "cost")}
            return dict(taken)

        def flush(bi: int) -> None:
            if run:
                self.b.message("assistant", list(run), take(), key=so.key, index=f"m{bi}", line=so.line,
                               created_at=created)
                run.clear()

        calls = 0
        for bi, block in enumerate(blocks):
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "tool_use":
                flush(bi)
                call_id = block.get("id") if isinstance(block.get("id"), str) and block["id"] else \
                    f"{FORMAT}:{so.index}:{calls}"
                self._call(so, call_id, block.get("name"), block.get("input"), take(), bi, created)
                calls += 1
            elif btype == "text" and _XML_CALL.search(block.get("text") or ""):
                text = block["text"]
                at = 0
                for match in _XML_CALL.finditer(text):
                    run.extend(text_blocks(text[at:match.start()].strip("\n")))
                    flush(bi)
                    params = {m.group(1): m.group(2) for m in _XML_PARAM.finditer(match.group(2))}
                    m = take()
                    m["xml_tool"] = True
                    self._call(so, f"{FORMAT}:{so.index}:{calls}", match.group(1), params, m, f"{bi}.{calls}",
                               created)
                    calls += 1
                    at = match.end()
                run.extend(text_blocks(text[at:].strip("\n")))
            else:
                run.extend(_blocks([block], meta))
        flush(len(blocks))
        if first and not calls:  # an empty reply: still the model's turn
            self.b.message("assistant", [], take(), key=so.key, index="m", line=so.line, created_at=created)

    def _call(self, so: SourceObject, call_id: str, name: Any, input_: Any, meta: dict[str, Any], bi: Any,
              created: Any) -> None:
        name = tool_name(name)
        args = object_input(input_, "input")
        if self.b.tool_call(call_id, name, args, meta, key=so.key, index=f"call{bi}", line=so.line,
                            created_at=created) is not None:
            self.pending.append((call_id, name, args))
            if name in COMPACTING_TOOLS:
                self.compacting[call_id] = str(args.get("context") or "")

    def _user(self, so: SourceObject, blocks: list[Any], meta: dict[str, Any], created: Any) -> None:
        rest: list[Any] = []
        i = 0
        answered: list[str] = []
        while i < len(blocks):
            block = blocks[i]
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "tool_result":
                call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else ""
                m = dict(meta)
                output = _result_output(block.get("content"), m)
                self._result(so, call_id, output, block.get("is_error") is True, m, i, created)
                answered.append(call_id)
            elif btype == "text" and _RESULT_HEAD.match(block.get("text") or "") and self.pending:
                head = _RESULT_HEAD.match(block["text"])
                assert head is not None
                m = dict(meta)
                m["result_as_text"] = True
                j = i + 1
                if block["text"][head.end():].strip():  # newer versions: the output in the same block
                    output: str | list[dict[str, Any]] = block["text"]
                else:  # older ones: the header, then the output's blocks
                    while j < len(blocks) and not _ends_result(blocks[j]):
                        j += 1
                    output = _result_output(blocks[i:j], m)
                call_id = self._answering(head.group(1))
                self._result(so, call_id, output, False, m, i, created)
                answered.append(call_id)
                i = j
                continue
            else:
                rest.append(block)
            i += 1
        content = _blocks(rest, meta)
        if content or not answered:
            self.b.message("user", content, dict(meta), key=so.key, index="m", line=so.line, created_at=created)
        for call_id in answered:
            if call_id in self.compacting:
                self._compaction(so, self.compacting.pop(call_id), dict(meta), created, tokens_before=None,
                                 key=f"compaction:{call_id}")

    def _answering(self, name: str) -> str:
        """The pending call a ``[name …] Result:`` text answers: the first of that name, else the first."""
        return next((cid for cid, cname, _ in self.pending if cname == name), self.pending[0][0])

    def _result(self, so: SourceObject, call_id: str, output: Any, is_error: bool, meta: dict[str, Any], bi: int,
                created: Any) -> None:
        self.pending = [p for p in self.pending if p[0] != call_id]
        self.b.tool_result(call_id, output, is_error, meta, key=so.key, index=f"result{bi}", line=so.line,
                           created_at=created)

    def _compaction(self, so: SourceObject, summary: str, meta: dict[str, Any], created: Any, *,
                    tokens_before: int | None, key: str | None = None, first_kept: int | None = None,
                    tokens_after: int | None = None) -> None:
        meta = {k: v for k, v in meta.items() if k not in ("usage", "usage_source", "cost")}
        meta["trigger_recorded"] = False
        self.b.compaction(summary, first_kept or self.b.next_version, meta,
                          tokens_before=tokens_before or self._last_prompt(), tokens_after=tokens_after,
                          trigger="auto", summarizer=FORMAT, key=key or so.key, index="compaction", line=so.line,
                          created_at=created)

    def _last_prompt(self) -> int | None:
        usage = next((e.meta["usage"] for e in reversed(self.b.events) if isinstance(e.meta, dict)
                      and isinstance(e.meta.get("usage"), dict) and e.meta["usage"]), None)
        return prompt_tokens(usage) if usage is not None else None


def _ends_result(block: Any) -> bool:
    """Where a result given as separate blocks ends: the next result's header, or the environment details."""
    text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
    return isinstance(text, str) and (bool(_RESULT_HEAD.match(text)) or text.startswith("<environment_details>"))


def _blocks(blocks: list[Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Text, image and thinking blocks as content blocks (what they leave out in ``meta["block_extras"]``)."""
    out: list[dict[str, Any]] = []
    extras: dict[str, Any] = meta.get("block_extras", {})
    for block in blocks:
        if isinstance(block, str):
            out.extend(text_blocks(block))
            continue
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            out.append({"type": "text", "text": block["text"]})
            rest = {k: v for k, v in block.items() if k not in ("type", "text")}
        elif btype == "image" and isinstance(block.get("source"), dict):
            source = block["source"]
            out.append(image_block(source.get("media_type"), source.get("data")) if source.get("type") == "base64"
                       else {"type": "image", "source": source})
            rest = {}
        elif btype == "thinking" and isinstance(block.get("thinking"), str):
            kept = {"type": "thinking", "thinking": block["thinking"]}
            if isinstance(block.get("signature"), str):
                kept["signature"] = block["signature"]
            out.append(kept)
            rest = {k: v for k, v in block.items() if k not in kept}
        else:
            out.append(dict(block))
            rest = {}
        if rest:
            extras[str(len(out) - 1)] = rest
    if extras:
        meta["block_extras"] = extras
    return out


def _result_output(content: Any, meta: dict[str, Any]) -> str | list[dict[str, Any]]:
    """A tool result's content: a string as it is, text and image blocks as blocks, anything else as JSON."""
    if isinstance(content, str):
        return content
    blocks = as_list(content)
    if blocks and all(isinstance(b, dict) and b.get("type") in ("text", "image") for b in blocks):
        return _blocks(blocks, meta)
    return tool_output(content, meta)
