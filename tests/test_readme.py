"""Every ```python block of README.md and of docs/*.md runs as written, offline (issues 18 and 32):
each in its own interpreter and an empty working directory, so that a block cannot lean on
another's imports, on files of this checkout or on the network (its model calls go to
`sessionstore.testing`'s servers).

The blocks are read when the suite runs, so a block added to a page is a case at once. The README
stays short (issue 32: a newcomer reads it in five minutes), and every relative link of these
pages points to a file that exists, and to a heading of it when it names one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")


def page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def python_blocks(text: str, name: str = "README.md") -> list[tuple[int, str]]:
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
        raise ValueError(f"{name}:{start}: code block never closed")
    return blocks


BLOCKS = [(f"{page_name(page)}:{line}", source)
          for page in PAGES for line, source in python_blocks(page.read_text(encoding="utf-8"), page_name(page))]


def test_the_pages_have_python_blocks() -> None:
    """The README's ten-line example, and the examples that moved to docs/ (issue 32)."""
    assert any(where.startswith("README.md:") for where, _ in BLOCKS), BLOCKS
    assert len(BLOCKS) >= 13, [where for where, _ in BLOCKS]


def test_the_extractor_finds_blocks_and_their_lines() -> None:
    text = "intro\n```python\nx = 1\n```\n```\nls\n```\n```python\ny = 2\nz = 3\n```\n"
    assert python_blocks(text) == [(2, "x = 1\n"), (8, "y = 2\nz = 3\n")]
    with pytest.raises(ValueError, match="README.md:1"):
        python_blocks("```python\nx = 1\n")
    with pytest.raises(ValueError, match="docs/api.md:1"):
        python_blocks("```python\nx = 1\n", "docs/api.md")


@pytest.mark.parametrize(("where", "source"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_readme_block_runs(where: str, source: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONSTORE_", "OPENAI_", "ANTHROPIC_"))}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    script = tmp_path / f"block_{where.rsplit(':', 1)[1]}.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, (
        f"{where}: the ```python block exits {done.returncode}\n{source}\n"
        f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    assert "DeprecationWarning" not in done.stderr, f"{where}: an example on a deprecated API\n{done.stderr}"


def test_every_command_is_written_as_it_runs_from_a_checkout() -> None:
    """A `sessionstore <command>` the README or docs/ show to run is `./scripts/sessionstore <command>`:
    after the first command (`./scripts/sessionstore demo`) no `sessionstore` is on the PATH (issue 32)."""
    from sessionstore.cli.app import COMMANDS

    bare = re.compile(r"(?<![\w./-])(?<!from )sessionstore (?:--db \S+ )?(?:" + "|".join(COMMANDS) + r")\b")
    found = [f"{page_name(page)}:{n}: {line.strip()}" for page in PAGES
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1) if bare.search(line)]
    assert not found, "\n".join(found)


def test_the_readme_reads_in_five_minutes() -> None:
    """At most 250 lines (issue 32): what it is, the two commands, the ten-line API, a paragraph and
    a link per surface; the rest lives in docs/."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines"
    first = "\n".join(lines[:30])
    assert "./scripts/sessionstore demo" in first and "./scripts/test" in first and ".ci/run" in first


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def prose_lines(text: str, *, code_spans: bool = False) -> list[tuple[int, str]]:
    """(number, line) of the lines outside code blocks, inline code taken out unless `code_spans`."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line if code_spans else _CODE_SPAN.sub("", line)))
    return lines


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of each Markdown link of a page, outside code."""
    return [(number, target) for number, line in prose_lines(page.read_text(encoding="utf-8"))
            for target in _LINK.findall(line)]


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated heading numbered."""
    seen: dict[str, int] = {}
    for _, line in prose_lines(text, code_spans=True):
        match = re.match(r"^#{1,6} +(.*?)#*\s*$", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            if count:
                seen[f"{slug}-{count}"] = 1
    return set(seen)


def test_the_anchors_are_githubs() -> None:
    text = "# The Python API in ten lines\n## Recall and MCP: nothing is lost\n### `append` (issue 16)\n" \
           "## Notes\n## Notes\n```\n# not a heading\n```\n"
    assert anchors(text) == {"the-python-api-in-ten-lines", "recall-and-mcp-nothing-is-lost", "append-issue-16",
                             "notes", "notes-1"}


def test_every_relative_link_points_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in PAGES:
        for number, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:: not ours to check offline
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            where = f"{page_name(page)}:{number}: {target}"
            if not file.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and (file.suffix != ".md" or anchor not in anchors(file.read_text(encoding="utf-8"))):
                broken.append(f"{where} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for _, target in links(README)}
    missing = [page_name(page) for page in PAGES[1:] if page.resolve() not in linked]
    assert not missing, missing
