"""The entry points: `skeleton()` outlines a source text, `detect_language()` names the language of a path."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from .braces import BRACE_LANGUAGES, BraceOutliner
from .languages import ALIASES, CPP, EXTENSIONS, FILE_NAMES, SPECS, TEXT_EXTENSIONS
from .model import Skeleton, Spec
from .outliner import Outliner
from .repair import parse, too_broken
from .scripting import SCRIPT_LANGUAGES, ScriptOutliner

# Each language is walked by its family's outliner, which has the handlers its rules name.
OUTLINERS: Final[Mapping[str, type[Outliner]]] = {
    **dict.fromkeys(BRACE_LANGUAGES, BraceOutliner),
    **dict.fromkeys(SCRIPT_LANGUAGES, ScriptOutliner),
}


def detect_language(path: str | None) -> str | None:
    """The outline language of a path, by extension or well-known file name; None for text.

    Lock files and text formats give None even when a grammar exists, because rewriting
    them as outlines would lose the very content they are read for.
    """
    if not path:
        return None
    name = os.path.basename(path.replace("\\", "/"))
    if name in FILE_NAMES:
        return FILE_NAMES[name]
    lowered = name.lower()
    if lowered.endswith(".lock") or lowered in {"package-lock.json", "pnpm-lock.yaml"}:
        return None
    ext = os.path.splitext(lowered)[1]
    if ext in TEXT_EXTENSIONS:
        return None
    return EXTENSIONS.get(ext)


def skeleton(source: str, *, language: str | None = None, path: str | None = None,
             first_line: int = 1) -> Skeleton | None:
    """The outline of `source`, or None when it is text, unsupported, or did not parse.

    `language` wins over `path`; without either nothing is guessed. `first_line` is the
    number of the first line of `source` in its file (a read with an offset).
    Never raises on bad input: a parser problem gives None.
    """
    name = _resolve_language(language, path)
    if name is None or not source.strip():
        return None
    try:
        result, errors = _outline(source, SPECS[name], first_line)
        if errors and name == "c" and language is None:
            # `.h` is shared by C and C++; a header the C grammar chokes on is tried as C++.
            alternative, alternative_errors = _outline(source, CPP, first_line)
            if alternative is not None and (result is None or alternative_errors < errors):
                result = alternative
        return result
    except Exception:  # noqa: BLE001 - a compaction must never fail on one odd file; it stays verbatim
        return None


def _resolve_language(language: str | None, path: str | None) -> str | None:
    if language is not None:
        key = language.strip().lower()
        key = ALIASES.get(key, key)
        return key if key in SPECS else None
    return detect_language(path)


def _outline(source: str, spec: Spec, first_line: int) -> tuple[Skeleton | None, int]:
    """The skeleton (None when refused) and the rows the parser could not make sense of."""
    parsed = parse(source, spec, first_line)
    if too_broken(parsed, source):
        return None, parsed.error_rows
    outliner = OUTLINERS[spec.name](parsed.data, spec, first_line - parsed.synthetic_rows,
                                    synthetic_rows=parsed.synthetic_rows,
                                    strict=parsed.repaired and parsed.error_rows > 0)
    outliner.outline_root(parsed.root)
    if not outliner.lines:
        return None, parsed.error_rows
    return Skeleton(
        text=outliner.render(),
        language=spec.name,
        original_lines=_count_lines(source),
        first_line=first_line,
        symbols=tuple(outliner.symbols),
        complete=not parsed.root.has_error,
        repaired=parsed.repaired,
    ), parsed.error_rows


def _count_lines(source: str) -> int:
    return len(source.splitlines())
