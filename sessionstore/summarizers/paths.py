"""Paths as a summary writes them: relative to the project's root, named once. Pure.

An agent's paths are absolute (`/home/me/src/spotter-4te/lib/spotter/web/live/session_live.ex`):
a list of thirty of them costs more tokens in their shared prefix than in their names, and a
summary held to its budget then cuts the list short while most of it is the same prefix said
again. Written relative to the directory they share, with that directory named once, each
path costs a few tokens, and the whole list fits where the absolute one did not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Final

__all__ = ["MODIFIED_LABEL", "PATH_LABELS", "READ_LABEL", "ROOT_LABEL", "common_root", "is_absolute", "path_lines",
           "relative"]

ROOT_LABEL: Final = "Root: "
MODIFIED_LABEL: Final = "Modified: "
READ_LABEL: Final = "Read: "
# The entries of a summary's "Files and code" that list paths (the others are notes on files).
PATH_LABELS: Final = (ROOT_LABEL, MODIFIED_LABEL, READ_LABEL)
# A root is worth naming when it saves at least this many characters over the absolute paths.
_MIN_SAVING: Final = 16


# A Windows path: a drive letter, a colon and a separator ("c:\\Users\\me\\project\\app.py").
_DRIVE: Final = re.compile(r"^[A-Za-z]:[\\/]")
# A change note longer than this keeps its head: one short note a path, at most.
NOTE_CHARS: Final = 60


def is_absolute(path: str) -> bool:
    return (path.startswith("/") or _DRIVE.match(path) is not None) and " " not in path.strip()


def _posix(path: str) -> str:
    """An absolute path with forward slashes (a Windows one's backslashes turned), as a root is
    written: what a model reads either way, and one form to compare."""
    return path.replace("\\", "/") if _DRIVE.match(path) else path


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` (both absolute; a Windows one compared case-insensitively, as
    its filesystem does), None when it does not lie under it."""
    path, prefix = _posix(path), _posix(root).rstrip("/") + "/"
    if _DRIVE.match(path):
        return path[len(prefix):] if path.casefold().startswith(prefix.casefold()) else None
    return path[len(prefix):] if path.startswith(prefix) else None


def common_root(paths: Iterable[str], project: str | None = None) -> str | None:
    """The project's root: `project` (the session's working directory, from its metadata) when
    a path lies under it, else the deepest directory among those holding the most of the
    absolute `paths` as they show it, when naming it once saves characters (the paths an agent
    touches outside it — a temporary file, a library — stay absolute); None when no directory
    below the filesystem's root saves any. Written with forward slashes."""
    paths = [p for p in dict.fromkeys(paths) if is_absolute(p)]
    root = _posix(project or "").rstrip("/")
    if len(root) > 3 and is_absolute(project or "") and any(_under(p, root) is not None for p in paths):
        return root  # not the filesystem's root ("/", "c:/"): that names nothing
    under: Counter[tuple[str, ...]] = Counter()
    for path in paths:
        folders = PurePosixPath(_posix(path)).parent.parts
        for depth in range(2, len(folders) + 1):  # "/" alone is no root
            under[folders[:depth]] += 1
    worth = [(count, len(parts), parts) for parts, count in under.items()
             if count * (len(root := str(PurePosixPath(*parts))) + 1) - len(ROOT_LABEL) - len(root) - 1 >= _MIN_SAVING]
    return str(PurePosixPath(*max(worth)[2])) if worth else None


def relative(path: str, root: str | None) -> str:
    """`path` relative to `root` when it lies under it; else as it is."""
    if root is None or not is_absolute(path):
        return path
    inside = _under(path, root)
    return path if inside is None else inside


def _short(note: str) -> str:
    return note if len(note) <= NOTE_CHARS else note[:NOTE_CHARS].rstrip() + "…"


def path_lines(modified: Sequence[str], read: Sequence[str] = (), changes: Mapping[str, str] | None = None,
               project: str | None = None) -> list[str]:
    """The entries of "Files and code" that list paths: the root they share (named once: the
    session's `project` directory when they lie under it), the paths modified, each with a
    short note of what changed (`changes`: "edited: def parse(text)"), and the paths read —
    each path relative to the root, so that it costs a few tokens."""
    root = common_root([*modified, *read], project)
    lines = [f"{ROOT_LABEL}{root}/"] if root else []
    if modified:
        lines.append(MODIFIED_LABEL + ", ".join(
            relative(path, root) + (f" ({_short(note)})" if (note := (changes or {}).get(path)) else "")
            for path in modified))
    if read:
        lines.append(READ_LABEL + ", ".join(relative(path, root) for path in read))
    return lines
