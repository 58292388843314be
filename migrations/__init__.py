"""Alembic migrations of the sessionstore schema (installed as `sessionstore._migrations`)."""
