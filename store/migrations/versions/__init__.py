"""Alembic revisions, one module each."""
