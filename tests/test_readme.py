"""Every ```python block of README.md runs as written, offline (issue 18): each in its own
interpreter and an empty working directory, so that a block cannot lean on another's imports,
on files of this checkout or on the network (its model calls go to `sessionstore.testing`'s servers).

The blocks are read when the suite runs, so a block added to the README is a case at once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_FENCE = re.compile(r"^```(\w*)\s*$")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the opening fence, source) of each ```python block; an unclosed fence is an error."""
    blocks: list[tuple[int, str]] = []
    lang: str | None = None
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if lang is None:
            if match:
                lang, start, lines = match.group(1), number, []
        elif line.strip() == "```":
            if lang == "python":
                blocks.append((start, "\n".join(lines) + "\n"))
            lang = None
        else:
            lines.append(line)
    if lang is not None:
        raise ValueError(f"README.md:{start}: code block never closed")
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 5, BLOCKS


def test_the_extractor_finds_blocks_and_their_lines() -> None:
    text = "intro\n```python\nx = 1\n```\n```\nls\n```\n```python\ny = 2\nz = 3\n```\n"
    assert python_blocks(text) == [(2, "x = 1\n"), (8, "y = 2\nz = 3\n")]
    with pytest.raises(ValueError, match="README.md:1"):
        python_blocks("```python\nx = 1\n")


@pytest.mark.parametrize(("line", "source"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_block_runs(line: int, source: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONSTORE_", "OPENAI_", "ANTHROPIC_"))}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    script = tmp_path / f"readme_{line}.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, (
        f"README.md:{line}: the ```python block exits {done.returncode}\n{source}\n"
        f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    assert "DeprecationWarning" not in done.stderr, f"README.md:{line}: an example on a deprecated API\n{done.stderr}"


def test_every_command_is_written_as_it_runs_from_a_checkout() -> None:
    """A `sessionstore <command>` the README shows to run is `./scripts/sessionstore <command>`: after the
    first command (`./scripts/sessionstore demo`) no `sessionstore` is on the PATH (issue 32)."""
    from sessionstore.cli.app import COMMANDS

    bare = re.compile(r"(?<![\w./-])(?<!from )sessionstore (?:--db \S+ )?(?:" + "|".join(COMMANDS) + r")\b")
    lines = README.read_text(encoding="utf-8").splitlines()
    found = [f"README.md:{n}: {line.strip()}" for n, line in enumerate(lines, 1) if bare.search(line)]
    assert not found, "\n".join(found)
