"""Code skeletons: the outline of a source file with every body elided (compaction level 2).

A file that an agent read many turns ago still costs its full size on every request. What the
model usually still needs from it is its shape: imports, types, classes and signatures. The
skeleton keeps that, at a fraction of the tokens, and keeps the original line numbers so that
the model can ask for a precise range again when it needs a body.

Outline format, one line per declaration (a real TypeScript example)::

    1│ /** AgentSession - Core abstraction for agent lifecycle and session management. … */
    16│ import type { Agent, AgentEvent } from "@mariozechner/pi-agent-core"; import { getModelsPath } from "../config.js"
    29│ export type AgentEventListener = (event: AgentEvent) => void;  // Listener function for agent events
    90│ export class AgentSession
    91│   readonly agent: Agent; readonly sessionManager: SessionManager
    100│   private _eventListeners: AgentEventListener[] = []
    111│   constructor(config: AgentSessionConfig) { … }
    128│   subscribe(listener: AgentEventListener): () => void { … }  // Subscribe to agent events.

and in Python::

    112│ class Event(Base):  # One immutable event.
    117│   kind: str; payload: dict = field(default_factory=dict)
    120│   @property
    121│   async def size(self, *, deep: bool = False) -> int: …  # Bytes on disk.

- `N│ ` starts every line: N is the number of the line the item starts on in the original file
  (no padding). A read that started mid-file passes `first_line`, and numbers count from it.
- Two spaces per level after the bar show nesting: members under their class, interface,
  struct, impl block, namespace or module. A container prints its header only; nothing
  closes it.
- Bodies become `{ … }` (brace languages), ` …` after the colon (Python) or `do … end`
  (Elixir). Initialisers longer than SHORT_VALUE_CHARS, or on several lines, become `…`.
- A signature over several lines is collapsed onto one; comments inside it are dropped.
- Decorators, annotations, attributes and `template <…>` on lines of their own keep a line.
- A doc comment or docstring is reduced to its first sentence, appended to its declaration's
  line as a comment (`// …`, `# …`); a file's or module's own doc keeps a line of its own.
  Other comments are dropped.
- Consecutive one-line fields, variables, imports or enum constants at one level are joined
  on one line (`; ` between them), numbered by the first: a line number costs ~3 tokens.

A read cut out of the middle of a file is parsed inside made-up context (see Fragment) so
that its declarations are found; its leading half-body is dropped. Everything here is a pure
function of its input: no I/O. Parsers are created once per grammar and cached.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from tree_sitter import Node, Parser

__all__ = [
    "SUPPORTED_LANGUAGES",
    "TEXT_EXTENSIONS",
    "Skeleton",
    "Symbol",
    "detect_language",
    "skeleton",
]

ELLIPSIS: Final = "…"
BAR: Final = "│"
INDENT: Final = "  "
# Past this many characters an outline line is cut: a 2 kB type union is not a signature.
MAX_LINE_CHARS: Final = 240
# Documentation keeps one line of prose, cut here.
MAX_DOC_CHARS: Final = 100
# Initialisers up to this length (single line) are kept: `MAX = 1024` says more than `MAX = …`.
SHORT_VALUE_CHARS: Final = 40
# A parse whose ERROR nodes cover more than this share of the non-blank lines is not outlined:
# what survives would be fragments, and fragments of bodies look like declarations.
MAX_ERROR_SHARE: Final = 0.5
# A repaired parse this close to clean is taken without trying the other repairs: a read cut
# in the middle of an expression keeps a few broken rows whatever context it is given.
GOOD_ENOUGH_ERROR_SHARE: Final = 0.05


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
    """The outline of one source text (see the module docstring for the format)."""

    text: str
    language: str
    original_lines: int
    first_line: int = 1
    symbols: tuple[Symbol, ...] = ()
    # False when the parser reported errors and the broken parts were left out.
    complete: bool = True
    # True when the text was a piece cut out of a file and parsed inside made-up context.
    repaired: bool = False


# --------------------------------------------------------------------------- language detection

_EXTENSIONS: Final[Mapping[str, str]] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".tpp": "cpp", ".inl": "cpp",
    ".ex": "elixir", ".exs": "elixir",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".ru": "ruby",
    ".sh": "bash", ".bash": "bash",
}

# Files named without a telling extension.
_FILE_NAMES: Final[Mapping[str, str]] = {
    "Rakefile": "ruby", "Gemfile": "ruby", "Guardfile": "ruby", "Vagrantfile": "ruby", "Podfile": "ruby",
    ".bashrc": "bash", ".bash_profile": "bash", ".profile": "bash",
}

# Text formats are never outlined, whatever a grammar could make of them; listed so that the
# refusal is explicit rather than an accident of the extension table.
TEXT_EXTENSIONS: Final = frozenset({
    ".md", ".markdown", ".mdx", ".rst", ".txt", ".text", ".adoc", ".org", ".tex",
    ".json", ".jsonl", ".ndjson", ".json5", ".jsonc", ".yaml", ".yml", ".toml", ".ini", ".cfg",
    ".conf", ".env", ".properties", ".xml", ".html", ".htm", ".xhtml", ".svg", ".css", ".scss",
    ".sass", ".less", ".csv", ".tsv", ".lock", ".log", ".sum", ".mod", ".heex", ".eex", ".erb",
    ".j2", ".jinja", ".hbs", ".mustache", ".output", ".diff", ".patch", ".sql", ".graphql",
    ".proto", ".feature",
})


def detect_language(path: str | None) -> str | None:
    """The outline language of a path, by extension or well-known file name; None for text.

    Lock files and text formats give None even when a grammar exists, because rewriting
    them as outlines would lose the very content they are read for.
    """
    if not path:
        return None
    name = os.path.basename(path.replace("\\", "/"))
    if name in _FILE_NAMES:
        return _FILE_NAMES[name]
    lowered = name.lower()
    if lowered.endswith(".lock") or lowered in {"package-lock.json", "pnpm-lock.yaml"}:
        return None
    ext = os.path.splitext(lowered)[1]
    if ext in TEXT_EXTENSIONS:
        return None
    return _EXTENSIONS.get(ext)


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
    handler: str = ""  # name of an _Outliner method, for CUSTOM


# Lexical tokens that matter for bracket balance: comments and strings are matched whole so
# that brackets inside them do not count. `'…'` is a string in JS, a one-character literal in
# C, Java, Go and Rust (where `'a` is a lifetime).
_JS_TOKENS: Final = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\*/|[{}()\[\]]",
    re.S)
_C_TOKENS: Final = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n]){1,2}'|`[^`]*`|\*/|[{}()\[\]]",
    re.S)

_PY_TOKENS: Final = re.compile(
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
    tokens: re.Pattern[str] = _C_TOKENS
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


# Handlers that look at statements (assignments, calls) for declarations in disguise.
_STATEMENT_HANDLERS: Final = frozenset({"_js_expression", "_py_expression", "_rust_expression",
                                        "_c_declaration", "_js_pair"})


def _rules(*groups: tuple[Iterable[str], Rule]) -> dict[str, Rule]:
    table: dict[str, Rule] = {}
    for types, rule in groups:
        for node_type in types:
            table[node_type] = rule
    return table


def _custom(handler: str, kind: str = "") -> Rule:
    return Rule(CUSTOM, kind, handler)


_JS_RULES: Final = _rules(
    (("import_statement",), Rule(KEEP, "import")),
    (("export_statement",), _custom("_js_export")),
    (("ambient_declaration",), Rule(WRAP)),
    (("function_declaration", "generator_function_declaration"), Rule(DEF, "function")),
    (("function_signature",), Rule(KEEP, "function")),
    (("class_declaration", "abstract_class_declaration", "class"), Rule(CONTAINER, "class")),
    (("interface_declaration",), Rule(CONTAINER, "interface")),
    (("type_alias_declaration",), Rule(KEEP, "type")),
    (("enum_declaration",), Rule(KEEP, "enum")),
    (("internal_module", "module"), Rule(CONTAINER, "module")),
    (("lexical_declaration", "variable_declaration"), Rule(VAR, "variable")),
    (("expression_statement",), _custom("_js_expression")),
    (("method_definition",), Rule(DEF, "function")),
    (("public_field_definition", "field_definition"), Rule(VAR, "field")),
    (("abstract_method_signature", "method_signature", "property_signature", "index_signature",
      "call_signature", "construct_signature"), Rule(KEEP, "field")),
    (("pair",), _custom("_js_pair")),
)

_JS_COMMON: Final[dict[str, Any]] = dict(
    rules=_JS_RULES,
    decorator_types=frozenset({"decorator"}),
    declarator_types=frozenset({"variable_declarator"}),
    function_values=frozenset({"arrow_function", "function_expression", "function",
                               "generator_function"}),
    class_values=frozenset({"class"}),
    object_values=frozenset({"object"}),
    fragment=Fragment(function="function __fragment__() {", containers=("class __Fragment__ {",),
                      method="__fragment__() {", closure="() => {", tokens=_JS_TOKENS,
                      field_types=frozenset({"public_field_definition", "field_definition",
                                             "method_definition"}),
                      statement_keywords=frozenset({
                          "return", "const", "let", "var", "if", "for", "while", "do", "await", "throw",
                          "this", "new", "switch", "try", "catch", "break", "continue", "yield", "delete",
                          "typeof", "void", "else", "with"})),
)

_PYTHON: Final = Spec(
    name="python",
    grammar="python",
    rules=_rules(
        (("import_statement", "import_from_statement", "future_import_statement"), Rule(KEEP, "import")),
        (("function_definition",), Rule(DEF, "function")),
        (("class_definition",), Rule(CONTAINER, "class")),
        (("decorated_definition",), Rule(WRAP)),
        (("assignment",), Rule(VAR, "variable")),
        (("expression_statement",), _custom("_py_expression")),
        (("type_alias_statement",), Rule(KEEP, "type")),
    ),
    body_marker=ELLIPSIS,
    decorator_types=frozenset({"decorator"}),
    value_fields=("right",),
    doc_prefixes=(),
    docstrings=True,
    line_comment="#",
    fragment=Fragment(function="def __fragment__():", containers=("class __Fragment__:",),
                      method="def __fragment__(self):", indented=True, tokens=_PY_TOKENS,
                      definition_types=frozenset({"function_definition", "decorated_definition",
                                                  "class_definition"})),
)

_RUST: Final = Spec(
    name="rust",
    grammar="rust",
    rules=_rules(
        (("use_declaration", "extern_crate_declaration"), Rule(KEEP, "import")),
        (("mod_item",), Rule(CONTAINER, "module")),
        (("foreign_mod_item",), Rule(CONTAINER, "module")),
        (("struct_item", "union_item"), Rule(CONTAINER, "struct")),
        (("enum_item",), Rule(KEEP, "enum")),
        (("trait_item",), Rule(CONTAINER, "trait")),
        (("impl_item",), Rule(CONTAINER, "impl")),
        (("function_item",), Rule(DEF, "function")),
        (("function_signature_item",), Rule(KEEP, "function")),
        (("const_item", "static_item"), Rule(VAR, "variable")),
        (("type_item", "associated_type"), Rule(KEEP, "type")),
        (("attribute_item", "inner_attribute_item"), Rule(KEEP)),
        (("field_declaration",), Rule(KEEP, "field")),
        (("macro_definition",), _custom("_rust_macro_definition", "macro")),
        (("expression_statement",), _custom("_rust_expression")),
        (("macro_invocation",), _custom("_rust_macro_invocation", "macro")),
    ),
    comment_types=frozenset({"line_comment", "block_comment"}),
    doc_prefixes=("///", "/**"),
    standalone_doc_prefixes=("//!", "/*!"),
    fragment=Fragment(function="fn __fragment__() {", containers=("impl __Fragment__ {", "mod __fragment__ {"),
                      method="fn __fragment__() {", closure="|| {", block="if true {"),
)

_GO: Final = Spec(
    name="go",
    grammar="go",
    rules=_rules(
        (("package_clause",), Rule(KEEP, "module")),
        (("import_declaration",), Rule(KEEP, "import")),
        (("function_declaration", "method_declaration"), Rule(DEF, "function")),
        (("type_declaration",), _custom("_go_type_declaration")),
        (("type_spec", "type_alias"), _custom("_go_type_spec")),
        (("var_declaration", "const_declaration"), _custom("_go_var_declaration")),
        (("var_spec", "const_spec"), Rule(VAR, "variable")),
        (("field_declaration",), Rule(KEEP, "field")),
        (("method_elem", "method_spec", "type_elem"), Rule(KEEP, "function")),
    ),
    doc_prefixes=("//", "/*"),
    fragment=Fragment(function="func __fragment__() {", closure="func() {", block="if true {"),
)

_JAVA: Final = Spec(
    name="java",
    grammar="java",
    rules=_rules(
        (("package_declaration",), Rule(KEEP, "module")),
        (("import_declaration",), Rule(KEEP, "import")),
        (("class_declaration", "record_declaration"), Rule(CONTAINER, "class")),
        (("interface_declaration", "annotation_type_declaration"), Rule(CONTAINER, "interface")),
        (("enum_declaration",), Rule(CONTAINER, "enum")),
        (("enum_body_declarations",), Rule(BLOCK)),
        (("enum_constant",), _custom("_java_enum_constant", "field")),
        (("method_declaration", "constructor_declaration", "compact_constructor_declaration"),
         Rule(DEF, "function")),
        (("field_declaration", "constant_declaration"), Rule(VAR, "field")),
        (("annotation_type_element_declaration",), Rule(KEEP, "function")),
    ),
    comment_types=frozenset({"line_comment", "block_comment"}),
    decorator_types=frozenset({"annotation", "marker_annotation"}),
    modifier_holders=frozenset({"modifiers"}),
    declarator_types=frozenset({"variable_declarator"}),
    class_kinds=frozenset({"class", "interface", "enum"}),
    # Java has no top-level functions: the outermost scope of a fragment is a class.
    fragment=Fragment(function="class __Fragment__ {", containers=("class __Fragment__ {",),
                      method="void __fragment__() {", closure="() -> {"),
)

_C_RULES: Final = _rules(
    (("preproc_include",), Rule(KEEP, "import")),
    (("preproc_def", "preproc_function_def"), Rule(VAR, "macro")),
    (("preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "preproc_elifdef",
      "linkage_specification", "declaration_list"), Rule(BLOCK)),
    (("function_definition",), Rule(DEF, "function")),
    (("declaration",), _custom("_c_declaration")),
    (("type_definition",), _custom("_c_type_definition", "type")),
    (("struct_specifier", "union_specifier"), Rule(CONTAINER, "struct")),
    (("enum_specifier",), Rule(KEEP, "enum")),
    (("field_declaration",), _custom("_c_declaration", "field")),
)

_C: Final = Spec(
    name="c",
    grammar="c",
    rules=_C_RULES,
    declarator_types=frozenset({"init_declarator"}),
    value_fields=("value", "default_value"),
    doc_prefixes=("/*", "//"),
    fragment=Fragment(function="void __fragment__() {", containers=("struct __Fragment__ {",),
                      method="void __fragment__() {"),
)

_CPP: Final = Spec(
    name="cpp",
    grammar="cpp",
    rules={
        **_C_RULES,
        **_rules(
            (("namespace_definition",), Rule(CONTAINER, "module")),
            (("class_specifier",), Rule(CONTAINER, "class")),
            (("struct_specifier", "union_specifier"), Rule(CONTAINER, "struct")),
            (("template_declaration",), Rule(WRAP)),
            (("alias_declaration", "type_alias_declaration", "using_declaration",
              "namespace_alias_definition", "concept_definition"), Rule(KEEP, "type")),
            (("access_specifier",), _custom("_cpp_access_specifier")),
        ),
    },
    declarator_types=frozenset({"init_declarator"}),
    value_fields=("value", "default_value"),
    doc_prefixes=("/*", "//"),
    class_kinds=frozenset({"class", "struct"}),
    fragment=Fragment(function="void __fragment__() {",
                      containers=("namespace __fragment__ {", "struct __Fragment__ {"),
                      method="void __fragment__() {", closure="[&]() {"),
)

# Elixir is all macro calls: which ones declare is a matter of their names.
_EX_MODULES: Final = frozenset({"defmodule", "defprotocol", "defimpl"})
_EX_FUNCTIONS: Final = frozenset({"def", "defp", "defmacro", "defmacrop", "defguard", "defguardp",
                                  "defn", "defnp", "defdelegate"})
_EX_IMPORTS: Final = frozenset({"use", "import", "alias", "require"})
# Blocks that group definitions (ExUnit's describe) and blocks that are one (test, schema …).
_EX_GROUPS: Final = frozenset({"describe"})
_EX_BLOCKS: Final = frozenset({"test", "setup", "setup_all", "schema", "embedded_schema", "scope", "pipeline",
                               "live_session", "attributes", "actions", "relationships", "code_interface",
                               "calculations", "aggregates", "identities", "validations", "changes",
                               "policies", "postgres", "sqlite", "resources"})
_EX_DECLARATIONS: Final = frozenset({"defstruct", "defexception", "defoverridable", "plug", "field",
                                     "belongs_to", "has_many", "has_one", "many_to_many", "embeds_one",
                                     "embeds_many", "timestamps", "pipe_through", "forward", "resources",
                                     "live", "get", "post", "put", "patch", "delete"})
_EX_DOCS: Final = frozenset({"moduledoc", "doc", "typedoc", "shortdoc"})
_EX_SIGNATURES: Final = frozenset({"spec", "type", "typep", "opaque", "callback", "macrocallback",
                                   "behaviour", "impl", "derive", "enforce_keys"})

_ELIXIR: Final = Spec(
    name="elixir",
    grammar="elixir",
    rules=_rules(
        (("call",), _custom("_ex_call")),
        (("unary_operator",), _custom("_ex_attribute")),
    ),
    body_marker="do … end",
    block_start=b"do",
    doc_prefixes=(),
    line_comment="#",
    class_kinds=frozenset({"module"}),
)

_CSHARP: Final = Spec(
    name="csharp",
    grammar="csharp",
    rules=_rules(
        (("using_directive", "extern_alias_directive"), Rule(KEEP, "import")),
        (("namespace_declaration",), Rule(CONTAINER, "module")),
        (("file_scoped_namespace_declaration",), Rule(KEEP, "module")),
        (("class_declaration", "record_declaration", "record_struct_declaration"), Rule(CONTAINER, "class")),
        (("struct_declaration",), Rule(CONTAINER, "struct")),
        (("interface_declaration",), Rule(CONTAINER, "interface")),
        (("enum_declaration",), Rule(CONTAINER, "enum")),
        (("enum_member_declaration",), _custom("_enum_member", "field")),
        (("method_declaration", "constructor_declaration", "destructor_declaration", "operator_declaration",
          "conversion_operator_declaration"), Rule(DEF, "function")),
        (("property_declaration", "indexer_declaration", "event_declaration"), _custom("_cs_property", "field")),
        (("field_declaration", "event_field_declaration"), _custom("_cs_field", "field")),
        (("delegate_declaration",), Rule(KEEP, "type")),
        (("global_attribute",), Rule(KEEP)),
    ),
    decorator_types=frozenset({"attribute_list"}),
    declarator_types=frozenset({"variable_declarator"}),
    value_after_equals=True,
    arrow_bodies=frozenset({"arrow_expression_clause"}),
    doc_prefixes=("///", "/**"),
    class_kinds=frozenset({"class", "struct", "interface"}),
    fragment=Fragment(function="class __Fragment__ {", containers=("class __Fragment__ {", "namespace __Fragment__ {"),
                      method="void __fragment__() {", closure="() => {",
                      field_types=frozenset({"field_declaration", "property_declaration"}),
                      statement_keywords=frozenset({
                          "return", "var", "if", "for", "foreach", "while", "do", "await", "throw", "this",
                          "base", "switch", "try", "catch", "break", "continue", "yield", "else", "lock"})),
)

# Ruby declares with keywords, and with a few well-known calls at class level.
_RB_DECLARATIONS: Final = frozenset({
    "require", "require_relative", "load", "autoload", "include", "extend", "prepend", "using",
    "attr_reader", "attr_writer", "attr_accessor", "module_function", "private_constant", "delegate",
    "def_delegators", "def_delegator", "belongs_to", "has_many", "has_one", "has_and_belongs_to_many",
    "validates", "validate", "scope", "before_action", "after_action", "around_action", "before_save",
    "after_save", "before_validation", "after_commit", "enum", "private_class_method", "public_class_method",
})
_RUBY: Final = Spec(
    name="ruby",
    grammar="ruby",
    rules=_rules(
        (("class", "module", "singleton_class"), Rule(CONTAINER, "class")),
        (("method", "singleton_method"), Rule(DEF, "function")),
        (("assignment",), _custom("_rb_assignment", "variable")),
        (("call",), _custom("_rb_call")),
        (("identifier",), _custom("_rb_visibility")),
    ),
    body_marker=ELLIPSIS,
    block_start=b"",
    value_fields=("right",),
    doc_prefixes=("#",),
    line_comment="#",
    closing_words=frozenset({"end"}),
    class_kinds=frozenset({"class"}),
)

_BASH: Final = Spec(
    name="bash",
    grammar="bash",
    rules=_rules(
        (("function_definition",), Rule(DEF, "function")),
        (("variable_assignment",), Rule(VAR, "variable")),
        (("declaration_command",), _custom("_sh_declaration", "variable")),
        (("command",), _custom("_sh_source")),
    ),
    doc_prefixes=("#",),
    line_comment="#",
)

_SPECS: Final[Mapping[str, Spec]] = {
    spec.name: spec
    for spec in (
        Spec(name="typescript", grammar="typescript", **_JS_COMMON),
        Spec(name="tsx", grammar="tsx", **_JS_COMMON),
        Spec(name="javascript", grammar="javascript", **_JS_COMMON),
        _PYTHON,
        _RUST,
        _GO,
        _JAVA,
        _C,
        _CPP,
        _ELIXIR,
        _CSHARP,
        _RUBY,
        _BASH,
    )
}

SUPPORTED_LANGUAGES: Final = frozenset(_SPECS)

_ALIASES: Final[Mapping[str, str]] = {
    "ts": "typescript", "js": "javascript", "jsx": "javascript", "py": "python",
    "rs": "rust", "golang": "go", "c++": "cpp", "cxx": "cpp", "h": "c", "ex": "elixir", "exs": "elixir",
    "c#": "csharp", "cs": "csharp", "rb": "ruby", "sh": "bash", "shell": "bash",
}


@functools.cache
def _parser(grammar: str) -> Parser:
    """One parser per grammar for the life of the process: creating one costs a parse or two."""
    from tree_sitter_language_pack import get_parser

    return get_parser(grammar)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- entry point


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
        result, errors = _outline(source, _SPECS[name], first_line)
        if errors and name == "c" and language is None:
            # `.h` is shared by C and C++; a header the C grammar chokes on is tried as C++.
            alternative, alternative_errors = _outline(source, _CPP, first_line)
            if alternative is not None and (result is None or alternative_errors < errors):
                result = alternative
        return result
    except Exception:  # noqa: BLE001 - a compaction must never fail on one odd file; it stays verbatim
        return None


def _resolve_language(language: str | None, path: str | None) -> str | None:
    if language is not None:
        key = language.strip().lower()
        key = _ALIASES.get(key, key)
        return key if key in _SPECS else None
    return detect_language(path)


def _outline(source: str, spec: Spec, first_line: int) -> tuple[Skeleton | None, int]:
    """The skeleton (None when refused) and the rows the parser could not make sense of."""
    parsed = _parse(source, spec, first_line)
    if _too_broken(parsed, source):
        return None, parsed.error_rows
    outliner = _Outliner(parsed.data, spec, first_line - parsed.synthetic_rows,
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


@dataclass(frozen=True, slots=True)
class _Parsed:
    root: Node
    data: bytes  # the text parsed, with any synthetic context
    synthetic_rows: int  # lines of made-up context before the source
    error_rows: int
    repaired: bool


def _parse(source: str, spec: Spec, first_line: int) -> _Parsed:
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


def _count_lines(source: str) -> int:
    return len(source.splitlines())


def _too_broken(parsed: _Parsed, source: str) -> bool:
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


# --------------------------------------------------------------------------- text helpers

_WHITESPACE: Final = re.compile(r"\s+")
_OPEN_SPACE: Final = re.compile(r"([(\[]) ")
_CLOSE_SPACE: Final = re.compile(r",? ([)\]])")
_TRAILING_COMMA: Final = re.compile(r", ?(\}|$)")


def _collapse(text: str) -> str:
    """One line: runs of whitespace become one space; `( a, b, )` from a wrapped list becomes `(a, b)`."""
    text = _WHITESPACE.sub(" ", text).strip()
    if "( " in text or "[ " in text:
        text = _OPEN_SPACE.sub(r"\1", text)
    if " )" in text or " ]" in text:
        text = _CLOSE_SPACE.sub(r"\1", text)
    if "," in text:
        text = _TRAILING_COMMA.sub(lambda m: " }" if m.group(1) else "", text)
    return text.removesuffix(" \\")


def _clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def _last_row(node: Node) -> int:
    """The row of a node's last character (a line comment that swallowed its newline ends at column 0)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


_DOC_OPENERS: Final = ("/**", "/*!", "/*", "///", "//!", "//", "#", '"""', "'''")


# Markup in doc comments (C# XML docs, Javadoc HTML) that says nothing in one line of summary.
_DOC_TAGS: Final = re.compile(r"</?(?:summary|remarks|para|p|br|b|i|em|strong|c|code|value|returns)\s*/?>",
                              re.IGNORECASE)
_SENTENCE_END: Final = re.compile(r"[.!?](?=\s+[A-Z`\"'(\[]|\s*$)")


def _doc_summary(text: str) -> tuple[str, bool]:
    """The summary of a comment or docstring, and whether more followed.

    The summary is the first sentence of the first paragraph: the first line when that line
    is a sentence, and never half a sentence wrapped over two comment lines (Go's style).
    Tags (`@param`) end the paragraph.
    """
    content: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        for opener in _DOC_OPENERS:
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


def _docstring_text(text: str) -> tuple[str, bool]:
    """The first line of a string literal's content, and whether more followed."""
    match = _STRING_PREFIX.match(text)
    if match is None:
        return "", False
    quote = match.group(1)
    inner = text[match.end():]
    inner = inner[: -len(quote)] if inner.endswith(quote) else inner
    return _doc_summary(inner)


# --------------------------------------------------------------------------- the outliner


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
class _Outliner:
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
            return _collapse(self.src[start:end].decode("utf-8", "replace"))
        parts: list[bytes] = []
        position = start
        for hole_start, hole_end in holes:
            if hole_start > position:
                parts.append(self.src[position:hole_start])
            position = max(position, hole_end)
        if position < end:
            parts.append(self.src[position:end])
        return _collapse(b" ".join(parts).decode("utf-8", "replace"))

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
        return _collapse(text)

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
            self._emit(item.start_point[0], depth, _clip(self._text(item, item.start_byte, item.end_byte)),
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
        self._emit(row, depth, _clip(text), group=group, end_row=_last_row(node))
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
        head = _clip(self._text(scope, start, body.start_byte))
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
        head = _clip(self._text(scope, start, opening))
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
        self._emit(row, depth, _clip(text), group=group, end_row=_last_row(node))
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
                self._emit(row, depth, _clip(text), prefix=True)
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
        first, _ = _doc_summary(text)
        return _clip(first, MAX_DOC_CHARS) if first else None

    def _format_doc(self, text: str) -> str | None:
        first, more = _doc_summary(text)
        if not first:
            return None
        opener = next(p for p in _DOC_OPENERS if text.startswith(p)) if text.startswith(_DOC_OPENERS) else "//"
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
        first, _ = _docstring_text(self.src[string.start_byte:string.end_byte].decode("utf-8", "replace"))
        return _clip(first, MAX_DOC_CHARS) if first else None

    def _module_docstring(self, children: list[Node]) -> None:
        """A module docstring has no line to ride on: it keeps its own, first line only."""
        string = _leading_string(children, self.spec)
        if string is None:
            return
        first, more = _docstring_text(self.src[string.start_byte:string.end_byte].decode("utf-8", "replace"))
        if first:
            self._emit(string.start_point[0], 0, f'"""{_clip(first, MAX_DOC_CHARS)}{" " + ELLIPSIS if more else ""}"""')

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
            self._emit(row, depth, _clip(_collapse(text)))
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
        self._emit(row, depth, _clip(text))
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
        self._emit(row, depth, _clip(self._text(scope, start, scope.end_byte)))
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
        self._emit(row, depth, _clip(text), group="field", end_row=_last_row(scope))
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
        self._emit(row, depth, _clip(text), group="constant", end_row=_last_row(node))
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
        if macro in _EX_MODULES and block is not None:
            return self._container(node, depth, "module", begin, body=block)
        if macro in _EX_GROUPS and block is not None:
            return self._container(node, depth, "group", begin, body=block)
        if macro in _EX_FUNCTIONS or (macro in _EX_BLOCKS and block is not None):
            kind = "function" if macro in _EX_FUNCTIONS else "block"
            if block is not None:
                return self._def(node, depth, kind, begin, body=block)
            inline = _ex_inline_body(node, self.src)
            if inline is not None:
                if _damaged(node, [inline]):
                    return False
                start, row = self._begin(node, depth, begin)
                self._emit(row, depth, f"{_clip(self._text(node, start, inline.start_byte))} {ELLIPSIS}")
                self._symbol(node, kind, row, depth, _ex_function_name(node, self.src))
                return True
            return self._keep(node, depth, kind, begin)
        if macro in _EX_IMPORTS:
            return self._keep(node, depth, "import", begin)
        if macro in _EX_DECLARATIONS and block is None:
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
        if name in _EX_DOCS:
            strings = [c for c in operand.named_children if c.type == "arguments"]
            text = self.src[strings[0].start_byte:strings[0].end_byte].decode("utf-8", "replace") if strings else ""
            summary, _ = _docstring_text(text.strip().removeprefix("~S").removeprefix("~s"))
            summary = _clip(summary, MAX_DOC_CHARS) if summary else None
            if name == "moduledoc":
                if self.headers and summary:
                    self._attach_doc(self.headers[-1], summary)
            else:
                self.pending_doc = summary
            return False
        if name in _EX_SIGNATURES:
            return self._keep(node, depth, "type" if name.startswith(("type", "opaque")) else "", begin)
        arguments = next((c for c in operand.named_children if c.type == "arguments"), None)
        if arguments is None:
            return self._keep(node, depth, "", begin)
        if _damaged(node, [arguments]):
            return False
        start, row = self._begin(node, depth, begin)
        text = f"{self._text(node, start, arguments.start_byte)} {self._short(arguments)}"
        self._emit(row, depth, _clip(text), group="attribute", end_row=_last_row(node))
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
        self._emit(row, depth, _clip(text), group="constant", end_row=_last_row(node))
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
        self._emit(row, depth, _clip(text), group="field", end_row=_last_row(node))
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
        if word not in _RB_DECLARATIONS:
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
