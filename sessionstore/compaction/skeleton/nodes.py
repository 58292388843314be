"""Tree helpers of the outliner: what a syntax node says (its name, its last row, whether it is
damaged), read without emitting anything.

Apart from the walk (outliner.py) and the language families (braces.py, scripting.py) because
all three read nodes the same way: one copy of each reading, pure functions of a node and the
source bytes.
"""

from __future__ import annotations

from typing import Final

from tree_sitter import Node

from .model import Spec


def last_row(node: Node) -> int:
    """The row of a node's last character (a line comment that swallowed its newline ends at column 0)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def ex_function_name(node: Node, src: bytes) -> str:
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


def damaged(node: Node, skip: list[Node] | None = None) -> bool:
    """Whether an ERROR node sits in `node` outside the subtrees in `skip` (the elided parts).

    MISSING nodes do not count: they are tokens the parser assumed, the text is intact.
    """
    if node.type == "ERROR":
        return True
    if not node.has_error:
        return False
    skipped = {(n.start_byte, n.end_byte, n.type) for n in skip or ()}
    return any(damaged(child, skip) for child in node.children
               if child.has_error and (child.start_byte, child.end_byte, child.type) not in skipped)


def row_at(node: Node, byte: int) -> int:
    """The row of `byte`, found through the smallest child that starts there."""
    if byte <= node.start_byte:
        return node.start_point[0]
    for child in node.children:
        if child.start_byte >= byte:
            return child.start_point[0]
        if child.end_byte > byte:
            return row_at(child, byte)
    return node.end_point[0]


def body_opening(body: Node) -> int:
    """Where a body's braces open (`interface {` in Go puts a keyword before them)."""
    first = body.children[0] if body.child_count else None
    if first is not None and not first.is_named and first.type not in ("{", ":", "(", "[", "<"):
        for child in body.children:
            if child.type == "{":
                return child.start_byte
    return body.start_byte


def leading_string(children: list[Node], spec: Spec) -> Node | None:
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


def unparenthesize(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def has_methods(obj: Node, spec: Spec) -> bool:
    """An object literal is worth outlining when it holds functions (`var App = { init() {…} }`)."""
    for member in obj.named_children:
        if member.type == "method_definition":
            return True
        if member.type == "pair":
            value = member.child_by_field_name("value")
            if value is not None and unparenthesize(value).type in spec.function_values:
                return True
    return False


def inner_declaration(node: Node, spec: Spec) -> Node | None:
    for field_name in ("declaration", "definition"):
        inner = node.child_by_field_name(field_name)
        if inner is not None:
            return inner
    candidates = [c for c in node.named_children if c.type in spec.rules and c.type not in spec.decorator_types]
    return candidates[-1] if candidates else None


_NAME_FIELDS: Final = ("declarator", "definition", "declaration", "left", "key", "pattern")
_NAMED_CHILDREN: Final = frozenset({"variable_declarator", "type_spec", "type_alias", "var_spec",
                                    "const_spec", "init_declarator"})


def name_of(node: Node, src: bytes, depth: int = 0) -> str:
    """The declared name, found through `name` or the declarator chain (C, Java, TS, Go)."""
    if node.type == "call" and node.child_by_field_name("target") is not None:
        return ex_function_name(node, src)
    if node.type == "impl_item":
        parts = [node.child_by_field_name("trait"), node.child_by_field_name("type")]
        text = " for ".join(src[p.start_byte:p.end_byte].decode("utf-8", "replace") for p in parts if p)
        return text
    name = node.child_by_field_name("name")
    if name is not None and name.named_child_count == 0:
        return src[name.start_byte:name.end_byte].decode("utf-8", "replace")
    if depth < 6:
        if name is not None:
            return name_of(name, src, depth + 1)
        for field_name in _NAME_FIELDS:
            child = node.child_by_field_name(field_name)
            if child is not None:
                found = name_of(child, src, depth + 1)
                if found:
                    return found
        for child in node.named_children:
            if child.type in _NAMED_CHILDREN:
                return name_of(child, src, depth + 1)
    if node.named_child_count == 0 or node.type in ("qualified_identifier", "member_expression",
                                                    "scoped_identifier", "destructor_name",
                                                    "operator_name", "field_expression"):
        return src[node.start_byte:node.end_byte].decode("utf-8", "replace")
    return ""
