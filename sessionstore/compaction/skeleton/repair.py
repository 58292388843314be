"""Parsing, and fragment repair: a piece cut out of the middle of a file is parsed inside made-up context."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from tree_sitter import Node, Parser

from .model import Fragment, Spec

# A parse whose ERROR nodes cover more than this share of the non-blank lines is not outlined:
# what survives would be fragments, and fragments of bodies look like declarations.
MAX_ERROR_SHARE: Final = 0.5
# A repaired parse this close to clean is taken without trying the other repairs: a read cut
# in the middle of an expression keeps a few broken rows whatever context it is given.
GOOD_ENOUGH_ERROR_SHARE: Final = 0.05


@functools.cache
def _parser(grammar: str) -> Parser:
    """One parser per grammar for the life of the process: creating one costs a parse or two."""
    from tree_sitter_language_pack import get_parser

    return get_parser(grammar)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _Parsed:
    root: Node
    data: bytes  # the text parsed, with any synthetic context
    synthetic_rows: int  # lines of made-up context before the source
    error_rows: int
    repaired: bool


def parse(source: str, spec: Spec, first_line: int) -> _Parsed:
    """The parse of `source`, or of a repaired copy when `source` is a piece cut out of a file.

    A piece that starts indented, read from the middle of a file or failing to parse, starts
    inside some scope: its first statements belong to a body, and parsed as they stand they
    would pass for top-level declarations. Only candidates that put it back inside a scope
    are accepted then. Among candidates the one with the fewest rows in ERROR nodes wins
    (earlier ones on ties); the search stops at the first clean one. Parsing is most of the
    cost, so the plain parse is skipped when the brackets already say it would fail.
    """
    parser = _parser(spec.grammar)
    fragment = spec.fragment
    if fragment is None:
        return _parse_plain(parser, source)
    indented = _starts_indented(source)
    balance = _balance(source, fragment.tokens)
    plain: _Parsed | None = None
    if balance.even and not (indented and first_line > 1):
        plain = _parse_plain(parser, source)
        if not plain.root.has_error:
            return plain
    best = None if indented else plain
    good_enough = source.count("\n") * GOOD_ENOUGH_ERROR_SHARE
    for text, rows in _repairs(source, fragment, balance, within_scope=indented):
        data = text.encode("utf-8")
        root = parser.parse(data).root_node
        errors = _error_rows(root) + _disguised_statements(root, rows, data, fragment)
        if best is None or errors < best.error_rows:
            best = _Parsed(root, data, rows, errors, repaired=True)
            if errors <= good_enough:
                break
    return best or plain or _parse_plain(parser, source)


def _parse_plain(parser: Parser, source: str) -> _Parsed:
    data = source.encode("utf-8")
    root = parser.parse(data).root_node
    return _Parsed(root, data, 0, _error_rows(root), repaired=False)


def too_broken(parsed: _Parsed, source: str) -> bool:
    """True when so much failed to parse that an outline would be mostly guesswork."""
    if parsed.root.type == "ERROR":
        return True
    if not parsed.root.has_error:
        return False
    nonblank = sum(1 for line in source.splitlines() if line.strip()) or 1
    return parsed.error_rows > MAX_ERROR_SHARE * nonblank


# --------------------------------------------------------------------------- repairing fragments

_CLOSERS: Final = {"{": "}", "(": ")", "[": "]"}
_IDENTIFIER: Final = re.compile(rb"[A-Za-z_$][\w$]*")
# `_sweeper.Dispose();` taken for a field of type `_sweeper.Dispose`: a call, not a declaration.
_CALL_STATEMENT: Final = re.compile(rb"[\w$.]+\s*\(.*\)\s*;?\s*$", re.S)
_OPENERS: Final = {"}": "{", ")": "(", "]": "["}


def _repairs(source: str, fragment: Fragment, balance: _Balance, within_scope: bool) -> Iterator[tuple[str, int]]:
    """Candidate texts that give a partial read its missing context: (text, synthetic rows before it).

    The read's brackets say which scopes it closes without opening and which it leaves open;
    the indentation of its first line says how deep it starts (a class member read from the
    middle closes nothing, yet sits inside a class). `within_scope` rules out candidates that
    leave the start at top level.
    """
    leading, in_comment = balance.leading, balance.in_comment
    closing = balance.unterminated + "".join(_CLOSERS[o] for o in reversed(balance.still_open))
    if fragment.indented:
        if closing and not within_scope:
            yield source + "\n" + closing, 0
        if within_scope:
            yield from _indented_repairs(source, fragment, closing)
        return
    opening = ["/*"] if in_comment else []
    if (closing or opening) and not within_scope:
        yield "\n".join([*opening, source]) + "\n" + closing, len(opening)
    unopened = max(0, _indent_levels(source) - leading.count("}")) if within_scope else 0
    if within_scope and not leading:
        unopened = max(1, unopened)
    if not leading and not unopened:
        return
    scopes = [*leading, *"}" * unopened]
    seen: set[str] = set()
    for container, variant in _variants(fragment, scopes.count("}")):
        lines = [*_openers(scopes, variant, container, fragment), *opening]
        text = "\n".join([*lines, source]) + "\n" + closing + "}" * unopened
        if text not in seen:
            seen.add(text)
            yield text, len(lines)


def _variants(fragment: Fragment, braces: int) -> list[tuple[str, str]]:
    """(container opener, variant) pairs, most likely first: the outermost scope a class (or
    namespace), a function, or classes nested in classes."""
    variants = [(container, "container") for container in fragment.containers]
    variants.append(("", "function"))
    if braces > 1:
        variants.extend((container, "nested") for container in fragment.containers)
    return variants


def _disguised_statements(root: Node, synthetic_rows: int, data: bytes, fragment: Fragment) -> int:
    """Rows of a made-up class's members that are statements in disguise.

    JS: a "field" named `return` or `const`. Python: any member, when none of the members
    that follow the made-up method is a definition.
    """
    if not fragment.field_types and not fragment.definition_types:
        return 0
    count = 0
    for child in root.named_children:
        if child.start_point[0] >= synthetic_rows:
            break
        body = child.child_by_field_name("body")
        members = [m for m in (body.named_children if body is not None else ())
                   if m.start_point[0] >= synthetic_rows and m.type != "comment"]
        if fragment.definition_types and not any(m.type in fragment.definition_types for m in members):
            count += sum(m.end_point[0] - m.start_point[0] + 1 for m in members)
            continue
        for member in members:
            if member.type in fragment.field_types:
                word = _IDENTIFIER.match(data, member.start_byte)
                text = data[member.start_byte:member.end_byte]
                if (word and word.group().decode() in fragment.statement_keywords) or _CALL_STATEMENT.match(text):
                    count += member.end_point[0] - member.start_point[0] + 1
    return count


def _starts_indented(source: str) -> bool:
    first = next((line for line in source.split("\n") if line.strip()), "")
    return first[:1] in (" ", "\t")


def _indent_levels(source: str) -> int:
    """How many scopes deep the first line is, by its indentation (tabs, or 2/4 spaces a level)."""
    lines = [line for line in source.split("\n") if line.strip()]
    if not lines:
        return 0
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if indent.startswith("\t"):
        return indent.count("\t")
    widths = {len(line) - len(line.lstrip(" ")) for line in lines}
    unit = 2 if any(width % 4 == 2 for width in widths) else 4
    return len(indent) // unit


@dataclass(frozen=True, slots=True)
class _Balance:
    """What a piece of a file leaves unbalanced."""

    leading: list[str]  # closers with no opener, innermost first
    still_open: list[str]  # openers never closed, outermost first
    in_comment: bool  # starts inside a block comment
    unterminated: str  # what ends the string or comment the piece stops in

    @property
    def even(self) -> bool:
        return not (self.leading or self.still_open or self.in_comment or self.unterminated)


def _balance(source: str, tokens: re.Pattern[str]) -> _Balance:
    """Brackets, comments and strings of a piece of a file, counted by a lexer-grade regex."""
    comment_end = source.find("*/")
    comment_start = source.find("/*")
    in_comment = comment_end != -1 and (comment_start == -1 or comment_end < comment_start)
    leading: list[str] = []
    stack: list[str] = []
    token = ""
    for match in tokens.finditer(source, comment_end + 2 if in_comment else 0):
        token = match.group()
        if token in _CLOSERS:
            stack.append(token)
        elif token in _OPENERS:
            opener = _OPENERS[token]
            if opener in stack:
                while stack and stack.pop() != opener:
                    pass
            elif not stack:
                leading.append(token)
    return _Balance(leading, stack, in_comment, _unterminated(token))


def _unterminated(token: str) -> str:
    """The closing of a comment or multi-line string that runs to the end of the text."""
    for quote in ('"""', "'''", "/*", "`"):
        closing = "*/" if quote == "/*" else quote
        if token.startswith(quote) and (len(token) < len(quote) + len(closing) or not token.endswith(closing)):
            return closing
    return ""


def _openers(leading: list[str], variant: str, container: str, fragment: Fragment) -> list[str]:
    """Made-up lines that open, outermost first, the scopes the fragment closes without opening."""
    lines: list[str] = []
    context = "top"
    for closer in reversed(leading):
        if closer != "}" and context in ("top", "container"):
            lines.append(fragment.method if context == "container" else fragment.function)
            context = "body"
        if closer == "}":
            if (context == "top" and variant == "container") or \
                    (context in ("top", "container") and variant == "nested"):
                lines.append(container)
                context = "container"
            elif context == "top":
                lines.append(fragment.function)
                context = "body"
            elif context == "container":
                lines.append(fragment.method)
                context = "body"
            else:
                lines.append(fragment.closure if context == "expression" else fragment.block)
                context = "body"
        elif closer == ")":
            lines.append("__fragment__(" if context == "body" else "(")
            context = "expression"
        else:
            lines.append("[")
            context = "expression"
    return lines


def _indented_repairs(source: str, fragment: Fragment, closing: str) -> Iterator[tuple[str, int]]:
    """Python: a piece that starts indented is put under made-up `class`/`def` headers."""
    first = next((line for line in source.split("\n") if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    if not indent:
        return
    if indent.startswith("\t"):
        unit = "\t"
    else:
        width = 4 if len(indent) % 4 == 0 else 2 if len(indent) % 2 == 0 else len(indent)
        unit = " " * width
    levels = max(1, len(indent) // len(unit))
    suffix = "\n" + closing if closing else ""
    for variant in ("container", "function"):
        lines: list[str] = []
        for level in range(levels):
            if level == 0:
                header = fragment.containers[0] if variant == "container" else fragment.function
            elif level == 1 and variant == "container":
                header = fragment.method
            else:
                header = "if True:"
            lines.append(unit * level + header)
        yield "\n".join([*lines, source]) + suffix, len(lines)


def _error_rows(node: Node) -> int:
    """Rows covered by outermost ERROR nodes (only subtrees flagged has_error are visited)."""
    if node.type == "ERROR":
        return node.end_point[0] - node.start_point[0] + 1
    return sum(_error_rows(child) for child in node.children if child.has_error)
