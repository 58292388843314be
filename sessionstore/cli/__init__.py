"""The `sessionstore` console script (see `app` for the group; one module per command group,
imported when one of its commands runs: `app.COMMANDS`)."""

from .app import main

__all__ = ["main"]
