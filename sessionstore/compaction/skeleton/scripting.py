"""The script languages' handlers: Python, Ruby, Elixir and Bash.

In these languages a declaration is often a statement: an assignment at module level (`MAX = 3`,
`VERSION = "1.0"`), a call (`require "json"`, `attr_reader :name`, `defmodule … do`, `def f(x),
do: …`, `source lib.sh`), a module attribute (`@doc`, `@spec`), a word on a line of its own
(Ruby's `private`). These handlers tell those from the statements around them. Apart from the
brace languages (braces.py): the two families share the walk (outliner.py) and nothing else.
"""

from __future__ import annotations

from typing import ClassVar, Final

from tree_sitter import Node

from .languages import (EX_BLOCKS, EX_DECLARATIONS, EX_DOCS, EX_FUNCTIONS, EX_GROUPS, EX_IMPORTS, EX_MODULES,
                        EX_SIGNATURES, RB_DECLARATIONS)
from .model import ELLIPSIS, MAX_DOC_CHARS
from .nodes import damaged, ex_function_name, last_row
from .outliner import Outliner
from .text import clip, docstring_text

# The languages whose rules name the handlers below (keys of languages.SPECS).
SCRIPT_LANGUAGES: Final = frozenset({"python", "ruby", "elixir", "bash"})


class ScriptOutliner(Outliner):
    """The walk, with the handlers the script languages' rules name."""

    __slots__ = ()
    STATEMENT_HANDLERS: ClassVar[frozenset[str]] = frozenset({"_py_expression"})

    def _py_expression(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        if node.named_child_count == 1 and node.named_children[0].type == "assignment":
            return self._var(node.named_children[0], depth, "variable", begin)
        return False

    def _ex_call(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`defmodule … do`, `def f(x) do … end`, `def f(x), do: …`, `use X`, `describe … do`."""
        target = node.child_by_field_name("target")
        if target is None or target.type != "identifier":
            return False
        macro = self.src[target.start_byte:target.end_byte].decode()
        block = next((c for c in node.named_children if c.type == "do_block"), None)
        if macro in EX_MODULES and block is not None:
            return self._container(node, depth, "module", begin, body=block)
        if macro in EX_GROUPS and block is not None:
            return self._container(node, depth, "group", begin, body=block)
        if macro in EX_FUNCTIONS or (macro in EX_BLOCKS and block is not None):
            kind = "function" if macro in EX_FUNCTIONS else "block"
            if block is not None:
                return self._def(node, depth, kind, begin, body=block)
            inline = _ex_inline_body(node, self.src)
            if inline is not None:
                if damaged(node, [inline]):
                    return False
                start, row = self._begin(node, depth, begin)
                self._emit(row, depth, f"{clip(self._text(node, start, inline.start_byte))} {ELLIPSIS}")
                self._symbol(node, kind, row, depth, ex_function_name(node, self.src))
                return True
            return self._keep(node, depth, kind, begin)
        if macro in EX_IMPORTS:
            return self._keep(node, depth, "import", begin)
        if macro in EX_DECLARATIONS and block is None:
            return self._keep(node, depth, "", begin)
        return False

    def _ex_attribute(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """Module attributes: docs ride on what follows them, specs and types are signatures."""
        operand = node.child_by_field_name("operand")
        if self.src[node.start_byte:node.start_byte + 1] != b"@" or operand is None:
            return False
        target = operand.child_by_field_name("target") if operand.type == "call" else operand
        if target is None:
            return False
        name = self.src[target.start_byte:target.end_byte].decode()
        if name in EX_DOCS:
            strings = [c for c in operand.named_children if c.type == "arguments"]
            text = self.src[strings[0].start_byte:strings[0].end_byte].decode("utf-8", "replace") if strings else ""
            summary, _ = docstring_text(text.strip().removeprefix("~S").removeprefix("~s"))
            summary = clip(summary, MAX_DOC_CHARS) if summary else None
            if name == "moduledoc":
                if self.headers and summary:
                    self._attach_doc(self.headers[-1], summary)
            else:
                self.pending_doc = summary
            return False
        if name in EX_SIGNATURES:
            return self._keep(node, depth, "type" if name.startswith(("type", "opaque")) else "", begin)
        arguments = next((c for c in operand.named_children if c.type == "arguments"), None)
        if arguments is None:
            return self._keep(node, depth, "", begin)
        if damaged(node, [arguments]):
            return False
        start, row = self._begin(node, depth, begin)
        text = f"{self._text(node, start, arguments.start_byte)} {self._short(arguments)}"
        self._emit(row, depth, clip(text), group="attribute", end_row=last_row(node))
        self._symbol(node, "variable", row, depth, f"@{name}")
        return True

    def _rb_assignment(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """Constants (`VERSION = "1.0"`) at module or class level; other assignments are statements."""
        left = node.child_by_field_name("left")
        if left is None or left.type != "constant":
            return False
        return self._var(node, depth, "variable", begin)

    def _rb_call(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`require "json"`, `attr_reader :name`, `has_many :posts`: declarations made by calls."""
        method = node.child_by_field_name("method")
        receiver = node.child_by_field_name("receiver")
        if method is None or receiver is not None or node.child_by_field_name("block") is not None:
            return False
        word = self.src[method.start_byte:method.end_byte].decode()
        if word not in RB_DECLARATIONS:
            return False
        return self._keep(node, depth, "import" if word.startswith(("require", "load")) else "", begin)

    def _rb_visibility(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`private` on a line of its own changes the visibility of every method after it."""
        word = self.src[node.start_byte:node.end_byte].decode()
        if depth == 0 or word not in ("private", "protected", "public", "module_function"):
            return False
        self._emit(node.start_point[0], depth, word)
        return True

    def _sh_declaration(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`export PATH=…`, `readonly ROOT=…`: assignments with a keyword; long values elided."""
        assignments = [c for c in node.named_children if c.type == "variable_assignment"]
        if len(assignments) != 1:
            return self._keep(node, depth, "", begin)
        return self._var_scoped(assignments[0], node, depth, begin)

    def _sh_source(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`source lib.sh` / `. lib.sh` are the shell's imports; other commands are statements."""
        name = node.child_by_field_name("name")
        if name is None or self.src[name.start_byte:name.end_byte] not in (b"source", b"."):
            return False
        return self._keep(node, depth, "import", begin)



def _ex_inline_body(node: Node, src: bytes) -> Node | None:
    """The value of `do:` in `def f(x), do: x + 1`."""
    for arguments in (c for c in node.named_children if c.type == "arguments"):
        for keywords in (c for c in arguments.named_children if c.type == "keywords"):
            for pair in keywords.named_children:
                key = pair.child_by_field_name("key")
                if key is not None and src[key.start_byte:key.end_byte].strip().startswith(b"do:"):
                    return pair.child_by_field_name("value")
    return None


