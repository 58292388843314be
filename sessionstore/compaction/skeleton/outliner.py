"""The outliner's walk, shared by every language: declarations found, bodies never entered, lines rendered.

`Outliner` walks a syntax tree by the rules of a language's `Spec` (languages.py): the generic
actions (keep a node whole, a signature with its body elided, a container and its members, a
declaration with its long initialisers elided, a wrapper around one declaration) cover most
node types; a rule that names a handler is answered by the language family's subclass,
`BraceOutliner` (braces.py: JavaScript/TypeScript, Rust, Go, Java, C, C++, C#) or
`ScriptOutliner` (scripting.py: Python, Ruby, Elixir, Bash), found by name (`Rule.handler`).
The families live apart because their handlers share nothing but this walk: what a brace
language declares through an expression is not what a script declares through a call.
Tree helpers that read nodes without emitting anything are in nodes.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from tree_sitter import Node

from .model import (BAR, BLOCK, CONTAINER, DEF, ELLIPSIS, INDENT, KEEP, MAX_DOC_CHARS, MAX_LINE_CHARS,
                    SHORT_VALUE_CHARS, VAR, WRAP, Rule, Spec, Symbol)
from .nodes import (body_opening, damaged, has_methods, inner_declaration, last_row, leading_string, name_of, row_at,
                    unparenthesize)
from .text import DOC_OPENERS, clip, collapse, doc_summary, docstring_text


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
    # A family's handlers that look at statements (assignments, calls) for declarations in disguise:
    # skipped when `strict`.
    STATEMENT_HANDLERS: ClassVar[frozenset[str]] = frozenset()

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
                if run and child.start_point[0] > last_row(run[-1]) + 1:
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
        if self.strict and (rule.action == VAR or rule.handler in self.STATEMENT_HANDLERS):
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
            name=name if name is not None else name_of(node, self.src),
            kind=kind,
            start_line=row + self.first_line,
            end_line=last_row(node) + self.first_line,
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
        row = row_at(node, start)
        for index, item in enumerate(leading[:-1]):
            if item.type not in self.spec.decorator_types:
                break
            following = leading[index + 1]
            if last_row(item) >= following.start_point[0]:
                break
            self._emit(item.start_point[0], depth, clip(self._text(item, item.start_byte, item.end_byte)),
                       prefix=True)
            start, row = following.start_byte, following.start_point[0]
        return start, row

    # ----------------------------------------------------------------- generic actions

    def _keep(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        if damaged(node):
            return False  # a damaged one-liner: what is left of it is not what was written
        start, row = self._begin(node, depth, begin)
        text = self._text(node, start, node.end_byte)
        if not text:
            return False
        group = kind if kind in ("import", "field") else ""
        self._emit(row, depth, clip(text), group=group, end_row=last_row(node))
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
        if damaged(scope, [body]):
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
            name = name_of(scope, self.src)
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
        if damaged(scope, [body]):
            return False
        start, row = self._begin(scope, depth, begin)
        opening = body_opening(body)
        head = clip(self._text(scope, start, opening))
        tail = self._text(scope, body.end_byte, scope.end_byte).strip()
        header = head if tail in ("", ";", ",") or tail in self.spec.closing_words else f"{head} {ELLIPSIS} {tail}"
        if self.spec.body_marker == ELLIPSIS:
            header = header.rstrip()
        mark = len(self.lines)
        self._emit(row, depth, header)
        if name is None and scope is not node:
            name = name_of(scope, self.src)
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
            value = unparenthesize(values[0])
            name = name_of(declarators[0], self.src)
            if value.type in self.spec.function_values:
                body = value.child_by_field_name("body")
                if body is not None:
                    return self._def(value, depth, "function", begin, body=body, scope=node, name=name)
            if value.type in self.spec.class_values and value.child_by_field_name("body") is not None:
                return self._container(value, depth, "class", begin, scope=node)
            if value.type in self.spec.object_values and has_methods(value, self.spec):
                return self._container(value, depth, "object", begin, body=value, scope=node)
        elided = [v for v in values if self._short(v) == ELLIPSIS]
        if damaged(node, elided):
            return False
        start, row = self._begin(node, depth, begin)
        text = self._spliced(node, start, [(v, self._short(v)) for v in values])
        if not text:
            return False
        self._emit(row, depth, clip(text), group=group, end_row=last_row(node))
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

    def _var_scoped(self, declarator: Node, scope: Node, depth: int, begin: int | None,
                    kind: str = "variable") -> bool:
        """A declaration whose one declarator (`declarator`) sits inside a wider node (`scope`)."""
        if damaged(scope, [v for v in self._values(declarator) if self._short(v) == ELLIPSIS]):
            return False
        start, row = self._begin(scope, depth, begin)
        values = self._values(declarator)
        text = self._spliced(scope, start, [(v, self._short(v)) for v in values])
        self._emit(row, depth, clip(text), group="field", end_row=last_row(scope))
        self._symbol(declarator, kind, row, depth)
        return True


    def _wrap(self, node: Node, depth: int, begin: int | None) -> bool:
        inner = inner_declaration(node, self.spec)
        if inner is None:
            return self._keep(node, depth, "", begin)
        start = node.start_byte if begin is None else begin
        if inner.start_point[0] > row_at(node, start):
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
        if last_row(run[-1]) + 1 < node.start_point[0] or run[0].start_byte in self.header_docs:
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
        string = leading_string(body.named_children, self.spec)
        if string is None:
            return None
        first, _ = docstring_text(self.src[string.start_byte:string.end_byte].decode("utf-8", "replace"))
        return clip(first, MAX_DOC_CHARS) if first else None

    def _module_docstring(self, children: list[Node]) -> None:
        """A module docstring has no line to ride on: it keeps its own, first line only."""
        string = leading_string(children, self.spec)
        if string is None:
            return
        first, more = docstring_text(self.src[string.start_byte:string.end_byte].decode("utf-8", "replace"))
        if first:
            self._emit(string.start_point[0], 0, f'"""{clip(first, MAX_DOC_CHARS)}{" " + ELLIPSIS if more else ""}"""')




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
