"""The `sessionstore` console script (see `app` for the group; one module per command group)."""

from . import audit, changing, db, imports, reading, viewer  # noqa: F401  (each registers its commands on `main`)
from .app import main

__all__ = ["main"]
