"""The brace languages' handlers: JavaScript/TypeScript, Rust, Go, Java, C, C++ and C#.

What the generic actions of the walk (outliner.py) cannot say about these languages: exports and
declarations made by expressions (`module.exports.f = function …`, an IIFE module, object
literals of methods), Rust's macros, Go's grouped `type (…)` and `var (…)`, Java's enum
constants, C's prototypes and typedef'd structs, C++'s access specifiers, C#'s properties. Apart
from the script languages (scripting.py): the two families share the walk and nothing else.
"""

from __future__ import annotations

from typing import ClassVar, Final

from tree_sitter import Node

from .model import ELLIPSIS, SHORT_VALUE_CHARS
from .nodes import damaged, has_methods, last_row, name_of, unparenthesize
from .outliner import Outliner
from .text import clip, collapse

# The languages whose rules name the handlers below (keys of languages.SPECS).
BRACE_LANGUAGES: Final = frozenset({"typescript", "tsx", "javascript", "rust", "go", "java", "c", "cpp",
                                  "csharp"})


class BraceOutliner(Outliner):
    """The walk, with the handlers the brace languages' rules name."""

    __slots__ = ()
    STATEMENT_HANDLERS: ClassVar[frozenset[str]] = frozenset({"_js_expression", "_rust_expression", "_c_declaration",
                                                              "_js_pair"})

    def _js_export(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            return self._wrap(node, depth, begin)
        value = node.child_by_field_name("value")
        if value is not None:
            value = unparenthesize(value)
            body = value.child_by_field_name("body")
            if value.type in self.spec.function_values and body is not None:
                return self._def(value, depth, "function", begin, body=body, scope=node)
            if value.type in self.spec.class_values and body is not None:
                return self._container(value, depth, "class", begin, body=body, scope=node)
            if value.type in self.spec.object_values and has_methods(value, self.spec):
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
            right = unparenthesize(right)
            name = self._text(left, left.start_byte, left.end_byte)
            body = right.child_by_field_name("body")
            if right.type in self.spec.function_values and body is not None:
                return self._def(right, depth, "function", begin, body=body, scope=node, name=name)
            if right.type in self.spec.class_values and body is not None:
                return self._container(right, depth, "class", begin, scope=node)
            if right.type in self.spec.object_values and has_methods(right, self.spec):
                return self._container(right, depth, "object", begin, body=right, scope=node)
            return False
        if expression.type == "call_expression" and depth == 0:
            # An IIFE module, `(function (window) { … })(this)`: its declarations are the module's.
            function = unparenthesize(expression.child_by_field_name("function") or expression)
            body = function.child_by_field_name("body")
            if function.type in self.spec.function_values and body is not None:
                return self._container(function, depth, "module", begin, body=body, scope=node)
        return False

    def _js_pair(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        value = node.child_by_field_name("value")
        if value is None:
            return False
        value = unparenthesize(value)
        body = value.child_by_field_name("body")
        if value.type in self.spec.function_values and body is not None:
            return self._def(value, depth, "function", begin, body=body, scope=node, name=name_of(node, self.src))
        return self._var(node, depth, "field", begin, group="pair")

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

    def _java_enum_constant(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        body = node.child_by_field_name("body")
        if body is not None:
            return self._def(node, depth, kind, begin, body=body)
        start, row = self._begin(node, depth, begin)
        arguments = node.child_by_field_name("arguments")
        text = self._text(node, start, node.end_byte) if arguments is None else \
            f"{self._text(node, start, arguments.start_byte)}({self._short_inner(arguments)})"
        self._emit(row, depth, clip(text), group="constant", end_row=last_row(node))
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
                name = name_of(declarator, self.src) if declarator is not None else None
                return self._container(shape, depth, "struct", begin, body=body, scope=node, name=name)
        return self._keep(node, depth, "type", begin)

    def _cpp_access_specifier(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        self._emit(node.start_point[0], depth, f"{self._text(node, node.start_byte, node.end_byte)}:")
        return True

    def _enum_member(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """One enum member per source line, joined with the next ones on the outline line."""
        if damaged(node):
            return False
        start, row = self._begin(node, depth, begin)
        values = self._values(node)
        text = self._text(node, start, node.end_byte) if not values else \
            f"{self._text(node, start, values[0].start_byte)} {self._short(values[0])}"
        self._emit(row, depth, clip(text), group="constant", end_row=last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _cs_property(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        """`public int Count { get; private set; }`: accessor bodies and initialisers elided."""
        elide = [c for accessors in node.named_children if accessors.type == "accessor_list"
                 for c in accessors.named_children for c in [c.child_by_field_name("body")] if c is not None]
        elide += [c for c in node.named_children if c.type == "arrow_expression_clause"]
        elide += [v for v in self._values(node) if self._short(v) == ELLIPSIS]
        if damaged(node, elide):
            return False
        start, row = self._begin(node, depth, begin)
        text = self._spliced(node, start, [
            (part, f"=> {ELLIPSIS}" if part.type == "arrow_expression_clause" else
             self.spec.body_marker if self._is_block(part) else ELLIPSIS)
            for part in sorted(elide, key=lambda n: n.start_byte)])
        self._emit(row, depth, clip(text), group="field", end_row=last_row(node))
        self._symbol(node, kind, row, depth)
        return True

    def _cs_field(self, node: Node, depth: int, kind: str, begin: int | None) -> bool:
        declaration = next((c for c in node.named_children if c.type == "variable_declaration"), None)
        declarators = [c for c in declaration.named_children if c.type == "variable_declarator"] \
            if declaration is not None else []
        if len(declarators) != 1:
            return self._keep(node, depth, kind, begin)
        return self._var_scoped(declarators[0], node, depth, begin, kind=kind)



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


