"""Storage: the SQLAlchemy Core tables, the engine (URL, SQLite pragmas), and Alembic upgrades.

Nothing here knows about sessions' meaning; `store.py` is the only module that opens
transactions on top of it.
"""

from .engine import DEFAULT_URL, make_engine, resolve_url
from .migrate import current_revision, head_revision, upgrade
from .tables import events, metadata, sessions

__all__ = ["DEFAULT_URL", "current_revision", "events", "head_revision", "make_engine", "metadata",
           "resolve_url", "sessions", "upgrade"]
