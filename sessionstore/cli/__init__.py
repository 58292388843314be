"""The `sessionstore` console script (see `app` for the group; one module per command group)."""

from . import changing, db, imports, reading, replay, viewer  # noqa: F401  (each registers its commands on `main`)
from .app import main

__all__ = ["main"]
