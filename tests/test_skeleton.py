"""Code skeletons (compaction level 2) and agents' line-number prefixes, on real code.

Real TypeScript, JavaScript and Python come from the file reads recorded in the transcripts:
the shipped fixtures always, the shared corpus too when it is there (read at run time, never
copied here), with the minimum counts each test needs set for the corpus at hand; Rust, Go,
Java, C, C++ and TSX from the samples under tests/samples/skeleton/. Definitions are collected independently of the
implementation, by a plain tree-sitter walk over a fixed list of node types, and every one
must show up in the outline with its original line number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Node
from tree_sitter_language_pack import get_parser

from sessionstore.compaction.numbered import NumberedSource, split_trailer, strip_line_numbers
from sessionstore.compaction.skeleton import SUPPORTED_LANGUAGES, Skeleton, detect_language, skeleton
from sessionstore.testing.reads import Read, recorded_reads
from sessionstore.tokens import TiktokenCounter

from .conftest import SHARED, cases


SAMPLES = Path(__file__).parent / "samples" / "skeleton"
OUTLINE_LINE = re.compile(r"^(\d+)│ ( *)(.*)$")
MAX_SHARE = 0.30  # of the original's tokens, for real files over 300 lines


def at_least(fixtures: int, shared: int) -> int:
    """How many real reads a test needs to say anything: fewer in the shipped fixtures alone."""
    return shared if SHARED else fixtures


# --------------------------------------------------------------------------- reads in the transcripts


@pytest.fixture(scope="module")
def reads(transcripts: Path) -> tuple[Read, ...]:
    found = recorded_reads(transcripts)
    assert found, f"no file reads found under {transcripts}"
    return found


def _code_reads(reads: tuple[Read, ...], language: str | None = None) -> list[Read]:
    return [r for r in reads if r.language is not None and (language is None or r.language == language)]


# --------------------------------------------------------------------------- an independent definition walk

# Per language: node types that define something the outline must show (with the node that
# holds the name); scopes the walk enters; function-like nodes it never enters.
@dataclass(frozen=True)
class Walk:
    definitions: frozenset[str]  # must appear at their own line number
    members: frozenset[str]  # variables and fields: must appear by name (consecutive ones share a line)
    scopes: frozenset[str]
    functions: frozenset[str]


_TS_WALK = Walk(
    definitions=frozenset({"function_declaration", "generator_function_declaration", "class_declaration",
                           "abstract_class_declaration", "method_definition", "interface_declaration",
                           "type_alias_declaration", "enum_declaration"}),
    members=frozenset({"variable_declarator", "public_field_definition", "field_definition"}),
    scopes=frozenset({"program", "export_statement", "class_declaration", "abstract_class_declaration",
                      "class_body", "lexical_declaration", "variable_declaration", "ambient_declaration"}),
    functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition",
                         "arrow_function", "function_expression", "function"}),
)

WALKS: dict[str, Walk] = {
    "typescript": _TS_WALK,
    "tsx": _TS_WALK,
    "javascript": _TS_WALK,
    "python": Walk(
        definitions=frozenset({"function_definition", "class_definition"}),
        members=frozenset({"assignment"}),
        scopes=frozenset({"module", "class_definition", "block", "decorated_definition", "expression_statement"}),
        functions=frozenset({"function_definition", "lambda"}),
    ),
    "rust": Walk(
        definitions=frozenset({"function_item", "struct_item", "enum_item", "trait_item", "mod_item",
                               "macro_definition", "function_signature_item", "type_item"}),
        members=frozenset({"const_item", "static_item", "field_declaration"}),
        scopes=frozenset({"source_file", "mod_item", "declaration_list", "impl_item", "trait_item",
                          "struct_item", "field_declaration_list"}),
        functions=frozenset({"function_item", "closure_expression"}),
    ),
    "go": Walk(
        definitions=frozenset({"function_declaration", "method_declaration", "type_spec"}),
        members=frozenset({"const_spec", "var_spec", "field_identifier"}),
        scopes=frozenset({"source_file", "type_declaration", "const_declaration", "var_declaration",
                          "var_spec_list"}),
        functions=frozenset({"function_declaration", "method_declaration", "func_literal"}),
    ),
    "java": Walk(
        definitions=frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                               "record_declaration", "method_declaration", "constructor_declaration"}),
        members=frozenset({"field_declaration", "enum_constant"}),
        scopes=frozenset({"program", "class_declaration", "interface_declaration", "enum_declaration",
                          "record_declaration", "class_body", "interface_body", "enum_body",
                          "enum_body_declarations"}),
        functions=frozenset({"method_declaration", "constructor_declaration", "lambda_expression"}),
    ),
}
_C_WALK = Walk(
    definitions=frozenset({"function_definition", "struct_specifier", "class_specifier", "union_specifier",
                           "namespace_definition", "type_definition", "preproc_function_def"}),
    members=frozenset({"field_declaration", "preproc_def", "alias_declaration"}),
    scopes=frozenset({"translation_unit", "preproc_ifdef", "preproc_if", "preproc_else", "linkage_specification",
                      "declaration_list", "namespace_definition", "class_specifier", "struct_specifier",
                      "field_declaration_list", "template_declaration"}),
    functions=frozenset({"function_definition", "lambda_expression"}),
)
WALKS["c"] = WALKS["cpp"] = _C_WALK
WALKS["csharp"] = Walk(
    definitions=frozenset({"namespace_declaration", "class_declaration", "struct_declaration", "interface_declaration",
                           "enum_declaration", "record_declaration", "method_declaration", "constructor_declaration"}),
    members=frozenset({"variable_declarator", "property_declaration", "enum_member_declaration"}),
    scopes=frozenset({"compilation_unit", "declaration_list", "enum_member_declaration_list", "field_declaration",
                      "variable_declaration", "property_declaration", "accessor_list"}),
    functions=frozenset({"method_declaration", "constructor_declaration", "accessor_declaration", "lambda_expression"}),
)
WALKS["ruby"] = Walk(
    definitions=frozenset({"class", "module", "method", "singleton_method"}),
    members=frozenset({"assignment"}),
    scopes=frozenset({"program", "body_statement", "singleton_class"}),
    functions=frozenset({"method", "singleton_method", "block", "do_block", "lambda"}),
)
WALKS["bash"] = Walk(
    definitions=frozenset({"function_definition"}),
    members=frozenset({"variable_assignment"}),
    scopes=frozenset({"program", "declaration_command"}),
    functions=frozenset({"function_definition"}),
)
# Languages whose body node holds only the statements (no braces, no `do`): every row counts.
_BARE_BODIES = frozenset({"python", "ruby"})

_NAME_LEAVES = frozenset({"identifier", "field_identifier", "type_identifier", "property_identifier",
                          "qualified_identifier", "destructor_name", "operator_name", "namespace_identifier",
                          "private_property_identifier", "constant", "word", "variable_name", "qualified_name"})


@dataclass(frozen=True)
class Definition:
    name: str
    line: int  # 1-based, in the text walked
    member: bool  # a variable or field: checked by name only


def _name(node: Node) -> Node | None:
    """The node naming a definition: `name`, else down the declarator chain (C, C++, Java)."""
    current: Node | None = node
    for _ in range(8):
        if current is None:
            return None
        if current.type in _NAME_LEAVES:
            return current
        named = current.child_by_field_name("name")
        if named is not None:
            return named if named.type in _NAME_LEAVES else _name(named)
        nxt = current.child_by_field_name("declarator") or current.child_by_field_name("left")
        if nxt is None and current.type in ("type_spec", "field_declaration") and current.named_child_count:
            nxt = current.named_children[0]
        current = nxt
    return None


def _body_of(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is None and node.type in ("struct_specifier", "union_specifier", "class_specifier"):
        return None
    return body


_EX_MODULES = {"defmodule", "defprotocol", "defimpl"}
_EX_FUNCTIONS = {"def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate"}


def _ex_calls(source: str) -> Iterator[tuple[str, Node]]:
    """Elixir declares with macro calls: (macro, call) for every module and function definition."""
    root = get_parser("elixir").parse(source.encode()).root_node

    def visit(node: Node) -> Iterator[tuple[str, Node]]:
        for child in node.named_children:
            target = child.child_by_field_name("target") if child.type == "call" else None
            macro = target.text.decode() if target is not None and target.type == "identifier" else ""
            if macro in _EX_MODULES or macro in _EX_FUNCTIONS or macro in ("describe", "test"):
                yield macro, child
            if macro in _EX_MODULES or macro == "describe":
                for block in (c for c in child.named_children if c.type == "do_block"):
                    yield from visit(block)

    yield from visit(root)


def _ex_definitions(source: str) -> list[Definition]:
    found = []
    for macro, call in _ex_calls(source):
        arguments = next(c for c in call.named_children if c.type == "arguments")
        head = arguments.named_children[0]
        while head.type == "binary_operator":  # `f(x) when guard`
            head = head.child_by_field_name("left")
        if head.type == "call":
            head = head.child_by_field_name("target")
        found.append(Definition(head.text.decode(), call.start_point[0] + 1, member=False))
    return found


def definitions(source: str, language: str) -> list[Definition]:
    """Everything at top level and in class-like bodies that the outline has to show."""
    if language == "elixir":
        return _ex_definitions(source)
    walk = WALKS[language]
    data = source.encode()
    root = get_parser(language).parse(data).root_node
    found: list[Definition] = []

    def visit(node: Node) -> None:
        for child in node.named_children:
            if child.type == "ERROR":
                continue
            kind = child.type
            if language == "ruby" and kind == "assignment" and child.child_by_field_name("left").type != "constant":
                continue  # a local variable of a script, not a declaration
            if kind in walk.definitions or kind in walk.members:
                if kind in ("struct_specifier", "union_specifier", "class_specifier") and _body_of(child) is None \
                        and child.child_by_field_name("body") is None:
                    pass
                else:
                    name = _name(child)
                    if name is not None and name.text:
                        # A typedef's name comes after its body; the definition starts at `typedef`.
                        line = child.start_point[0] if kind == "type_definition" else name.start_point[0]
                        found.append(Definition(name.text.decode(), line + 1, kind in walk.members))
            if kind in walk.functions:
                continue
            if kind in walk.scopes or kind in walk.definitions:
                visit(child)

    visit(root)
    return found


def function_bodies(source: str, language: str) -> list[tuple[int, int]]:
    """Row ranges (0-based, inclusive) strictly inside the bodies of functions the outline shows."""
    if language == "elixir":
        blocks = [c for macro, call in _ex_calls(source) if macro not in _EX_MODULES and macro != "describe"
                  for c in call.named_children if c.type == "do_block"]
        return [(b.start_point[0] + 1, b.end_point[0] - 1) for b in blocks if b.end_point[0] > b.start_point[0]]
    walk = WALKS[language]
    root = get_parser(language).parse(source.encode()).root_node
    ranges: list[tuple[int, int]] = []

    def visit(node: Node) -> None:
        for child in node.named_children:
            if child.type in walk.functions:
                body = child.child_by_field_name("body")
                if body is not None and body.start_point[0] > child.start_point[0] and language in _BARE_BODIES:
                    ranges.append((body.start_point[0], body.end_point[0]))
                elif body is not None and body.end_point[0] > body.start_point[0] and language not in _BARE_BODIES:
                    ranges.append((body.start_point[0] + 1, body.end_point[0] - 1))
                continue
            if child.type in walk.scopes or child.type in walk.definitions:
                visit(child)

    visit(root)
    return ranges


def body_statements(source: str, language: str) -> set[str]:
    """Distinctive lines from function bodies (long enough not to recur by chance), comments and
    docstrings excluded, and lines that also occur outside bodies (a call `f(x)` is part of the
    signature `function f(x) {`): none of them may appear in a skeleton."""
    lines = source.splitlines()
    found: set[str] = set()
    ranges = function_bodies(source, language)
    in_bodies = {row for first, last in ranges for row in range(first, last + 1)}
    outside = "\n".join(line for row, line in enumerate(lines) if row not in in_bodies)
    for first, last in ranges:
        in_docstring = False
        for row in range(first, min(last, len(lines) - 1) + 1):
            text = lines[row].strip()
            if language == "python" and text.startswith(('"""', "'''", 'r"""')):
                quotes = text[:3] if text[0] != "r" else text[1:4]
                in_docstring = not (len(text) > 3 and text.endswith(quotes) and text.count(quotes) >= 2) \
                    if not in_docstring else False
                continue
            if in_docstring:
                if text.endswith(('"""', "'''")):
                    in_docstring = False
                continue
            if len(text) < 25 or text.startswith(("#", "//", "*", "/*", "}", ")", "]")) or text in outside:
                continue
            found.add(text)
    return found


# --------------------------------------------------------------------------- outline helpers


def outline_lines(result: Skeleton) -> list[tuple[int, int, str]]:
    """(line number, depth, text) of every outline line; fails on any line not in the format."""
    parsed = []
    for line in result.text.split("\n"):
        match = OUTLINE_LINE.match(line)
        assert match is not None, f"not an outline line: {line!r}"
        parsed.append((int(match.group(1)), len(match.group(2)) // 2, match.group(3)))
    return parsed


def by_line(result: Skeleton) -> dict[int, list[str]]:
    table: dict[int, list[str]] = {}
    for number, _, text in outline_lines(result):
        table.setdefault(number, []).append(text)
    return table


def assert_definitions_shown(result: Skeleton, source: str, language: str, label: str,
                             first_line: int = 1) -> int:
    """Every definition at its original line number; every variable or field by name."""
    table = by_line(result)
    checked = 0
    for definition in definitions(source, language):
        if definition.member:
            assert re.search(rf"(?<![\w$]){re.escape(definition.name)}(?![\w$])", result.text), \
                f"{label}: member {definition.name!r} (line {definition.line}) missing from\n{result.text}"
        else:
            number = definition.line + first_line - 1
            texts = table.get(number, [])
            assert any(definition.name in text for text in texts), \
                f"{label}: {definition.name!r} not shown at line {number}; that line shows {texts}"
        checked += 1
    return checked


def assert_no_body_statement(result: Skeleton, source: str, language: str, label: str) -> None:
    for statement in body_statements(source, language):
        assert statement not in result.text, f"{label}: body statement survived: {statement!r}"


def assert_numbers_point_at_source(result: Skeleton, source: str, label: str) -> None:
    """Each outline line starts the way the original line it names starts (collapsed)."""
    lines = source.splitlines()
    for number, _, text in outline_lines(result):
        row = number - result.first_line
        assert 0 <= row < len(lines), f"{label}: line {number} outside the text ({result.first_line}..)"
        original = re.sub(r"\s+", " ", lines[row]).strip()
        # Compare the start only: bodies, initialisers and trailing `{ , ; :` are elided.
        head = original[:12].split("=")[0].rstrip(" {,;:")
        assert text.startswith(head) or text.replace("(", "( ").startswith(head), \
            f"{label}: line {number} is {original!r} but the outline shows {text!r}"


# --------------------------------------------------------------------------- samples written for this suite

SAMPLE_FILES = {
    "ring_buffer.rs": "rust",
    "cache.go": "go",
    "EventIndex.java": "java",
    "arena.c": "c",
    "arena.h": "c",
    "lru_cache.hpp": "cpp",
    "SessionList.tsx": "tsx",
    "SessionCache.cs": "csharp",
    "session_store.rb": "ruby",
    "release.sh": "bash",
}

# Statements from the samples' bodies, picked by hand: none may survive.
SAMPLE_BODY_STATEMENTS = {
    "ring_buffer.rs": ["self.dropped += 1;", "guard.items.pop_front()", "signal.wait(guard)", "assert_eq!"],
    "cache.go": ["delete(s.items, k)", "defer s.mu.Unlock()", "h.Sum32()", "ctx.Err()"],
    "EventIndex.java": ["copy.remove(0)", "bySession.clear()", "throw new IllegalArgumentException",
                        "out.add(mapper.apply(e))"],
    "arena.c": ["total_reserved += capacity", "memcpy(copy, s, len)", "a->head = NULL"],
    "arena.h": ["b->capacity - b->used"],
    "lru_cache.hpp": ["order_.splice(", "++counters_.misses", "index_.erase(victim.first)"],
    "SessionList.tsx": ["copy.sort(", "setPage(0)", "console.error(", '<li className="session-row"'],
    "SessionCache.cs": ["Interlocked.Read(ref _size)", "removed++;", "return false;", "_sweeper.Dispose()"],
    "session_store.rb": ["@events.shift while", "raise ArgumentError", "File.foreach(path)", "f.puts("],
    "release.sh": ["rm -rf", "twine upload", "git tag -a", "shift", "log_error"],
}


def test_every_sample_is_real_sized() -> None:
    for name in SAMPLE_FILES:
        assert len((SAMPLES / name).read_text().splitlines()) >= 60, name


@pytest.mark.parametrize("name", sorted(SAMPLE_FILES))
def test_sample_outline_matches_golden(name: str) -> None:
    """The exact outline, kept next to the sample (regenerate by hand after a deliberate change)."""
    source = (SAMPLES / name).read_text()
    result = skeleton(source, path=name)
    assert result is not None
    assert result.language == SAMPLE_FILES[name] or (name.endswith(".h") and result.language in ("c", "cpp"))
    golden = (SAMPLES / f"{name}.outline").read_text()
    assert result.text + "\n" == golden


@pytest.mark.parametrize("name", sorted(SAMPLE_FILES))
def test_sample_shows_every_definition_and_no_body(name: str) -> None:
    source = (SAMPLES / name).read_text()
    language = SAMPLE_FILES[name]
    result = skeleton(source, path=name)
    assert result is not None
    assert result.original_lines == len(source.splitlines())
    assert assert_definitions_shown(result, source, language, name) >= 8
    assert_no_body_statement(result, source, language, name)
    for statement in SAMPLE_BODY_STATEMENTS[name]:
        assert statement in source, f"{statement!r} is not in {name}: the check would prove nothing"
        assert statement not in result.text, f"{name}: body statement survived: {statement!r}"
    assert_numbers_point_at_source(result, source, name)


@pytest.mark.parametrize("name", sorted(SAMPLE_FILES))
def test_sample_read_from_the_middle_keeps_original_numbers(name: str) -> None:
    """A read that starts mid-file (an offset) is numbered from its offset, and what it cut off
    half-way (the body it starts in) is not mistaken for declarations."""
    source = (SAMPLES / name).read_text()
    language = SAMPLE_FILES[name]
    lines = source.splitlines(keepends=True)
    whole = definitions(source, language)
    start = len(lines) // 3
    piece = "".join(lines[start:])
    result = skeleton(piece, path=name, first_line=start + 1)
    assert result is not None, name
    assert result.first_line == start + 1
    table = by_line(result)
    later = [d for d in whole if not d.member and d.line > start + 1]
    assert later
    for definition in later:
        assert any(definition.name in text for text in table.get(definition.line, [])), \
            f"{name}: {definition.name!r} not at line {definition.line} in\n{result.text}"
    assert_numbers_point_at_source(result, piece, name)
    assert_no_body_statement(result, source, language, name)


# --------------------------------------------------------------------------- real code from the transcripts

REAL_LANGUAGES = cases(["typescript", "python"], ["javascript", "elixir"])


@pytest.mark.parametrize("language", REAL_LANGUAGES)
def test_real_whole_files_show_every_definition_and_no_body(reads: tuple[Read, ...], language: str) -> None:
    whole = [r for r in _code_reads(reads, language) if r.whole]
    assert len(whole) >= at_least(3, 10), f"too few whole {language} reads to say anything: {len(whole)}"
    checked = outlined = 0
    for read in whole:
        result = skeleton(read.source, path=read.path, first_line=read.first_line)
        label = f"{read.origin}: {read.path}"
        if result is None:
            assert not definitions(read.source, language), f"{label}: no outline for a file with definitions"
            continue
        outlined += 1
        checked += assert_definitions_shown(result, read.source, language, label)
        assert_no_body_statement(result, read.source, language, label)
        assert_numbers_point_at_source(result, read.source, label)
    assert outlined >= at_least(3, 10) and checked >= at_least(15, 50), (outlined, checked)


def test_real_pi_typescript_reads(reads: tuple[Read, ...]) -> None:
    """All TypeScript reads of Pi sessions (87 in the shared before-compaction.jsonl): whole files,
    truncated ones and pieces read at an offset, parse or are refused, and are numbered right."""
    pi = [r for r in _code_reads(reads, "typescript") if r.origin.startswith("pi/")]
    assert len(pi) >= at_least(6, 87)
    outlined = partial = 0
    for read in pi:
        result = skeleton(read.source, path=read.path, first_line=read.first_line)
        if result is None:
            continue
        outlined += 1
        partial += read.first_line > 1
        label = f"{read.path} @ {read.first_line}"
        assert result.first_line == read.first_line
        assert_numbers_point_at_source(result, read.source, label)
        for _, _, text in outline_lines(result):
            assert not re.match(r"(return|if|for|while|switch|throw|await|else|this\.)\b", text), \
                f"{label}: a statement in the outline: {text!r}"
    assert outlined >= at_least(6, 70) and partial >= at_least(2, 40), (outlined, partial)


def test_real_truncated_read_is_outlined(reads: tuple[Read, ...]) -> None:
    """A TypeScript file cut inside a class and read on from where the cut was: Pi cut the 2,377-line
    tui-renderer.ts at line 1,603 (shared corpus), the recorded fixture reads MessageStream.ts's 743
    lines in two pieces (1–400, 401–). Both pieces are outlined, and together they show what the
    whole file (the two pieces joined) defines, each at its line."""
    pairs = [(head, tail) for i, head in enumerate(reads) if head.language == "typescript"
             and head.origin.startswith("pi/") and head.first_line == 1 and _continued_at(head.trailer)
             for tail in reads[i + 1:] if tail.origin == head.origin and tail.path == head.path
             and tail.offset == _continued_at(head.trailer)]
    assert {h.path.rsplit("/", 1)[-1] for h, _ in pairs} >= {"MessageStream.ts",
                                                             *(["tui-renderer.ts"] if SHARED else [])}
    for head, tail in pairs:
        whole = head.source + tail.source
        expected = [d for d in definitions(whole, "typescript") if not d.member]
        assert len(expected) > 10
        shown = {}
        for piece in (head, tail):
            result = skeleton(piece.source, path=piece.path, first_line=piece.first_line)
            assert result is not None and result.repaired, piece.first_line
            assert_numbers_point_at_source(result, piece.source, f"{piece.path} @ {piece.first_line}")
            for number, texts in by_line(result).items():
                shown.setdefault(number, []).extend(texts)
        last_of_head = len(head.source.splitlines())
        for definition in expected:
            if definition.line < last_of_head - 2 or definition.line > last_of_head + 40:
                assert any(definition.name in t for t in shown.get(definition.line, [])), definition


def _continued_at(trailer: str) -> int | None:
    """The line Pi's truncation note tells the agent to read on from."""
    found = re.search(r"Showing lines 1-(\d+) of|Use offset=(\d+) to continue", trailer)
    if found is None:
        return None
    return int(found[1]) + 1 if found[1] else int(found[2])


def test_real_partial_python_reads_keep_their_offsets(reads: tuple[Read, ...]) -> None:
    partial = [r for r in _code_reads(reads, "python") if r.offset and r.offset > 1]
    assert len(partial) >= at_least(2, 20)
    outlined = 0
    for read in partial:
        result = skeleton(read.source, path=read.path, first_line=read.first_line)
        if result is None:
            continue
        outlined += 1
        assert result.first_line == read.offset
        assert_numbers_point_at_source(result, read.source, f"{read.path} @ {read.offset}")
        for _, depth, text in outline_lines(result):
            assert re.match(r"(@|def |async def |class |[A-Za-z_][\w.]*\s*[:=]|\"\"\"|#)", text), \
                f"{read.path} @ {read.offset}: not a declaration: {text!r}"
    assert outlined >= at_least(2, 10)


def test_real_shell_and_ruby_reads(reads: tuple[Read, ...]) -> None:
    """The few shell and Ruby files the agents read: outlined, numbered right, bodies gone."""
    few = [r for r in _code_reads(reads) if r.language in ("bash", "ruby")]
    assert {r.language for r in few} == {"bash", *(["ruby"] if SHARED else [])}
    for read in few:
        result = skeleton(read.source, path=read.path, first_line=read.first_line)
        if result is None:  # a script of plain commands: nothing to outline
            assert not definitions(read.source, read.language), f"{read.path}: no outline for a file with definitions"
            continue
        assert_definitions_shown(result, read.source, read.language, read.path)
        assert_no_body_statement(result, read.source, read.language, read.path)
        assert_numbers_point_at_source(result, read.source, read.path)


def test_real_files_over_300_lines_shrink(reads: tuple[Read, ...]) -> None:
    """At most 30% of the tokens on every real code file over 300 lines, except where the
    declarations alone weigh more: then no more than the declarations (the text outside
    function bodies) weigh."""
    counter = TiktokenCounter()
    seen: set[str] = set()
    checked = 0
    for read in _code_reads(reads):
        if not read.whole or len(read.source.splitlines()) <= 300 or read.source in seen:
            continue
        seen.add(read.source)
        result = skeleton(read.source, path=read.path)
        assert result is not None, read.path
        original = counter.count(read.source)
        share = counter.count(result.text) / original
        lines = read.source.splitlines()
        body_rows = {row for first, last in function_bodies(read.source, read.language) for row in range(first, last + 1)}
        declarations = "\n".join(line for row, line in enumerate(lines) if row not in body_rows)
        declared_share = counter.count(declarations) / original
        # A file that is mostly declarations (data models, interfaces, one-line getters) cannot
        # lose 70% without losing declarations: there the skeleton may weigh what they weigh,
        # plus its line numbers.
        limit = max(MAX_SHARE, 1.1 * declared_share)
        assert share <= limit, f"{read.path}: skeleton is {share:.0%} of the tokens (declarations {declared_share:.0%})"
        checked += 1
    assert checked >= at_least(2, 12)


def test_real_text_reads_are_never_outlined(reads: tuple[Read, ...]) -> None:
    text = [r for r in reads if r.path.lower().endswith((".md", ".json", ".jsonl", ".html", ".css", ".toml",
                                                        ".txt", ".lock", ".heex"))]
    assert len(text) >= at_least(2, 40)
    for read in text:
        assert skeleton(read.source, path=read.path) is None, read.path


# --------------------------------------------------------------------------- refusals and bad input


@pytest.mark.parametrize("path", ["README.md", "package.json", "config.yaml", "settings.yml", "pyproject.toml",
                                  "notes.txt", "index.html", "style.css", "theme.scss", "data.xml", "rows.csv",
                                  "setup.cfg", "Cargo.lock", "uv.lock", "app.ini", "package-lock.json"])
def test_text_formats_are_refused(path: str) -> None:
    assert detect_language(path) is None
    assert skeleton("def looks_like_code(x):\n    return x\n" * 60, path=path) is None


def test_unknown_or_missing_language_is_refused() -> None:
    code = "function f(a) {\n  return a;\n}\n" * 40
    assert skeleton(code, path="script.unknownext") is None
    assert skeleton(code) is None
    assert skeleton(code, language="cobol-ish") is None
    assert skeleton(code, language="markdown") is None
    assert skeleton(code, language="javascript") is not None


@pytest.mark.parametrize("path, language", [
    ("src/a.ts", "typescript"), ("a.tsx", "tsx"), ("a.js", "javascript"), ("a.jsx", "javascript"),
    ("a.mjs", "javascript"), ("a.cjs", "javascript"), ("a.py", "python"), ("a.rs", "rust"), ("a.go", "go"),
    ("A.java", "java"), ("a.c", "c"), ("a.h", "c"), ("a.cpp", "cpp"), ("a.hpp", "cpp"), ("a.cc", "cpp"),
    ("lib/app.ex", "elixir"), ("test/app_test.exs", "elixir"), ("Cache.cs", "csharp"), ("a.rb", "ruby"),
    ("Rakefile", "ruby"), ("config.ru", "ruby"), ("release.sh", "bash"), ("x.bash", "bash"),
    ("C:\\code\\Main.JAVA", "java"),
])
def test_detect_language(path: str, language: str) -> None:
    assert detect_language(path) == language
    assert language in SUPPORTED_LANGUAGES


def test_blank_and_declaration_free_input_give_none() -> None:
    assert skeleton("", language="python") is None
    assert skeleton("   \n\n", language="typescript") is None
    assert skeleton("print('hello')\nx()\n", language="python") is None


def test_garbage_gives_none_rather_than_fragments() -> None:
    assert skeleton("}}}} ))) ((( {{ ;; => <> ::\n" * 30, language="typescript") is None
    assert skeleton("\x00\x01\x02 binary \xff\xfe" * 50, language="c") is None


def test_broken_lines_do_not_hide_the_rest() -> None:
    source = (SAMPLES / "cache.go").read_text()
    broken = source.replace("// Janitor removes", "var = = garbage ;\n// Janitor removes")
    assert broken != source
    result = skeleton(broken, path="cache.go")
    assert result is not None and not result.complete
    for name in ("StringHash", "Janitor", "New", "WithTTL", "Cache", "Set", "Get"):
        assert name in result.text
    assert "garbage" not in result.text


@pytest.mark.parametrize("name", sorted(SAMPLE_FILES))
def test_every_truncation_of_a_sample_is_safe(name: str) -> None:
    """Cut anywhere: never raises, and never shows a body statement. A read stops anywhere (a
    byte limit), and starts at a line (an offset)."""
    source = (SAMPLES / name).read_text()
    language = SAMPLE_FILES[name]
    statements = SAMPLE_BODY_STATEMENTS[name]
    for cut in range(1, len(source), max(1, len(source) // 97)):
        line_start = source.rfind("\n", 0, cut) + 1
        for piece in (source[:cut], source[line_start:]):
            result = skeleton(piece, path=name)
            if result is not None:
                assert result.language in (language, "cpp")
                for statement in statements:
                    assert statement not in result.text, (name, cut, statement)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("{}()[];:=<>\"'`/*#\n\t abcdefxyz_0123456789.,@!\\")), max_size=400),
       language=st.sampled_from(sorted(SUPPORTED_LANGUAGES)), first_line=st.integers(1, 5000))
def test_arbitrary_text_never_raises(text: str, language: str, first_line: int) -> None:
    result = skeleton(text, language=language, first_line=first_line)
    if result is not None:
        for number, _, _ in outline_lines(result):
            assert first_line <= number < first_line + max(1, len(text.splitlines()))


def test_parsers_are_created_once() -> None:
    import importlib

    module = importlib.import_module("sessionstore.compaction.skeleton.repair")
    assert module._parser("typescript") is module._parser("typescript")
    module._parser.cache_clear()
    for _ in range(3):
        skeleton("export function f(): void {}\n", language="typescript")
    assert module._parser.cache_info().misses == 1


# --------------------------------------------------------------------------- format details


def test_format_on_python() -> None:
    source = '''"""Session store.

More prose."""
import os
from typing import Final

LIMIT: Final = 20
TABLE = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8}


@dataclass(frozen=True)
class Event(Base):
    """One immutable event.

    Long explanation."""

    kind: str
    payload: dict = field(default_factory=dict)

    @property
    async def size(self, *, deep: bool = False) -> int:
        """Bytes on disk."""
        total = sum(len(v) for v in self.payload.values())
        return total


def load(path: str,
         strict: bool = True) -> list[Event]:
    events = [Event(x) for x in open(path)]
    return events
'''
    result = skeleton(source, path="store.py", first_line=101)
    assert result is not None
    assert result.text == "\n".join([
        '101│ """Session store. …"""',
        "104│ import os; from typing import Final",
        "107│ LIMIT: Final = 20; TABLE = …",
        "111│ @dataclass(frozen=True)",
        "112│ class Event(Base):  # One immutable event.",
        "117│   kind: str; payload: dict = field(default_factory=dict)",
        "120│   @property",
        "121│   async def size(self, *, deep: bool = False) -> int: …  # Bytes on disk.",
        "127│ def load(path: str, strict: bool = True) -> list[Event]: …",
    ])
    assert [(s.name, s.kind, s.start_line, s.depth) for s in result.symbols if s.kind != "variable"] == [
        ("Event", "class", 112, 0), ("size", "method", 121, 1), ("load", "function", 127, 0)]
    assert result.original_lines == len(source.splitlines())


def test_format_on_typescript() -> None:
    source = '''import { a } from "b";

/**
 * A session.
 * More.
 */
export default class Session<T> extends Base implements Closeable {
\t@Input() private readonly items: T[] = [];
\tstatic registry = new Map<string, Session<unknown>>([["a", null], ["b", null]]);

\tconstructor(private name: string) {
\t\tsuper();
\t}

\t// not documentation
\tasync *stream(
\t\tlimit: number, // inline comment
\t\tsignal?: AbortSignal,
\t): AsyncGenerator<T> {
\t\tyield* this.items;
\t}
}

export const handler = async (event: Event): Promise<void> => {
\tawait process(event);
};
'''
    result = skeleton(source, path="s.ts")
    assert result is not None
    assert result.text == "\n".join([
        '1│ import { a } from "b";',
        "7│ export default class Session<T> extends Base implements Closeable  // A session.",
        "8│   @Input() private readonly items: T[] = []; static registry = …",
        "11│   constructor(private name: string) { … }",
        "16│   async *stream(limit: number, signal?: AbortSignal): AsyncGenerator<T> { … }",
        "24│ export const handler = async (event: Event): Promise<void> => { … };",
    ])


# --------------------------------------------------------------------------- numbered.py


def test_strip_real_claude_code_reads(reads: tuple[Read, ...]) -> None:
    """Every Claude Code Read: prefixes gone, same number of lines, first line = the offset."""
    claude = [r for r in reads if r.origin.startswith("claude-code/")]
    assert len(claude) >= at_least(5, 200)
    numbered = with_offset = 0
    for read in claude:
        if read.raw.startswith("<system-reminder>") or read.raw.startswith("File content ("):
            assert not read.numbered  # a notice instead of the file
            continue
        assert read.numbered, f"{read.path}: not recognised as numbered: {read.raw[:80]!r}"
        numbered += 1
        prefixed = [line for line in read.raw.split("\n") if re.match(r"^ *\d+(→|\t)", line)]
        assert len(read.source.splitlines()) == len(prefixed), read.path
        assert not any(re.match(r"^ *\d+→", line) for line in read.source.split("\n")), read.path
        assert read.first_line == (read.offset or 1), read.path
        with_offset += (read.offset or 1) > 1
        if read.limit:
            assert len(read.source.splitlines()) <= read.limit
        if read.trailer:
            assert read.trailer.startswith("<system-reminder>") and read.trailer.endswith("</system-reminder>")
            assert "<system-reminder>" not in read.source
        first_code = next(line for line in read.raw.split("\n") if "→" in line or "\t" in line)
        assert read.source.split("\n")[0] == re.sub(r"^ *\d+(→|\t)", "", first_code, count=1)
    assert numbered >= at_least(5, 200) and with_offset >= at_least(1, 50)


def test_split_trailer_on_real_pi_reads(reads: tuple[Read, ...]) -> None:
    pi = [r for r in reads if r.origin.startswith("pi/")]
    notes = [r for r in pi if r.trailer]
    assert len(notes) >= at_least(4, 40)
    for read in notes:
        assert re.fullmatch(r"\[(Showing lines \d+-\d+ of \d+.*|\d+ more lines in file.*)\]", read.trailer), read.trailer
        assert read.trailer not in read.source
        assert read.raw.startswith(read.source.rstrip("\n"))
        if read.limit:
            assert len(read.source.splitlines()) <= read.limit
    untouched = [r for r in pi if not r.trailer]
    assert all(r.source == r.raw for r in untouched)


def test_strip_line_numbers_styles() -> None:
    assert strip_line_numbers("     7→a\n     8→  b\n     9→") == NumberedSource("a\n  b\n\n", 7, "", True)
    assert strip_line_numbers("12\tx = 1\n13\ty = 2\n") == NumberedSource("x = 1\ny = 2\n", 12, "", True)
    assert strip_line_numbers("L3: a\nL4: b") == NumberedSource("a\nb\n", 3, "", True)
    assert strip_line_numbers("3: a\n4:\n5: c") == NumberedSource("a\n\nc\n", 3, "", True)
    assert strip_line_numbers("1→only") == NumberedSource("only\n", 1, "", True)


def test_strip_line_numbers_keeps_the_trailer() -> None:
    text = "   1→x\n   2→y\n\n<system-reminder>\nBe careful.\n</system-reminder>\n"
    result = strip_line_numbers(text)
    assert result == NumberedSource("x\ny\n", 1, "<system-reminder>\nBe careful.\n</system-reminder>", True)
    pi_like = "10\ta\n11\tb\n\n[5 more lines in file. Use offset=12 to continue]"
    assert strip_line_numbers(pi_like).trailer == "[5 more lines in file. Use offset=12 to continue]"


@pytest.mark.parametrize("text", [
    "def f():\n    return 1\n",
    "1: first\n3: skipped a number\n4: and on\n",
    "1: only one line in a common style",
    "10\tten\n11\televen\nthen plain text\nand more plain text\nand more\n",
    "x\n   1→late start\n",
    "",
])
def test_strip_line_numbers_leaves_unnumbered_text_alone(text: str) -> None:
    assert strip_line_numbers(text) == NumberedSource(text, 1)


def test_split_trailer_plain() -> None:
    assert split_trailer("a\nb\n") == ("a\nb\n", "")
    assert split_trailer("a\n\n[Showing lines 1-2 of 9 (50.0KB limit). Use offset=3 to continue]") == \
        ("a\n", "[Showing lines 1-2 of 9 (50.0KB limit). Use offset=3 to continue]")
