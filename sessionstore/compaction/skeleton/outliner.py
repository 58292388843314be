"""The outliner: walks the declarations of a syntax tree (never bodies) and renders the outline lines."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from tree_sitter import Node

from .languages import (EX_BLOCKS, EX_DECLARATIONS, EX_DOCS, EX_FUNCTIONS, EX_GROUPS, EX_IMPORTS, EX_MODULES,
                        EX_SIGNATURES, RB_DECLARATIONS)
from .model import (BAR, BLOCK, CONTAINER, DEF, ELLIPSIS, INDENT, KEEP, MAX_DOC_CHARS, MAX_LINE_CHARS,
                    SHORT_VALUE_CHARS, VAR, WRAP, Rule, Spec, Symbol)
from .text import DOC_OPENERS, clip, collapse, doc_summary, docstring_text

# Handlers that look at statements (assignments, calls) for declarations in disguise.
_STATEMENT_HANDLERS: Final = frozenset({"_js_expression", "_py_expression", "_rust_expression",
                                        "_c_declaration", "_js_pair"})


@dataclass(slots=True)
class _Line:
    row: int  # 0-based row in the source given
    depth: int
    text: str
    prefix: bool = False  # a decorator/annotation line: documentation goes on the line after it
    # Lines of the same non-empty group (fields, imports, enum constants) that follow each other
    # in the source are joined into one outline line: a line number costs three tokens.
    group: str = ""
    end_row: int = -1


@dataclass(slots=True)
class Outliner:
    """Walks declarations (never bodies) and collects outline lines and symbols."""

    src: bytes
    spec: Spec
    first_line: int
    lines: list[_Line] = field(default_factory=list)
    symbols: list[Symbol] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # kinds of the enclosing containers
    header_docs: set[int] = field(default_factory=set)  # comments already shown as the file header
    synthetic_rows: int = 0  # made-up context lines before the source (see Fragment)
    headers: list[int] = field(default_factory=list)  # indexes of the enclosing containers' header lines
    pending_doc: str | None = None  # documentation set apart from what it documents (Elixir's @doc)
    # A repaired fragment that still has errors may have its scopes wrong: a body statement
    # can land where a declaration would be. Only definitions are outlined then.
    strict: bool = False

    # ----------------------------------------------------------------- driving

    def outline_root(self, root: Node) -> None:
        children = root.named_children
        if children and children[0].type in self.spec.comment_types:
            self._file_header(children[0])
        self.outline_children(root, 0)

    def render(self) -> str:
        return "\n".join(
            f"{line.row + self.first_line}{BAR} {INDENT * line.depth}{line.text}"
            for line in _join_runs(self.lines)
        )

    def outline_children(self, parent: Node, depth: int) -> bool:
        """Outlines the declarations among `parent`'s children; True if any line was produced."""
        before = len(self.lines)
        run: list[Node] = []  # the comments directly above the next declaration
        children = parent.named_children
        if self.spec.docstrings and parent.parent is None:
            self._module_docstring(children)
        for child in children:
            if child.type in self.spec.comment_types:
                if run and child.start_point[0] > _last_row(run[-1]) + 1:
                    run = []
                self._standalone_doc(child, run, depth)
                run.append(child)
                continue
            mark = len(self.lines)
            doc_before = self.pending_doc
            emitted = self.outline_node(child, depth)
            if emitted and run and self._documents(run, child):
                self._attach_doc(mark, self._doc_text(run))
            if emitted and doc_before is not None and self.pending_doc is doc_before:
                self._attach_doc(mark, doc_before)
                self.pending_doc = None
            run = []
        return len(self.lines) > before

    def outline_node(self, node: Node, depth: int, begin: int | None = None) -> bool:
        """Outlines one node by its rule; `begin` is where a wrapper's prefix starts."""
        if node.type == "ERROR" or node.is_missing:
            return False
        rule = self.spec.rules.get(node.type)
        if rule is None:
            return False
        if node.start_point[0] < self.synthetic_rows:
            return self._synthetic(node, depth, rule)
        if self.strict and (rule.action == VAR or rule.handler in _STATEMENT_HANDLERS):
            return False
        if rule.action == KEEP:
            return self._keep(node, depth, rule.kind, begin)
        if rule.action == DEF:
            return self._def(node, depth, rule.kind, begin)
        if rule.action == CONTAINER:
            return self._container(node, depth, rule.kind, begin)
        if rule.action == VAR:
            return self._var(node, depth, rule.kind, begin)
        if rule.action == WRAP:
            return self._wrap(node, depth, begin)
        if rule.action == BLOCK:
            return self.outline_children(node, depth)
        handler: Callable[[Node, int, str, int | None], bool] = getattr(self, rule.handler)
        return handler(node, depth, rule.kind, begin)

    def _synthetic(self, node: Node, depth: int, rule: Rule) -> bool:
        """Made-up context: a class is transparent (its members are real); a function is the
        unfinished body the read started in, and is dropped whole."""
        if rule.action == BLOCK:
            return self.outline_children(node, depth)
        if rule.action == DEF:
            return False
        body = node.child_by_field_name("body")
        shape = node.child_by_field_name("type")
        if body is None and shape is not None:  # C: `struct __Fragment__ { … } name;`
            body = shape.child_by_field_name("body")
        return body is not None and self.outline_children(body, depth)

    # ----------------------------------------------------------------- emitting

    def _emit(self, row: int, depth: int, text: str, prefix: bool = False, group: str = "",
              end_row: int = -1) -> None:
        if text.startswith("#"):
            group = ""  # a preprocessor line ends at its newline: nothing may be joined after it
        self.lines.append(_Line(row, depth, text, prefix, group, max(row, end_row)))

    def _attach_doc(self, mark: int, doc: str | None) -> None:
        """Documentation rides on its declaration's line, as a trailing comment: a line costs tokens."""
        if not doc:
            return
        for line in self.lines[mark:]:
            if not line.prefix:
                line.text = f"{line.text}  {self.spec.line_comment} {doc}"
                line.group = ""  # a trailing comment would swallow whatever were joined after it
                return

    def _symbol(self, node: Node, kind: str, row: int, depth: int, name: str | None = None) -> None:
        if not kind or kind == "import":
            return
        if kind == "function" and self.kinds and self.kinds[-1] in self.spec.class_kinds:
            kind = "method"
        self.symbols.append(Symbol(
            name=name if name is not None else _name_of(node, self.src),
            kind=kind,
            start_line=row + self.first_line,
            end_line=_last_row(node) + self.first_line,
            depth=depth,
        ))

    def _text(self, scope: Node, start: int, end: int) -> str:
        """Source of [start, end) inside `scope`, collapsed, without comments or ERROR nodes."""
        holes: list[tuple[int, int]] = []
        self._holes(scope, start, end, holes)
        if not holes:
            return collapse(self.src[start:end].decode("utf-8", "replace"))
        parts: list[bytes] = []
        position = start
        for hole_start, hole_end in holes:
            if hole_start > position:
                parts.append(self.src[position:hole_start])
            position = max(position, hole_end)
        if position < end:
            parts.append(self.src[position:end])
        return collapse(b" ".join(parts).decode("utf-8", "replace"))

    def _holes(self, node: Node, start: int, end: int, out: list[tuple[int, int]]) -> None:
        for child in node.children:
            if child.end_byte <= start:
                continue
            if child.start_byte >= end:
                break
            if child.type in self.spec.comment_types or child.type == "ERROR":
                out.append((max(child.start_byte, start), min(child.end_byte, end)))
            elif child.child_count:
                self._holes(child, start, end, out)

    def _spliced(self, scope: Node, start: int, replacements: list[tuple[Node, str]]) -> str:
        """Source of `scope` from `start`, collapsed, with each node in `replacements` (in order)
        replaced by its text; spacing around a replacement follows the source (`X=…`, `x = …`)."""
        text = ""
        position = start
        for part, replacement in replacements:
            text += self._gap(position) + self._text(scope, position, part.start_byte)
            text += (" " if self.src[part.start_byte - 1:part.start_byte].isspace() else "") + replacement
            position = part.end_byte
        after = self._text(scope, position, scope.end_byte)
        if after:
            text += (self._gap(position) if not after.startswith((";", ",")) else "") + after
        return collapse(text)

    def _gap(self, position: int) -> str:
        return " " if position > 0 and self.src[position:position + 1].isspace() else ""

    def _begin(self, node: Node, depth: int, begin: int | None) -> tuple[int, int]:
        """Emits own-line decorators/annotations; returns where the signature starts (byte, row)."""
        start = node.start_byte if begin is None else begin
        leading: list[Node] = []
        for child in node.children:
            if child.end_byte <= start:
                continue
            if child.type in self.spec.decorator_types:
                leading.append(child)
                continue
            if child.type in self.spec.modifier_holders:
                rest = [c for c in child.children if c.type not in self.spec.decorator_types]
                leading.extend(c for c in child.children if c.type in self.spec.decorator_types)
                if rest:
                    leading.append(rest[0])
                    break
                continue
            leading.append(child)
            break
        row = _row_at(node, start)
        for index, item in enumerate(leading[:-1]):
            if item.type not in self.spec.decorator_types:
                break
            following = leading[index + 1]
            if _last_row(item) >= following.start_point[0]:
                break
            self._emit(item.start_point[0], depth, clip(self._text(item, item.start_byte, item.end_byte)),
                       prefix=True)
            start, row = following.start_byte, following.start_point[0]
        return start, row

    # ----------------------------------------------------------------- generic actions

    def _keep(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        if _damaged(node):
            return False  # a damaged one-liner: what is left of it is not what was written
        start, row = self._begin(node, depth, begin)
        text = self._text(node, start, node.end_byte)
        if not text:
            return False
        group = kind if kind in ("import", "field") else ""
        self._emit(row, depth, clip(text), group=group, end_row=_last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _def(self, node: Node, depth: int, kind: str, begin: int | None, body: Node | None = None,
             scope: Node | None = None, name: str | None = None) -> bool:
        """The signature, body elided. `scope` is the wider node printed (`const f = () => {…}`
        for the arrow function `node`), `name` what the symbol is called when `node` has none."""
        scope = scope or node
        body = body or node.child_by_field_name("body")
        if body is None:
            return self._keep(scope, depth, kind, begin)
        if _damaged(scope, [body]):
            return False  # a signature with a hole in it would misstate the function
        start, row = self._begin(scope, depth, begin)
        head = clip(self._text(scope, start, body.start_byte))
        tail = self._text(scope, body.end_byte, scope.end_byte)
        marker = self.spec.body_marker if self._is_block(body) else ELLIPSIS
        if body.type in self.spec.arrow_bodies:
            marker = f"=> {ELLIPSIS}"
        if tail[:1].isalnum():  # Ruby's `end`
            tail = " " + tail
        self._emit(row, depth, f"{head} {marker}{tail}")
        if name is None and scope is not node:
            name = _name_of(scope, self.src)
        self._symbol(node, kind, row, depth, name)
        if self.spec.docstrings:
            self._attach_doc(len(self.lines) - 1, self._docstring(body))
        return True

    def _is_block(self, body: Node) -> bool:
        start = self.spec.block_start
        return self.spec.body_marker == ELLIPSIS or self.src[body.start_byte:body.start_byte + len(start)] == start

    def _container(self, node: Node, depth: int, kind: str, begin: int | None, body: Node | None = None,
                   members: Node | None = None, scope: Node | None = None, name: str | None = None) -> bool:
        """The header, then the members one level deeper; one elided line when none is outlinable."""
        scope = scope or node
        body = body or node.child_by_field_name("body")
        if body is None:
            return self._keep(scope, depth, kind, begin)
        members = members or body
        if not any(child.type not in self.spec.comment_types for child in members.named_children):
            return self._keep(scope, depth, kind, begin)
        if _damaged(scope, [body]):
            return False
        start, row = self._begin(scope, depth, begin)
        opening = _opening(body)
        head = clip(self._text(scope, start, opening))
        tail = self._text(scope, body.end_byte, scope.end_byte).strip()
        header = head if tail in ("", ";", ",") or tail in self.spec.closing_words else f"{head} {ELLIPSIS} {tail}"
        if self.spec.body_marker == ELLIPSIS:
            header = header.rstrip()
        mark = len(self.lines)
        self._emit(row, depth, header)
        if name is None and scope is not node:
            name = _name_of(scope, self.src)
        self._symbol(node, kind, row, depth, name)
        if self.spec.docstrings:
            self._attach_doc(mark, self._docstring(members))
        self.kinds.append(kind)
        self.headers.append(mark)
        self.pending_doc = None
        try:
            produced = self.outline_children(members, depth + 1)
        finally:
            self.kinds.pop()
            self.headers.pop()
        if not produced:
            # Nothing outlinable inside (only statements): show it as one elided line.
            marker = self.spec.body_marker
            self.lines[mark].text = self.lines[mark].text.replace(header, f"{head} {marker}", 1)
        return True

    def _var(self, node: Node, depth: int, kind: str, begin: int | None, group: str = "field") -> bool:
        declarators = [c for c in node.named_children if c.type in self.spec.declarator_types] or [node]
        values = [v for d in declarators for v in self._values(d)]
        if len(declarators) == 1 and len(values) == 1:
            value = _unparenthesize(values[0])
            name = _name_of(declarators[0], self.src)
            if value.type in self.spec.function_values:
                body = value.child_by_field_name("body")
                if body is not None:
                    return self._def(value, depth, "function", begin, body=body, scope=node, name=name)
            if value.type in self.spec.class_values and value.child_by_field_name("body") is not None:
                return self._container(value, depth, "class", begin, scope=node)
            if value.type in self.spec.object_values and _has_methods(value, self.spec):
                return self._container(value, depth, "object", begin, body=value, scope=node)
        elided = [v for v in values if self._short(v) == ELLIPSIS]
        if _damaged(node, elided):
            return False
        start, row = self._begin(node, depth, begin)
        text = self._spliced(node, start, [(v, self._short(v)) for v in values])
        if not text:
            return False
        self._emit(row, depth, clip(text), group=group, end_row=_last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _values(self, declarator: Node) -> list[Node]:
        found: list[Node] = []
        for field_name in self.spec.value_fields:
            value = declarator.child_by_field_name(field_name)
            if value is not None:
                found.append(value)
        if not found and self.spec.value_after_equals:
            children = declarator.children
            for index, child in enumerate(children[:-1]):
                if child.type == "=" and children[index + 1].is_named:
                    found.append(children[index + 1])
                    break
        return found

    def _short(self, value: Node) -> str:
        """A short one-line initialiser as written; anything longer is elided."""
        if value.start_point[0] != value.end_point[0] or value.end_byte - value.start_byte > SHORT_VALUE_CHARS:
            return ELLIPSIS
        if value.type in self.spec.function_values:
            return ELLIPSIS
        return self._text(value, value.start_byte, value.end_byte)

    def _wrap(self, node: Node, depth: int, begin: int | None) -> bool:
        inner = _inner_declaration(node, self.spec)
        if inner is None:
            return self._keep(node, depth, "", begin)
        start = node.start_byte if begin is None else begin
        if inner.start_point[0] > _row_at(node, start):
            # A prefix on lines of its own (decorators, template<…>): one outline line per line.
            start = self._prefix_lines(node, inner, start, depth)
        return self.outline_node(inner, depth, start)

    def _prefix_lines(self, node: Node, inner: Node, start: int, depth: int) -> int:
        groups: dict[int, list[Node]] = {}
        for child in node.children:
            if child.start_byte < start or child.start_byte >= inner.start_byte:
                continue
            if child.type in self.spec.comment_types:
                continue
            groups.setdefault(child.start_point[0], []).append(child)
        for row, items in groups.items():
            if row == inner.start_point[0]:
                return items[0].start_byte
            text = self._text(node, items[0].start_byte, items[-1].end_byte)
            if text:
                self._emit(row, depth, clip(text), prefix=True)
        return inner.start_byte

    # ----------------------------------------------------------------- comments and docstrings

    def _documents(self, run: list[Node], node: Node) -> bool:
        """A comment run documents the declaration right under it (no blank line, not a block)."""
        if _last_row(run[-1]) + 1 < node.start_point[0] or run[0].start_byte in self.header_docs:
            return False
        rule = self.spec.rules.get(node.type)
        return rule is not None and rule.action != BLOCK

    def _doc_text(self, run: list[Node]) -> str | None:
        """The summary of the doc comment over a declaration; None for plain comments."""
        text = "\n".join(self.src[c.start_byte:c.end_byte].decode("utf-8", "replace") for c in run)
        if not self.spec.doc_prefixes or not text.startswith(self.spec.doc_prefixes):
            return None
        first, _ = doc_summary(text)
        return clip(first, MAX_DOC_CHARS) if first else None

    def _format_doc(self, text: str) -> str | None:
        first, more = doc_summary(text)
        if not first:
            return None
        opener = next(p for p in DOC_OPENERS if text.startswith(p)) if text.startswith(DOC_OPENERS) else "//"
        suffix = f" {ELLIPSIS}" if more else ""
        if opener.startswith("/*"):
            return f"{opener} {first}{suffix} */"
        return f"{opener} {first}{suffix}"

    def _standalone_doc(self, comment: Node, run: list[Node], depth: int) -> None:
        """Module docs (`//!`) are kept even with nothing under them: the first line of each run."""
        prefixes = self.spec.standalone_doc_prefixes
        if not prefixes:
            return
        text = self.src[comment.start_byte:comment.end_byte].decode("utf-8", "replace")
        if not text.startswith(prefixes):
            return
        if run and self.src[run[-1].start_byte:run[-1].end_byte].decode("utf-8", "replace").startswith(prefixes):
            return  # the run's first line was kept already
        doc = self._format_doc(text)
        if doc is not None:
            self._emit(comment.start_point[0], depth, doc)

    def _file_header(self, comment: Node) -> None:
        """The first comment of a file, when it is documentation (`/** … */`), keeps its first line."""
        text = self.src[comment.start_byte:comment.end_byte].decode("utf-8", "replace")
        if text.startswith(("/**", "/*!")):
            doc = self._format_doc(text)
            if doc is not None:
                self._emit(comment.start_point[0], 0, doc)
                self.header_docs.add(comment.start_byte)

    def _docstring(self, body: Node) -> str | None:
        """The first line of a body's docstring (Python), to show beside its signature."""
        string = _leading_string(body.named_children, self.spec)
        if string is None:
            return None
        first, _ = docstring_text(self.src[string.start_byte:string.end_byte].decode("utf-8", "replace"))
        return clip(first, MAX_DOC_CHARS) if first else None

    def _module_docstring(self, children: list[Node]) -> None:
        """A module docstring has no line to ride on: it keeps its own, first line only."""
        string = _leading_string(children, self.spec)
        if string is None:
            return
        first, more = docstring_text(self.src[string.start_byte:string.end_byte].decode("utf-8", "replace"))
        if first:
            self._emit(string.start_point[0], 0, f'"""{clip(first, MAX_DOC_CHARS)}{" " + ELLIPSIS if more else ""}"""')

    # ----------------------------------------------------------------- language handlers

    def _js_export(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            return self._wrap(node, depth, begin)
        value = node.child_by_field_name("value")
        if value is not None:
            value = _unparenthesize(value)
            body = value.child_by_field_name("body")
            if value.type in self.spec.function_values and body is not None:
                return self._def(value, depth, "function", begin, body=body, scope=node)
            if value.type in self.spec.class_values and body is not None:
                return self._container(value, depth, "class", begin, body=body, scope=node)
            if value.type in self.spec.object_values and _has_methods(value, self.spec):
                return self._container(value, depth, "object", begin, body=value, scope=node)
            start, row = self._begin(node, depth, begin)
            text = f"{self._text(node, start, value.start_byte)} {self._short(value)}"
            self._emit(row, depth, clip(collapse(text)))
            return True
        return self._keep(node, depth, "", begin)

    def _js_expression(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        expression = node.named_children[0] if node.named_child_count else None
        if expression is None:
            return False
        if expression.type in ("internal_module", "module"):
            return self._container(expression, depth, "module", begin)
        if expression.type == "assignment_expression":
            right = expression.child_by_field_name("right")
            left = expression.child_by_field_name("left")
            if right is None or left is None:
                return False
            right = _unparenthesize(right)
            name = self._text(left, left.start_byte, left.end_byte)
            body = right.child_by_field_name("body")
            if right.type in self.spec.function_values and body is not None:
                return self._def(right, depth, "function", begin, body=body, scope=node, name=name)
            if right.type in self.spec.class_values and body is not None:
                return self._container(right, depth, "class", begin, scope=node)
            if right.type in self.spec.object_values and _has_methods(right, self.spec):
                return self._container(right, depth, "object", begin, body=right, scope=node)
            return False
        if expression.type == "call_expression" and depth == 0:
            # An IIFE module, `(function (window) { … })(this)`: its declarations are the module's.
            function = _unparenthesize(expression.child_by_field_name("function") or expression)
            body = function.child_by_field_name("body")
            if function.type in self.spec.function_values and body is not None:
                return self._container(function, depth, "module", begin, body=body, scope=node)
        return False

    def _js_pair(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        value = node.child_by_field_name("value")
        if value is None:
            return False
        value = _unparenthesize(value)
        body = value.child_by_field_name("body")
        if value.type in self.spec.function_values and body is not None:
            return self._def(value, depth, "function", begin, body=body, scope=node, name=_name_of(node, self.src))
        return self._var(node, depth, "field", begin, group="pair")

    def _py_expression(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        if node.named_child_count == 1 and node.named_children[0].type == "assignment":
            return self._var(node.named_children[0], depth, "variable", begin)
        return False

    def _rust_expression(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        if node.named_child_count == 1 and node.named_children[0].type == "macro_invocation":
            return self._rust_macro_invocation(node.named_children[0], depth, "macro", begin)
        return False

    def _rust_macro_invocation(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        tree = next((c for c in node.named_children if c.type == "token_tree"), None)
        if tree is None:
            return self._keep(node, depth, kind, begin)
        start, row = self._begin(node, depth, begin)
        text = f"{self._text(node, start, tree.start_byte)}{self._short(tree)}"
        if self.src[node.end_byte:node.end_byte + 1] == b";":
            text += ";"
        self._emit(row, depth, clip(text))
        self._symbol(node, kind, row, depth, self._text(node, node.start_byte, tree.start_byte))
        return True

    def _rust_macro_definition(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        name = node.child_by_field_name("name")
        if name is None:
            return False
        start, row = self._begin(node, depth, begin)
        self._emit(row, depth, f"{self._text(node, start, name.end_byte)} {self.spec.body_marker}")
        self._symbol(node, kind, row, depth)
        return True

    def _go_type_declaration(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
        if len(specs) == 1:
            return self._go_type_spec(specs[0], depth, kind, begin, scope=node)
        if not specs:
            return False
        start, row = self._begin(node, depth, begin)
        self._emit(row, depth, "type (")
        for spec in specs:
            self._go_type_spec(spec, depth + 1, kind, None)
        return True

    def _go_type_spec(self, node: Node, depth: int, kind: str, begin: int | None,
                      scope: Node | None = None) -> bool:
        scope = scope or node
        shape = node.child_by_field_name("type")
        if shape is not None and shape.type == "struct_type":
            fields = next((c for c in shape.named_children if c.type == "field_declaration_list"), None)
            if fields is not None:
                return self._container(node, depth, "struct", begin, body=fields, scope=scope)
        if shape is not None and shape.type == "interface_type":
            return self._container(node, depth, "interface", begin, body=shape, scope=scope)
        kind = "type"
        start, row = self._begin(scope, depth, begin)
        self._emit(row, depth, clip(self._text(scope, start, scope.end_byte)))
        self._symbol(node, kind, row, depth)
        return True

    def _go_var_declaration(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        specs = [c for c in node.named_children if c.type in ("var_spec", "const_spec")]
        for group in node.named_children:
            if group.type in ("var_spec_list", "const_spec_list"):
                specs.extend(c for c in group.named_children if c.type in ("var_spec", "const_spec"))
        if len(specs) == 1 and node.start_point[0] == specs[0].start_point[0]:
            return self._var_scoped(specs[0], node, depth, begin)
        if not specs:
            return False
        start, row = self._begin(node, depth, begin)
        keyword = self.src[node.start_byte:node.start_byte + 5].decode().strip()
        self._emit(row, depth, f"{keyword} (")
        self.outline_children(_spec_parent(node), depth + 1)
        return True

    def _var_scoped(self, declarator: Node, scope: Node, depth: int, begin: int | None,
                    kind: str = "variable") -> bool:
        """A declaration whose one declarator (`declarator`) sits inside a wider node (`scope`)."""
        if _damaged(scope, [v for v in self._values(declarator) if self._short(v) == ELLIPSIS]):
            return False
        start, row = self._begin(scope, depth, begin)
        values = self._values(declarator)
        text = self._spliced(scope, start, [(v, self._short(v)) for v in values])
        self._emit(row, depth, clip(text), group="field", end_row=_last_row(scope))
        self._symbol(declarator, kind, row, depth)
        return True

    def _java_enum_constant(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        body = node.child_by_field_name("body")
        if body is not None:
            return self._def(node, depth, kind, begin, body=body)
        start, row = self._begin(node, depth, begin)
        arguments = node.child_by_field_name("arguments")
        text = self._text(node, start, node.end_byte) if arguments is None else \
            f"{self._text(node, start, arguments.start_byte)}({self._short_inner(arguments)})"
        self._emit(row, depth, clip(text), group="constant", end_row=_last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _short_inner(self, node: Node) -> str:
        text = self._text(node, node.start_byte, node.end_byte)
        return text[1:-1] if len(text) <= SHORT_VALUE_CHARS else ELLIPSIS

    def _c_declaration(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """Prototypes stay whole; a declaration that defines a struct is one; the rest are variables."""
        if _declares_function(node):
            return self._keep(node, depth, "function", begin)
        shape = node.child_by_field_name("type")
        if shape is not None and shape.child_by_field_name("body") is not None and \
                shape.type in ("struct_specifier", "union_specifier", "class_specifier"):
            return self._container(shape, depth, "struct", begin, scope=node)
        return self._var(node, depth, kind or "variable", begin)

    def _c_type_definition(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        shape = node.child_by_field_name("type")
        if shape is not None and shape.type in ("struct_specifier", "union_specifier", "class_specifier"):
            body = shape.child_by_field_name("body")
            if body is not None:
                # `typedef struct {…} arena;` is known by its typedef name.
                declarator = node.child_by_field_name("declarator")
                name = _name_of(declarator, self.src) if declarator is not None else None
                return self._container(shape, depth, "struct", begin, body=body, scope=node, name=name)
        return self._keep(node, depth, "type", begin)

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
                if _damaged(node, [inline]):
                    return False
                start, row = self._begin(node, depth, begin)
                self._emit(row, depth, f"{clip(self._text(node, start, inline.start_byte))} {ELLIPSIS}")
                self._symbol(node, kind, row, depth, _ex_function_name(node, self.src))
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
        if _damaged(node, [arguments]):
            return False
        start, row = self._begin(node, depth, begin)
        text = f"{self._text(node, start, arguments.start_byte)} {self._short(arguments)}"
        self._emit(row, depth, clip(text), group="attribute", end_row=_last_row(node))
        self._symbol(node, "variable", row, depth, f"@{name}")
        return True

    def _enum_member(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """One enum member per source line, joined with the next ones on the outline line."""
        if _damaged(node):
            return False
        start, row = self._begin(node, depth, begin)
        values = self._values(node)
        text = self._text(node, start, node.end_byte) if not values else \
            f"{self._text(node, start, values[0].start_byte)} {self._short(values[0])}"
        self._emit(row, depth, clip(text), group="constant", end_row=_last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _cs_property(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`public int Count { get; private set; }`: accessor bodies and initialisers elided."""
        elide = [c for accessors in node.named_children if accessors.type == "accessor_list"
                 for c in accessors.named_children for c in [c.child_by_field_name("body")] if c is not None]
        elide += [c for c in node.named_children if c.type == "arrow_expression_clause"]
        elide += [v for v in self._values(node) if self._short(v) == ELLIPSIS]
        if _damaged(node, elide):
            return False
        start, row = self._begin(node, depth, begin)
        text = self._spliced(node, start, [
            (part, f"=> {ELLIPSIS}" if part.type == "arrow_expression_clause" else
             self.spec.body_marker if self._is_block(part) else ELLIPSIS)
            for part in sorted(elide, key=lambda n: n.start_byte)])
        self._emit(row, depth, clip(text), group="field", end_row=_last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _cs_field(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        declaration = next((c for c in node.named_children if c.type == "variable_declaration"), None)
        declarators = [c for c in declaration.named_children if c.type == "variable_declarator"] \
            if declaration is not None else []
        if len(declarators) != 1:
            return self._keep(node, depth, kind, begin)
        return self._var_scoped(declarators[0], node, depth, begin, kind=kind)

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

    def _cpp_access_specifier(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        self._emit(node.start_point[0], depth, f"{self._text(node, node.start_byte, node.end_byte)}:")
        return True


def _join_runs(lines: list[_Line]) -> list[_Line]:
    """Joins consecutive lines of one group (fields, imports) at one depth, up to MAX_LINE_CHARS."""
    joined: list[_Line] = []
    for line in lines:
        previous = joined[-1] if joined else None
        if (previous is not None and line.group and line.group == previous.group
                and line.depth == previous.depth and line.row - previous.end_row <= 2
                and len(previous.text) + len(line.text) + 2 <= MAX_LINE_CHARS):
            separator = ", " if line.group in ("constant", "pair") else \
                " " if previous.text.endswith((";", ",")) else "; "
            joined[-1] = _Line(previous.row, previous.depth, f"{previous.text}{separator}{line.text}",
                               previous.prefix, previous.group, max(previous.end_row, line.end_row))
        else:
            joined.append(line)
    return joined


# --------------------------------------------------------------------------- tree helpers


def _last_row(node: Node) -> int:
    """The row of a node's last character (a line comment that swallowed its newline ends at column 0)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def _ex_inline_body(node: Node, src: bytes) -> Node | None:
    """The value of `do:` in `def f(x), do: x + 1`."""
    for arguments in (c for c in node.named_children if c.type == "arguments"):
        for keywords in (c for c in arguments.named_children if c.type == "keywords"):
            for pair in keywords.named_children:
                key = pair.child_by_field_name("key")
                if key is not None and src[key.start_byte:key.end_byte].strip().startswith(b"do:"):
                    return pair.child_by_field_name("value")
    return None


def _ex_function_name(node: Node, src: bytes) -> str:
    """`render` for `def render(messages, opts \\ [])`, through `when` guards."""
    arguments = next((c for c in node.named_children if c.type == "arguments"), None)
    head = arguments.named_children[0] if arguments is not None and arguments.named_child_count else None
    while head is not None and head.type == "binary_operator":
        head = head.child_by_field_name("left")
    if head is not None and head.type == "call":
        head = head.child_by_field_name("target")
    if head is None:
        return ""
    return src[head.start_byte:head.end_byte].decode("utf-8", "replace")


def _damaged(node: Node, skip: list[Node] | None = None) -> bool:
    """Whether an ERROR node sits in `node` outside the subtrees in `skip` (the elided parts).

    MISSING nodes do not count: they are tokens the parser assumed, the text is intact.
    """
    if node.type == "ERROR":
        return True
    if not node.has_error:
        return False
    skipped = {(n.start_byte, n.end_byte, n.type) for n in skip or ()}
    return any(_damaged(child, skip) for child in node.children
               if child.has_error and (child.start_byte, child.end_byte, child.type) not in skipped)


def _row_at(node: Node, byte: int) -> int:
    """The row of `byte`, found through the smallest child that starts there."""
    if byte <= node.start_byte:
        return node.start_point[0]
    for child in node.children:
        if child.start_byte >= byte:
            return child.start_point[0]
        if child.end_byte > byte:
            return _row_at(child, byte)
    return node.end_point[0]


def _opening(body: Node) -> int:
    """Where a body's braces open (`interface {` in Go puts a keyword before them)."""
    first = body.children[0] if body.child_count else None
    if first is not None and not first.is_named and first.type not in ("{", ":", "(", "[", "<"):
        for child in body.children:
            if child.type == "{":
                return child.start_byte
    return body.start_byte


def _leading_string(children: list[Node], spec: Spec) -> Node | None:
    """The string literal that opens a body, if any (comments before it are allowed)."""
    for child in children:
        if child.type in spec.comment_types:
            continue
        if child.type == "string":
            return child
        if child.type == "expression_statement" and child.named_child_count == 1 \
                and child.named_children[0].type == "string":
            return child.named_children[0]
        return None
    return None


def _unparenthesize(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def _has_methods(obj: Node, spec: Spec) -> bool:
    """An object literal is worth outlining when it holds functions (`var App = { init() {…} }`)."""
    for member in obj.named_children:
        if member.type == "method_definition":
            return True
        if member.type == "pair":
            value = member.child_by_field_name("value")
            if value is not None and _unparenthesize(value).type in spec.function_values:
                return True
    return False


def _inner_declaration(node: Node, spec: Spec) -> Node | None:
    for field_name in ("declaration", "definition"):
        inner = node.child_by_field_name(field_name)
        if inner is not None:
            return inner
    candidates = [c for c in node.named_children if c.type in spec.rules and c.type not in spec.decorator_types]
    return candidates[-1] if candidates else None


def _spec_parent(node: Node) -> Node:
    for child in node.named_children:
        if child.type in ("var_spec_list", "const_spec_list"):
            return child
    return node


def _declares_function(node: Node) -> bool:
    """A C declaration is a prototype when its declarator chain reaches a function declarator."""
    for child in node.named_children:
        current: Node | None = child
        while current is not None:
            if current.type == "function_declarator":
                inner = current.child_by_field_name("declarator")
                # `void (*free_fn)(void *)` declares a pointer to a function, not a function.
                return inner is None or inner.type != "parenthesized_declarator"
            if current.type == "init_declarator":
                break
            current = current.child_by_field_name("declarator")
    return False


_NAME_FIELDS: Final = ("declarator", "definition", "declaration", "left", "key", "pattern")
_NAMED_CHILDREN: Final = frozenset({"variable_declarator", "type_spec", "type_alias", "var_spec",
                                    "const_spec", "init_declarator"})


def _name_of(node: Node, src: bytes, depth: int = 0) -> str:
    """The declared name, found through `name` or the declarator chain (C, Java, TS, Go)."""
    if node.type == "call" and node.child_by_field_name("target") is not None:
        return _ex_function_name(node, src)
    if node.type == "impl_item":
        parts = [node.child_by_field_name("trait"), node.child_by_field_name("type")]
        text = " for ".join(src[p.start_byte:p.end_byte].decode("utf-8", "replace") for p in parts if p)
        return text
    name = node.child_by_field_name("name")
    if name is not None and name.named_child_count == 0:
        return src[name.start_byte:name.end_byte].decode("utf-8", "replace")
    if depth < 6:
        if name is not None:
            return _name_of(name, src, depth + 1)
        for field_name in _NAME_FIELDS:
            child = node.child_by_field_name(field_name)
            if child is not None:
                found = _name_of(child, src, depth + 1)
                if found:
                    return found
        for child in node.named_children:
            if child.type in _NAMED_CHILDREN:
                return _name_of(child, src, depth + 1)
    if node.named_child_count == 0 or node.type in ("qualified_identifier", "member_expression",
                                                    "scoped_identifier", "destructor_name",
                                                    "operator_name", "field_expression"):
        return src[node.start_byte:node.end_byte].decode("utf-8", "replace")
    return ""
