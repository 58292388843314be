"""`sessionstore demo`: a scripted agent that really lists, searches and reads this repository.

There is no model: the assistant's words are scripted, but every tool result is real (the
files of this repository, grep hits, line-numbered reads the way Claude Code records them),
so the session has the shape and the weight of a real one. The agent calls
`maybe_compact()` before each model turn, as an agent should; its context window is small,
so it crosses the threshold and compacts (prune, tree-sitter rewrites, summary) on the way.
Then the demo prints the before/after figures, the rebuilt context and the log.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import display
from . import events as ev
from .compaction.policy import CompactionPolicy
from .store import CompactionResult, SessionStore

SYSTEM_PROMPT = ("You are a careful coding agent exploring the sessionstore repository. Read before you answer, "
                 "cite files and lines, keep a todo list.")


def repository_root() -> Path:
    """The checkout this package runs from (or the package folder itself, when installed)."""
    package = Path(__file__).resolve().parent
    return package.parent if (package.parent / "pyproject.toml").is_file() else package


@dataclass
class Step:
    """One user turn and the tools the scripted assistant uses to answer it."""

    ask: str
    actions: list[tuple[str, str]]  # (tool, argument): glob/grep/read/todo
    answer: str


SCRIPT: list[Step] = [
    Step("Give me a tour of this repository: what are its modules and what does each one do?",
         [("glob", "sessionstore/**/*.py"), ("read", "README.md"), ("read", "pyproject.toml")],
         "tour"),
    Step("How does an append stay safe when several processes write to one session?",
         [("grep", r"head_for_update|expected_version"), ("read", "sessionstore/repository/core.py"),
          ("read", "sessionstore/storage/statements.py"), ("todo", "Explain append concurrency")],
         "concurrency"),
    Step("Where is the context view built, and how are broken tool pairs repaired?",
         [("grep", r"def project|def render_anthropic|orphan"), ("read", "sessionstore/projection/fold.py"),
          ("read", "sessionstore/projection/render.py"), ("todo", "Explain the projection")],
         "projection"),
    Step("And compaction: which levels are there, and how is the cut point chosen?",
         [("glob", "sessionstore/compaction/*.py"), ("read", "sessionstore/compaction/pipeline.py"),
          ("read", "sessionstore/compaction/cut.py"), ("read", "sessionstore/compaction/prune.py"),
          ("grep", r"def plan_")],
         "compaction"),
    Step("Check the repository core once more: which public methods does the store have?",
         [("read", "sessionstore/repository/core.py"), ("grep", r"^    def [a-z]")],
         "methods"),
    Step("/compact keep the concurrency design and the projection repairs",
         [("compact", "keep the concurrency design and the projection repairs")],
         ""),
    Step("Summarise what you learned and list what you would look at next.",
         [("todo", "Wrap up")],
         "wrap-up"),
]


@dataclass
class ScriptedAgent:
    store: SessionStore
    session_id: str
    root: Path
    policy: CompactionPolicy
    console: Console
    calls: int = 0
    todos: list[dict[str, str]] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)

    # --------------------------------------------------------------- the loop

    def turn(self, step: Step) -> None:
        self.console.print(f"[bold]user[/bold]: {escape(step.ask)}", markup=True)
        if step.actions and step.actions[0][0] == "compact":
            # The user's /compact command: a manual compaction, always with a summary.
            result = self.store.compact(self.session_id, self.policy, instructions=step.actions[0][1])
            if result is not None:
                self.compacted(result)
            return
        self.append(ev.user(step.ask))
        for tool, argument in step.actions:
            self.before_model_call()
            name, tool_input, output = self.run_tool(tool, argument)
            call_id = self.next_call_id()
            self.append([ev.assistant(f"Using {name} on {argument}.", tool_calls=[ev.tool_call(call_id, name,
                                                                                                tool_input)]),
                         ev.tool_result(call_id, output)])
            self.console.print(f"  [dim]{escape(f'{name}({argument}) → {output.count(chr(10)) + 1} lines')}[/dim]",
                               markup=True)
        self.before_model_call()
        self.append(ev.assistant(self.answer(step.answer), meta={"model": "scripted"}))

    def before_model_call(self) -> None:
        """What an agent does before each model request: compact if past the threshold."""
        result = self.store.maybe_compact(self.session_id, self.policy)
        if result is not None:
            self.compacted(result)

    def compacted(self, result: CompactionResult) -> None:
        self.console.print(f"  [yellow]compacted ({escape(result.trigger)})[/yellow]: {escape(result.reason)}",
                           markup=True)

    def append(self, events: ev.NewEvent | list[ev.NewEvent]) -> None:
        # Like a real agent: we know the version we built on, and say so.
        self.store.append(self.session_id, events, expected_version=self.store.version(self.session_id))

    def next_call_id(self) -> str:
        self.calls += 1
        return f"toolu_demo_{self.calls:03d}"

    # --------------------------------------------------------------- real tools

    def run_tool(self, tool: str, argument: str) -> tuple[str, dict[str, object], str]:
        if tool == "glob":
            return "Glob", {"pattern": argument}, "\n".join(self.glob(argument))
        if tool == "grep":
            return "Grep", {"pattern": argument, "path": "."}, "\n".join(self.grep(argument)) or "No matches"
        if tool == "read":
            return "Read", {"file_path": str(self.root / argument)}, self.read(argument)
        self.todos = [*({**t, "status": "completed"} for t in self.todos), {"content": argument,
                                                                            "status": "in_progress"}]
        return "TodoWrite", {"todos": self.todos}, "Todos have been modified successfully."

    def files(self) -> Iterator[Path]:
        for path in sorted(self.root.rglob("*")):
            parts = path.relative_to(self.root).parts
            if path.is_file() and not any(p.startswith(".") or p in ("__pycache__", "build", "dist") or
                                          p.endswith(".egg-info") for p in parts):
                yield path

    def glob(self, pattern: str) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.glob(pattern) if "__pycache__" not in p.parts)

    def grep(self, pattern: str) -> list[str]:
        regex = re.compile(pattern)
        hits = []
        for path in self.files():
            if path.suffix not in (".py", ".md", ".toml", ".ini") or path.name == "demo.py":
                continue  # the demo's own script would only find its own search patterns
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{path.relative_to(self.root)}:{number}:{line.strip()[:160]}")
        return hits[:80]

    def read(self, relative: str) -> str:
        """Line-numbered, as Claude Code's Read tool records it (`     1→…`)."""
        path = self.root / relative
        if not path.is_file():
            return f"<tool_use_error>File does not exist: {relative}</tool_use_error>"
        lines = path.read_text(errors="replace").splitlines()
        return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, 1))

    # --------------------------------------------------------------- scripted words, real facts

    def answer(self, topic: str) -> str:
        if topic == "tour":
            lines = [f"- `{path}`: {doc}" for path, doc in self.module_docs()]
            return "The package is laid out by responsibility:\n" + "\n".join(lines)
        if topic == "concurrency":
            hits = self.grep(r"LOCK TABLE|BEGIN IMMEDIATE")
            return ("Appends advance the session head with a compare-and-set, UNIQUE(session_id, version) is the "
                    "last guard, SQLite takes its write lock at BEGIN IMMEDIATE and PostgreSQL serialises inserts "
                    "so positions commit in order. Where: " + "; ".join(h.split(":", 2)[0] + ":" + h.split(":", 2)[1]
                                                                          for h in hits[:4]))
        if topic == "projection":
            return ("`project()` in projection/fold.py folds events into view items (summary, scratchpad, kept "
                    "events with prunes and rewrites applied); projection/render.py makes the request valid: "
                    "results moved next to their calls, placeholder results for unanswered calls, orphan results "
                    "left out, roles alternating. Every repair becomes a Diagnostic.")
        if topic == "compaction":
            planners = [h.split(":", 2)[2] for h in self.grep(r"^def plan_")]
            return ("Three levels, cheapest first: prune (rules), rewrite (tree-sitter skeletons), summarise. "
                    "Planners: " + "; ".join(planners))
        if topic == "methods":
            return "SessionStore's public methods: " + ", ".join(self.public_methods("SessionStore")) + "."
        return ("Summary: events are immutable; the view is a projection; compaction appends prune, rewrite and "
                "compaction events. Next I would read the importers and the benchmarks.")

    def public_methods(self, class_name: str) -> list[str]:
        for path in self.files():
            if path.suffix != ".py":
                continue
            try:
                tree = ast.parse(path.read_text())
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name == class_name:
                    return [f.name for f in node.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")]
        return []

    def module_docs(self) -> list[tuple[str, str]]:
        docs = []
        for path in sorted((self.root / "sessionstore").rglob("*.py")) if (self.root / "sessionstore").is_dir() \
                else sorted(self.root.rglob("*.py")):
            try:
                doc = ast.get_docstring(ast.parse(path.read_text()))
            except (SyntaxError, UnicodeDecodeError):
                doc = None
            if doc:
                docs.append((str(path.relative_to(self.root)), doc.strip().splitlines()[0]))
        return docs


def run_demo(store: SessionStore, console: Console, *, context_window: int | None = None,
             command: str = "sessionstore", width: int | None = None) -> str:
    """Record the demo session into `store` and print what happened; returns the session id.

    `command` is how the user runs sessionstore on this store (``./scripts/sessionstore``, with
    ``--db …`` when they gave one): the commands suggested at the end start with it, so that
    each works as printed. `width`: what the log's lines must fit (None: not cut)."""
    root = repository_root()
    policy = CompactionPolicy(context_window=context_window or 30_000, reserve_tokens=4_000,
                              keep_recent_tokens=6_000, prune_protect_tokens=8_000, prune_minimum_tokens=2_000,
                              exploratory_window=6, restore_budget_tokens=8_000, restore_max_file_tokens=4_000)
    sid = store.create_session(metadata={"source": "demo", "title": "sessionstore demo agent", "root": str(root)})
    console.print(f"Recording a scripted agent session over [bold]{escape(str(root))}[/bold] into "
                  f"{escape(repr(store))}\nsession [bold]{sid}[/bold]; context window {policy.context_window:,} "
                  f"tokens, compaction threshold {policy.threshold:,}\n", markup=True)
    agent = ScriptedAgent(store, sid, root, policy, console)
    agent.append(ev.system(SYSTEM_PROMPT))
    for step in SCRIPT:
        agent.turn(step)
    stats = store.stats(sid)
    table = Table(title="before (transcript) and after (context view)", title_justify="left")
    for column in ("", "transcript", "view"):
        table.add_column(column, justify="right" if column else "left")
    table.add_row("tokens", f"{stats.transcript_tokens:,}", f"{stats.view_tokens:,}")
    table.add_row("events / messages", str(stats.events), str(stats.messages_in_view))
    table.add_row("compactions", str(stats.compactions), "")
    table.add_row("pruned / rewritten events", f"{stats.pruned} / {stats.rewritten}", "")
    console.print()
    console.print(table)
    console.print("\n[bold]The rebuilt context (what the model sees now):[/bold]", markup=True)
    console.print(display.view_text(store.context(sid), limit=400), markup=False)
    console.print("\n[bold]The log (every event; nothing is lost):[/bold]", markup=True)
    for line in display.log_lines(store.events(sid), brief=True, width=width):
        console.print(line, markup=False, soft_wrap=True)
    console.print("\n[bold]Explore[/bold] (each command works as printed, from this folder):", markup=True)
    for line in explore_commands(store, sid, command):
        console.print(f"  {line}", markup=False, soft_wrap=True)
    return sid


def explore_commands(store: SessionStore, session_id: str, command: str) -> list[str]:
    """What to run next on the demo's session: its view before the first compaction (time
    travel), the log, the figures, the page."""
    short = display.short_ids([session_id], [info.id for info in store.sessions()])[session_id]
    first = next(iter(store.events(session_id, kinds=["compaction"])), None)
    before = f" --at {first.version - 1}" if first is not None else ""
    return [f"{command} show {short}{before}", f"{command} log {short} --brief", f"{command} stats {short}",
            f"{command} html {short} -o demo.html"]
