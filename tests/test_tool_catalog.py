"""The tool catalog (`compaction.tools`) across the formats we import: which calls read a
file, which write or edit one, and where their paths are — what the summary's list of paths
modified and `quality`'s probes of them are made of (issue 29: no changed file dropped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessionstore import CompactionPolicy, SessionStore
from sessionstore.compaction.files import modified_changes
from sessionstore.compaction.tools import ToolCatalog
from sessionstore.importers import import_path
from sessionstore.quality import probes

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
CATALOG = ToolCatalog.default()
PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    pass\n+    run()\n*** End Patch"


def _use(name: str, tool_input: dict[str, Any]) -> tuple[str, str | None]:
    use = CATALOG.classify(name, tool_input)
    return use.category, use.path


def _changes(name: str, tool_input: dict[str, Any]) -> dict[str, str]:
    return modified_changes([{"name": name, "input": tool_input}], CompactionPolicy())


def test_claude_code() -> None:
    assert _use("Read", {"file_path": "/p/a.py", "offset": 5, "limit": 20}) == ("read", "/p/a.py")
    assert _use("Write", {"file_path": "/p/b.py", "content": "x = 1\n"}) == ("write", "/p/b.py")
    assert _use("Edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}) == ("edit", "/p/a.py")
    assert _use("MultiEdit", {"file_path": "/p/a.py", "edits": []}) == ("edit", "/p/a.py")
    assert _use("NotebookEdit", {"notebook_path": "/p/n.ipynb", "new_source": "x"}) == ("edit", "/p/n.ipynb")
    assert _use("Bash", {"command": "cat /p/a.py"}) == ("read", "/p/a.py")


def test_pi() -> None:
    assert _use("read", {"path": "src/a.ts", "offset": 1, "limit": 50}) == ("read", "src/a.ts")
    assert _use("write", {"path": "src/b.ts", "content": "export {}"}) == ("write", "src/b.ts")
    assert _changes("edit", {"path": "src/a.ts", "oldText": "let a", "newText": "const a"}) == {
        "src/a.ts": "edited: const a"}


def test_codex() -> None:
    assert _use("apply_patch", {"input": PATCH}) == ("edit", "src/app.py")
    assert _changes("shell", {"command": ["apply_patch", PATCH]}) == {"src/app.py": "edited: def main():"}
    assert _use("shell", {"command": ["bash", "-lc", "sed -n '1,20p' src/app.py"]}) == ("read", "src/app.py")
    assert _use("read_file", {"file_path": "src/app.py", "offset": 1, "limit": 40}) == ("read", "src/app.py")


def test_gemini_cli() -> None:
    """read_file's path is `file_path` now, `absolute_path` or `path` in older versions."""
    for key in ("file_path", "absolute_path", "path"):
        assert _use("read_file", {key: "/home/dev/p/header.py"}) == ("read", "/home/dev/p/header.py")
    assert _use("write_file", {"file_path": "/home/dev/p/new.py", "content": "def f(): ..."}) == (
        "write", "/home/dev/p/new.py")
    assert _changes("replace", {"file_path": "/home/dev/p/header.py", "old_string": "return a",
                                "new_string": "return a.strip()"}) == {
        "/home/dev/p/header.py": "edited: return a.strip()"}
    assert _use("run_shell_command", {"command": "python -m pytest -q"})[0] == "shell"
    assert _use("list_directory", {"path": "/home/dev/p"})[0] == "exploratory"
    assert _use("write_todos", {"todos": [{"description": "port", "status": "pending"}]})[0] == "critical"


def test_opencode() -> None:
    assert _use("read", {"filePath": "/w/inv/totals.py"}) == ("read", "/w/inv/totals.py")
    assert _use("write", {"filePath": "/w/inv/tests/t.py", "content": "def test(): ..."}) == (
        "write", "/w/inv/tests/t.py")
    assert _changes("edit", {"filePath": "/w/inv/totals.py", "oldString": "x = 1", "newString": "x = 2"}) == {
        "/w/inv/totals.py": "edited: x = 2"}
    assert _use("multiedit", {"filePath": "/w/inv/totals.py", "edits": [{"oldString": "a", "newString": "b"}]}) == (
        "edit", "/w/inv/totals.py")
    for name in ("patch", "apply_patch"):
        assert _use(name, {"patchText": PATCH}) == ("edit", "src/app.py")
        assert _changes(name, {"patchText": PATCH}) == {"src/app.py": "edited: def main():"}


def test_openhands_str_replace_editor_reads_or_edits_by_its_command() -> None:
    editor = {"path": "/workspace/s/core.py", "file_text": None, "old_str": None, "new_str": None,
              "insert_line": None, "view_range": None}
    assert _use("str_replace_editor", {**editor, "command": "view"}) == ("read", "/workspace/s/core.py")
    viewed = CATALOG.classify("str_replace_editor", {**editor, "command": "view", "view_range": [10, 29]})
    assert (viewed.start, viewed.count) == (10, 20)
    assert _changes("str_replace_editor", {**editor, "command": "create", "file_text": "def test(): ..."}) == {
        "/workspace/s/core.py": "written: def test(): ..."}
    assert _changes("str_replace_editor", {**editor, "command": "str_replace", "old_str": "import re\n",
                                           "new_str": "import re\nimport unicodedata\n"}) == {
        "/workspace/s/core.py": "edited: import unicodedata"}
    assert _changes("str_replace_editor", {**editor, "command": "insert", "insert_line": 3,
                                           "new_str": "X = 1"}) == {"/workspace/s/core.py": "edited: X = 1"}
    assert _changes("str_replace_editor", {**editor, "command": "undo_edit"}) == {
        "/workspace/s/core.py": "edited: undone"}
    assert _use("str_replace_editor", {"path": "/workspace/s/core.py"}) == ("other", "/workspace/s/core.py")
    assert _use("file_editor", {**editor, "command": "view"})[0] == "read"  # the OpenHands SDK's name
    assert _changes("edit_file", {"path": "/workspace/s/core.py", "content": "def slugify(text):", "start": 1,
                                  "end": -1}) == {"/workspace/s/core.py": "edited: def slugify(text):"}
    assert _use("execute_bash", {"command": "cat /workspace/s/core.py"}) == ("read", "/workspace/s/core.py")


def test_swe_agent_command_lines() -> None:
    """SWE-agent records a call as its command line, under the function's name or, without
    function calling, under `bash`."""
    view = CATALOG.classify("str_replace_editor",
                            {"command": "str_replace_editor view /testbed/a.py  --view_range 1 20"})
    assert (view.category, view.path, view.start, view.count) == ("read", "/testbed/a.py", 1, 20)
    line = "str_replace_editor str_replace /testbed/a.py --old_str 'class P:\n    pass' --new_str 'class P:\n    x = 1'"
    assert _changes("str_replace_editor", {"command": line}) == {"/testbed/a.py": "edited: class P:"}
    assert _changes("bash", {"command": "str_replace_editor create /testbed/b.py --file_text 'def f(): ...'"}) == {
        "/testbed/b.py": "written: def f(): ..."}
    assert _use("create", {"command": "create reproduce.py"}) == ("write", "reproduce.py")
    assert _use("create", {"filename": "reproduce.py"}) == ("write", "reproduce.py")
    assert _use("open", {"command": "open /testbed/a.py 40"}) == ("read", "/testbed/a.py")
    assert _use("bash", {"command": "open index.html"})[0] == "shell"  # a shell's open shows the model nothing
    assert _use("edit", {"command": "edit 'old' 'new'"}) == ("edit", None)  # it changes the file `open`ed


def test_copilot_cli_and_qwen_code() -> None:
    """Copilot CLI's view/create/edit (`path`, `view_range`, `file_text`, `old_str`); Qwen Code's are
    Gemini CLI's (read_file, write_file, edit with `file_path`)."""
    view = CATALOG.classify("view", {"path": "/p/a.py", "view_range": [3, 9]})
    assert (view.category, view.path, view.start, view.count) == ("read", "/p/a.py", 3, 7)
    assert _use("view", {"path": "/p"}) == ("read", "/p")
    assert _changes("create", {"path": "/p/b.py", "file_text": "x = 1\n"}) == {"/p/b.py": "written: x = 1"}
    assert _changes("edit", {"path": "/p/a.py", "old_str": "a", "new_str": "b = 2"}) == {"/p/a.py": "edited: b = 2"}
    assert _use("edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}) == ("edit", "/p/a.py")


@pytest.mark.parametrize("recording", ["copilot-cli/recorded", "qwen-code/recorded"])
def test_the_file_a_recorded_copilot_or_qwen_session_edited_is_probed(tmp_path: Path, recording: str) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    import_path(store, FIXTURES / recording)
    (session,) = store.sessions()
    (edit,) = [e for e in store.transcript(session.id) if e.kind == "tool_call" and e.payload["name"] == "edit"]
    path = edit.payload["input"].get("path") or edit.payload["input"]["file_path"]
    assert path.endswith("/run-tests.sh")
    assert [p.text for p in probes(store.transcript(session.id)) if p.kind == "modified_files"] == [path]
    store.close()


@pytest.mark.parametrize(("recording", "modified"), [
    ("gemini-cli/chats/session-2026-03-02T10-15-3f9c2a71.json", ["/home/dev/parsekit/src/parsekit/header.py"]),
    ("gemini-cli/chats/session-2026-04-11T09-30-8d41b7e2.jsonl", ["/home/dev/parsekit/src/parsekit/cli.py"]),
    ("opencode/storage", ["/home/dev/invoicer/invoicer/totals.py", "/home/dev/invoicer/tests/test_totals.py",
                          "/home/dev/invoicer/invoicer/cli.py"]),
    ("openhands/trajectory-slugify-accents.json", ["/workspace/slugify/slugify/core.py",
                                                    "/workspace/slugify/tests/test_accents.py"]),
    ("swe-agent", ["/testbed/sympy/core/_print_helpers.py"]),
])
def test_the_files_a_recording_changed_are_probed(tmp_path: Path, recording: str, modified: list[str]) -> None:
    """Each path an edit or write of the shipped recordings changed, at its latest change."""
    store = SessionStore(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    import_path(store, FIXTURES / recording)
    found = [p.text for s in store.sessions() for p in probes(store.transcript(s.id)) if p.kind == "modified_files"]
    assert found == modified
    store.close()
