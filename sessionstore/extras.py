"""The optional dependencies (the package's extras), and the one error a missing one gives.

Every feature behind an extra imports its dependency through `require`, so that without it
the user reads one line naming the command that installs it — from a checkout, since the
package is not on PyPI and ``pip install 'sessionstore[x]'`` fails — and the CLI ends with
status 2 instead of a traceback.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Final

from .errors import MissingExtra

# extra -> the distribution(s) it installs, as a person names them (pyproject.toml lists the pins)
EXTRAS: Final = {
    "openai": "the openai SDK",
    "mcp": "the MCP SDK 2.3 (mcp)",
    "openai-agents": "the OpenAI Agents SDK (openai-agents)",
    "adk": "Google ADK (google-adk)",
    "langchain": "langchain-core",
    "langgraph": "LangGraph (langgraph, langchain)",
}


def install_command(extra: str) -> str:
    """What installs `extra`, run in a checkout of sessionstore."""
    return f"pip install -e '.[{extra}]'"


def missing(extra: str, feature: str) -> MissingExtra:
    """The error for `feature` without `extra`: one line, with the command that fixes it."""
    return MissingExtra(f"{feature} needs {EXTRAS[extra]}, which is not installed: in a checkout of sessionstore, "
                        f"{install_command(extra)}", extra)


def require(module: str, extra: str, feature: str) -> ModuleType:
    """`module`, imported; `MissingExtra` when it (or a module it needs) is not installed.

    A module of the dependency that is there but fails to import for another reason (a
    version too old for a submodule we need) is missing as far as `feature` is concerned."""
    try:
        return import_module(module)
    except ImportError as exc:
        raise missing(extra, feature) from exc
