"""Text helpers of the outliner: signatures on one line, documentation cut to its first sentence."""

from __future__ import annotations

import re
from typing import Final

from .model import ELLIPSIS, MAX_LINE_CHARS

_WHITESPACE: Final = re.compile(r"\s+")
_OPEN_SPACE: Final = re.compile(r"([(\[]) ")
_CLOSE_SPACE: Final = re.compile(r",? ([)\]])")
_TRAILING_COMMA: Final = re.compile(r", ?(\}|$)")


def collapse(text: str) -> str:
    """One line: runs of whitespace become one space; `( a, b, )` from a wrapped list becomes `(a, b)`."""
    text = _WHITESPACE.sub(" ", text).strip()
    if "( " in text or "[ " in text:
        text = _OPEN_SPACE.sub(r"\1", text)
    if " )" in text or " ]" in text:
        text = _CLOSE_SPACE.sub(r"\1", text)
    if "," in text:
        text = _TRAILING_COMMA.sub(lambda m: " }" if m.group(1) else "", text)
    return text.removesuffix(" \\")


def clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


DOC_OPENERS: Final = ("/**", "/*!", "/*", "///", "//!", "//", "#", '"""', "'''")


# Markup in doc comments (C# XML docs, Javadoc HTML) that says nothing in one line of summary.
_DOC_TAGS: Final = re.compile(r"</?(?:summary|remarks|para|p|br|b|i|em|strong|c|code|value|returns)\s*/?>",
                              re.IGNORECASE)
_SENTENCE_END: Final = re.compile(r"[.!?](?=\s+[A-Z`\"'(\[]|\s*$)")


def doc_summary(text: str) -> tuple[str, bool]:
    """The summary of a comment or docstring, and whether more followed.

    The summary is the first sentence of the first paragraph: the first line when that line
    is a sentence, and never half a sentence wrapped over two comment lines (Go's style).
    Tags (`@param`) end the paragraph.
    """
    content: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        for opener in DOC_OPENERS:
            if line.startswith(opener):
                line = line[len(opener):]
                break
        line = line.removesuffix("*/").removesuffix('"""').removesuffix("'''").strip()
        line = _DOC_TAGS.sub("", line.lstrip("*").strip() if line.startswith("*") else line).strip()
        content.append(line)
    paragraph: list[str] = []
    for line in content:
        if not line or line.startswith("@"):
            if paragraph:
                break
            continue
        paragraph.append(line)
        if _SENTENCE_END.search(line):
            break
    if not paragraph:
        return "", False
    joined = " ".join(paragraph)
    end = _SENTENCE_END.search(joined)
    summary = joined[: end.end()] if end is not None else joined
    return summary, sum(len(line) for line in content if line) > len(summary) + 1


_STRING_PREFIX: Final = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")


def docstring_text(text: str) -> tuple[str, bool]:
    """The first line of a string literal's content, and whether more followed."""
    match = _STRING_PREFIX.match(text)
    if match is None:
        return "", False
    quote = match.group(1)
    inner = text[match.end():]
    inner = inner[: -len(quote)] if inner.endswith(quote) else inner
    return doc_summary(inner)
