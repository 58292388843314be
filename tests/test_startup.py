"""Start-up stays light: `sessionstore --version` and `--help`, and `import sessionstore`, load
neither SQLAlchemy nor a database driver (the time itself is scripts/bench_startup.py's)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import click

import sessionstore
from sessionstore.cli import app, main

HEAVY = ("sqlalchemy", "psycopg", "alembic", "structlog", "anthropic", "tiktoken", "sessionstore.store")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_version_and_help_load_nothing_heavy() -> None:
    for args in (["--version"], ["--help"]):
        code = ("from sessionstore.cli import main\n"
                f"try:\n    main({args!r}, standalone_mode=False)\nexcept SystemExit:\n    pass")
        loaded = _loaded_after(code)
        assert not [m for m in HEAVY if m in loaded], args
    assert not [m for m in HEAVY if m in _loaded_after("import sessionstore")]
    # and a command that needs the store gets it
    assert "sqlalchemy" in _loaded_after("import sessionstore\nsessionstore.SessionStore")


def test_the_command_list_agrees_with_the_commands() -> None:
    ctx = click.Context(main)
    for name, (module, first) in app.COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.callback.__module__ == f"sessionstore.cli.{module}", name
        assert " ".join((command.help or "").split("\n\n")[0].split()) == first, name
    assert set(main.commands) == set(app.COMMANDS)  # every registered command is listed


def test_the_lazy_api_is_the_typed_api() -> None:
    """`_EXPORTS` (what `sessionstore.X` loads) and the TYPE_CHECKING imports (what type checkers
    see) name the same things from the same modules, and every name resolves."""
    tree = ast.parse(Path(sessionstore.__file__).read_text())
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                typed.update((alias.name, "." * imp.level + (imp.module or "")) for alias in imp.names)
    assert typed == sessionstore._WHERE
    assert all(getattr(sessionstore, name) is not None for name in sessionstore.__all__)
    assert sessionstore.events.user("x").payload["role"] == "user"  # submodules as attributes, as before
