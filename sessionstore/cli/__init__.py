"""The `sessionstore` console script (see `app` for the group; one module per command group)."""

# Each module registers its commands on `main`.
from . import audit, changing, db, imports, mcp, reading, replay, search, viewer  # noqa: F401
from .app import main

__all__ = ["main"]
