"""Each outline language is walked by its family's outliner (braces.py, scripting.py), which must
answer every handler its rules name: a language in no family, or a handler its family lacks, would
make every skeleton of that language None without a word (`skeleton` never raises)."""

from __future__ import annotations

from sessionstore.compaction.skeleton import SUPPORTED_LANGUAGES, skeleton
from sessionstore.compaction.skeleton.api import OUTLINERS
from sessionstore.compaction.skeleton.braces import BRACE_LANGUAGES
from sessionstore.compaction.skeleton.languages import SPECS
from sessionstore.compaction.skeleton.model import CUSTOM
from sessionstore.compaction.skeleton.scripting import SCRIPT_LANGUAGES


def test_every_language_has_one_family_with_every_handler_its_rules_name() -> None:
    assert not BRACE_LANGUAGES & SCRIPT_LANGUAGES
    assert set(OUTLINERS) == BRACE_LANGUAGES | SCRIPT_LANGUAGES == SUPPORTED_LANGUAGES
    for name, spec in SPECS.items():
        outliner = OUTLINERS[name]
        handlers = {rule.handler for rule in spec.rules.values() if rule.action == CUSTOM}
        missing = sorted(h for h in handlers if not callable(getattr(outliner, h, None)))
        assert not missing, f"{name}: {outliner.__name__} lacks {missing}"
        assert outliner.STATEMENT_HANDLERS <= {h for s in SPECS.values() if OUTLINERS[s.name] is outliner
                                               for h in (r.handler for r in s.rules.values())}


def test_a_handler_of_each_family_outlines() -> None:
    ruby = skeleton('require "json"\nclass A\n  attr_reader :name\nend\n', language="ruby")
    go = skeleton("package p\n\ntype (\n\tA int\n\tB struct {\n\t\tX int\n\t}\n)\n", language="go")
    assert ruby is not None and ruby.text == '1│ require "json"\n2│ class A\n3│   attr_reader :name'
    assert go is not None and "3│ type (" in go.text and "5│   B struct" in go.text
