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

__all__ = ["MODIFIED_LABEL", "PATH_LABELS", "READ_LABEL", "ROOT_LABEL", "common_root", "flat_lines", "grouped_lines",
           "is_absolute", "is_path_line", "path_lines", "relative"]

ROOT_LABEL: Final = "Root: "
MODIFIED_LABEL: Final = "Modified: "
READ_LABEL: Final = "Read: "
# The entries of a summary's "Files and code" that list paths (the others are notes on files).
PATH_LABELS: Final = (ROOT_LABEL, MODIFIED_LABEL, READ_LABEL)
# A root is worth naming when it saves at least this many characters over the absolute paths.
_MIN_SAVING: Final = 16
# A folder's own line ("- Modified in src/app/: a.py, b.py") costs about this many characters
# besides its name: a folder is grouped only when naming it once saves more.
_GROUP_CHARS: Final = 16
# A line of the paths of one folder: "Modified in src/app/: main.py (edited: …), util.py".
_GROUP_LINE: Final = re.compile(r"^(Modified|Read) in (.+?/): ")


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


def is_path_line(entry: str, labels: Sequence[str] = PATH_LABELS) -> bool:
    """An entry of "Files and code" that lists paths under one of `labels` (flat or of one
    folder), not a note."""
    group = _GROUP_LINE.match(entry)
    return entry.startswith(tuple(labels)) or (group is not None and f"{group.group(1)}: " in labels)


def _folder(item: str) -> str:
    """The folder of a path item ("src/app/main.py (edited: x/y)" → "src/app/"), "" for none."""
    path = _CHANGE_NOTE_TAIL.sub("", item)
    return path[: path.rfind("/") + 1] if not item.startswith("… ") and "/" in path.rstrip("/") else ""


# A path item's change note, which may itself hold slashes.
_CHANGE_NOTE_TAIL: Final = re.compile(r" \(.*\)$")


def grouped_lines(lines: Sequence[str]) -> list[str]:
    """Flat path lines ("Modified: a, b, c") with the paths of a folder that holds several
    grouped on a line of its own ("Modified in src/app/: main.py, util.py") when naming the
    folder once saves characters; the other paths (and a count of paths left out) stay on the
    flat line, the folders' lines after it; one short note a path at most."""
    out: list[str] = []
    for line in lines:
        label, sep, rest = line.partition(": ")
        if not sep or f"{label}: " not in (MODIFIED_LABEL, READ_LABEL) or not rest:
            out.append(line)
            continue
        items = rest.split(", ")
        # A count of paths left out ("… 3 more paths …") stays beside the path before it.
        of = [_folder(item) for item in items]
        for i, item in enumerate(items):
            if item.startswith("… ") and i:
                of[i] = of[i - 1]
        folders: dict[str, list[str]] = {}
        for folder, item in zip(of, items):
            folders.setdefault(folder, []).append(item)
        worth = {f for f, group in folders.items()
                 if f and (sum(not i.startswith("… ") for i in group) - 1) * len(f) >= _GROUP_CHARS}
        flat = [item for folder, item in zip(of, items) if folder not in worth]
        out += [f"{label}: " + ", ".join(flat)] if flat else []
        out += [f"{label} in {f}: " + ", ".join(item if item.startswith("… ") else item[len(f):] for item in group)
                for f, group in folders.items() if f in worth]
    return out


def flat_lines(lines: Sequence[str]) -> list[str]:
    """`grouped_lines` undone: each label's paths on one line, written whole again (the form
    a summary's fit counts and reduces); other entries as they are, in their places."""
    out: list[str] = []
    flat: dict[str, list[str]] = {}
    for line in lines:
        group = _GROUP_LINE.match(line)
        label, sep, rest = line.partition(": ")
        if group is not None:
            label, folder = group.group(1), group.group(2)
            items = [folder + item if not item.startswith("… ") else item
                     for item in line[group.end():].split(", ")]
        elif sep and f"{label}: " in (MODIFIED_LABEL, READ_LABEL):
            items = rest.split(", ") if rest else []
        else:
            out.append(line)
            continue
        if label not in flat:
            flat[label] = []
            out.append(label)  # where the label's line goes
        flat[label] += items
    return [f"{line}: " + ", ".join(flat[line]) if line in flat else line for line in out]


def path_lines(modified: Sequence[str], read: Sequence[str] = (), changes: Mapping[str, str] | None = None,
               project: str | None = None) -> list[str]:
    """The entries of "Files and code" that list paths: the root they share (named once: the
    session's `project` directory when they lie under it), the paths modified, each with a
    short note of what changed (`changes`: "edited: def parse(text)"), and the paths read —
    each path relative to the root, so that it costs a few tokens, and grouped by folder
    (`grouped_lines`)."""
    root = common_root([*modified, *read], project)
    lines = [f"{ROOT_LABEL}{root}/"] if root else []
    if modified:
        lines.append(MODIFIED_LABEL + ", ".join(
            relative(path, root) + (f" ({_short(note)})" if (note := (changes or {}).get(path)) else "")
            for path in modified))
    if read:
        lines.append(READ_LABEL + ", ".join(relative(path, root) for path in read))
    return grouped_lines(lines)
