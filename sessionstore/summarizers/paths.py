"""Paths as a summary writes them: relative to the project's root, named once. Pure.

An agent's paths are absolute (`/home/me/src/spotter-4te/lib/spotter/web/live/session_live.ex`):
a list of thirty of them costs more tokens in their shared prefix than in their names, and a
summary held to its budget then cuts the list short while most of it is the same prefix said
again. Written relative to the directory they share, with that directory named once, each
path costs a few tokens, and the whole list fits where the absolute one did not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Final

__all__ = ["MODIFIED_LABEL", "PATH_LABELS", "READ_LABEL", "ROOT_LABEL", "common_root", "path_lines", "relative"]

ROOT_LABEL: Final = "Root: "
MODIFIED_LABEL: Final = "Modified: "
READ_LABEL: Final = "Read: "
# The entries of a summary's "Files and code" that list paths (the others are notes on files).
PATH_LABELS: Final = (ROOT_LABEL, MODIFIED_LABEL, READ_LABEL)
# A root is worth naming when it saves at least this many characters over the absolute paths.
_MIN_SAVING: Final = 16


def _absolute(path: str) -> bool:
    return path.startswith("/") and " " not in path.strip()


def common_root(paths: Iterable[str]) -> str | None:
    """The project's root, as the absolute `paths` show it: the deepest directory among those
    holding the most of them, when naming it once saves characters (the paths an agent touches
    outside it — a temporary file, a library — stay absolute); None when no directory below
    the filesystem's root saves any."""
    under: Counter[tuple[str, ...]] = Counter()
    for path in dict.fromkeys(p for p in paths if _absolute(p)):
        folders = PurePosixPath(path).parent.parts
        for depth in range(2, len(folders) + 1):  # "/" alone is no root
            under[folders[:depth]] += 1
    worth = [(count, len(parts), parts) for parts, count in under.items()
             if count * (len(root := str(PurePosixPath(*parts))) + 1) - len(ROOT_LABEL) - len(root) - 1 >= _MIN_SAVING]
    return str(PurePosixPath(*max(worth)[2])) if worth else None


def relative(path: str, root: str | None) -> str:
    """`path` relative to `root` when it lies under it; else as it is."""
    if root is None or not _absolute(path):
        return path
    prefix = root.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def path_lines(modified: Sequence[str], read: Sequence[str] = (), changes: Mapping[str, str] | None = None
               ) -> list[str]:
    """The entries of "Files and code" that list paths: the root they share (named once), the
    paths modified, each with what changed (`changes`: "edited: def parse(text)"), and the
    paths read — each path relative to the root, so that it costs a few tokens."""
    root = common_root([*modified, *read])
    lines = [f"{ROOT_LABEL}{root}/"] if root else []
    if modified:
        lines.append(MODIFIED_LABEL + ", ".join(
            relative(path, root) + (f" ({note})" if (note := (changes or {}).get(path)) else "") for path in modified))
    if read:
        lines.append(READ_LABEL + ", ".join(relative(path, root) for path in read))
    return lines
