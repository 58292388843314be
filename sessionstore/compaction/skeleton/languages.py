"""Language tables, as data: which files are in which language, and how each one is outlined.

Adding a language is adding a Spec here and its name to its family (`BRACE_LANGUAGES` in
braces.py or `SCRIPT_LANGUAGES` in scripting.py), with a handler there where a node type needs
more than the generic actions; nothing in this module runs beyond building the tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .model import BLOCK, CONTAINER, CUSTOM, DEF, ELLIPSIS, JS_TOKENS, KEEP, PY_TOKENS, VAR, WRAP, Fragment, Rule, Spec

# --------------------------------------------------------------------------- language detection

EXTENSIONS: Final[Mapping[str, str]] = {
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
FILE_NAMES: Final[Mapping[str, str]] = {
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


# --------------------------------------------------------------------------- per-language rules

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
                      method="__fragment__() {", closure="() => {", tokens=JS_TOKENS,
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
                      method="def __fragment__(self):", indented=True, tokens=PY_TOKENS,
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

CPP: Final = Spec(
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
EX_MODULES: Final = frozenset({"defmodule", "defprotocol", "defimpl"})
EX_FUNCTIONS: Final = frozenset({"def", "defp", "defmacro", "defmacrop", "defguard", "defguardp",
                                  "defn", "defnp", "defdelegate"})
EX_IMPORTS: Final = frozenset({"use", "import", "alias", "require"})
# Blocks that group definitions (ExUnit's describe) and blocks that are one (test, schema …).
EX_GROUPS: Final = frozenset({"describe"})
EX_BLOCKS: Final = frozenset({"test", "setup", "setup_all", "schema", "embedded_schema", "scope", "pipeline",
                               "live_session", "attributes", "actions", "relationships", "code_interface",
                               "calculations", "aggregates", "identities", "validations", "changes",
                               "policies", "postgres", "sqlite", "resources"})
EX_DECLARATIONS: Final = frozenset({"defstruct", "defexception", "defoverridable", "plug", "field",
                                     "belongs_to", "has_many", "has_one", "many_to_many", "embeds_one",
                                     "embeds_many", "timestamps", "pipe_through", "forward", "resources",
                                     "live", "get", "post", "put", "patch", "delete"})
EX_DOCS: Final = frozenset({"moduledoc", "doc", "typedoc", "shortdoc"})
EX_SIGNATURES: Final = frozenset({"spec", "type", "typep", "opaque", "callback", "macrocallback",
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
RB_DECLARATIONS: Final = frozenset({
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

SPECS: Final[Mapping[str, Spec]] = {
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
        CPP,
        _ELIXIR,
        _CSHARP,
        _RUBY,
        _BASH,
    )
}

SUPPORTED_LANGUAGES: Final = frozenset(SPECS)

ALIASES: Final[Mapping[str, str]] = {
    "ts": "typescript", "js": "javascript", "jsx": "javascript", "py": "python",
    "rs": "rust", "golang": "go", "c++": "cpp", "cxx": "cpp", "h": "c", "ex": "elixir", "exs": "elixir",
    "c#": "csharp", "cs": "csharp", "rb": "ruby", "sh": "bash", "shell": "bash",
}
