"""The vocabulary of skeletons: the outline a caller gets back, and the rules the language tables are written in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

ELLIPSIS: Final = "…"
BAR: Final = "│"
INDENT: Final = "  "
# Past this many characters an outline line is cut: a 2 kB type union is not a signature.
MAX_LINE_CHARS: Final = 240
# Documentation keeps one line of prose, cut here.
MAX_DOC_CHARS: Final = 100
# Initialisers up to this length (single line) are kept: `MAX = 1024` says more than `MAX = …`.
SHORT_VALUE_CHARS: Final = 40


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition the outline shows; lines are original line numbers (first_line applied)."""

    name: str
    # class, struct, interface, trait, impl, enum, type, module, object, group (describe), function,
    # method, block (test, schema), variable, field, macro
    kind: str
    start_line: int  # where it starts, after any decorator lines (printed unless joined to the line before)
    end_line: int
    depth: int  # 0 at top level, 1 for class members, …


@dataclass(frozen=True, slots=True)
class Skeleton:
    """The outline of one source text (see the package docstring for the format)."""

    text: str
    language: str
    original_lines: int
    first_line: int = 1
    symbols: tuple[Symbol, ...] = ()
    # False when the parser reported errors and the broken parts were left out.
    complete: bool = True
    # True when the text was a piece cut out of a file and parsed inside made-up context.
    repaired: bool = False


# --------------------------------------------------------------------------- per-language rules

# What to do with a node of a given type (anything without a rule is a statement: dropped).
KEEP: Final = "keep"            # the whole node, collapsed to one line (imports, prototypes, aliases)
DEF: Final = "def"              # signature with the body elided
CONTAINER: Final = "container"  # header, then its members one level deeper
VAR: Final = "var"              # declaration with long initialisers elided
WRAP: Final = "wrap"            # a prefix (export, declare, decorators, template<>) around one declaration
BLOCK: Final = "block"          # transparent: its children are outlined at the same depth
CUSTOM: Final = "custom"        # a language-specific handler (Rule.handler)


@dataclass(frozen=True, slots=True)
class Rule:
    action: str
    kind: str = ""
    handler: str = ""  # name of an Outliner method, for CUSTOM


# Lexical tokens that matter for bracket balance: comments and strings are matched whole so
# that brackets inside them do not count. `'…'` is a string in JS, a one-character literal in
# C, Java, Go and Rust (where `'a` is a lifetime).
JS_TOKENS: Final = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\*/|[{}()\[\]]",
    re.S)
C_TOKENS: Final = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n]){1,2}'|`[^`]*`|\*/|[{}()\[\]]",
    re.S)

PY_TOKENS: Final = re.compile(
    r"#[^\n]*|\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|[{}()\[\]]")


@dataclass(frozen=True, slots=True)
class Fragment:
    """Synthetic openers that put a partial read (one cut out of the middle of a file) back in context.

    A read that starts inside a method body or stops before the class closes does not parse;
    wrapped in a made-up function or class (and with its open brackets closed) it does, and
    its real declarations can be outlined. The made-up parts are never shown.
    """

    function: str  # opens a function body at top level
    containers: tuple[str, ...] = ()  # open a class-like body at top level, most likely first
    method: str = ""  # opens a method body inside that container
    closure: str = "{"  # opens a function body inside an expression
    block: str = "if (__fragment__) {"  # opens a block inside a body (an `if`, so that `} else {` parses)
    tokens: re.Pattern[str] = C_TOKENS
    indented: bool = False  # Python: scopes are opened by indentation, not brackets
    # JS classes accept a field named `return` and a method named `if`: statements parse as
    # members of a made-up class. A member named by a statement keyword betrays the wrong context.
    field_types: frozenset[str] = frozenset()
    statement_keywords: frozenset[str] = frozenset()
    # A Python class body accepts any statement; a made-up class is only believed when some
    # member after the made-up method is a definition.
    definition_types: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Spec:
    """How one language is outlined: rules by node type plus a few lexical facts."""

    name: str
    grammar: str
    rules: Mapping[str, Rule]
    body_marker: str = "{ … }"
    comment_types: frozenset[str] = frozenset({"comment"})
    # Types whose own-line instances before a declaration become their own outline lines.
    decorator_types: frozenset[str] = frozenset()
    # Children holding modifiers, searched for leading annotations (Java `modifiers`).
    modifier_holders: frozenset[str] = frozenset()
    # Children of a declaration that each declare one name (`const a = 1, b = 2`).
    declarator_types: frozenset[str] = frozenset()
    value_fields: tuple[str, ...] = ("value",)
    function_values: frozenset[str] = frozenset()
    class_values: frozenset[str] = frozenset()
    object_values: frozenset[str] = frozenset()
    # Which attached comments count as documentation (first line kept).
    doc_prefixes: tuple[str, ...] = ("/**", "///")
    # Comments kept even when nothing follows them (module docs such as Rust's `//!`).
    standalone_doc_prefixes: tuple[str, ...] = ()
    docstrings: bool = False
    line_comment: str = "//"
    block_start: bytes = b"{"  # how a body that `body_marker` replaces begins
    # Initialisers that follow `=` in a declarator without a field name (C#).
    value_after_equals: bool = False
    # Expression bodies that carry their own arrow (`=> x`, C#): elided as `=> …`.
    arrow_bodies: frozenset[str] = frozenset()
    # Words that close a block after its body (`end`): not worth repeating after a header.
    closing_words: frozenset[str] = frozenset()
    fragment: Fragment | None = None
    # Kinds under which a nested `function` is reported as a `method`.
    class_kinds: frozenset[str] = frozenset({"class", "interface", "struct", "trait", "impl", "object"})
