"""Storage (SQLAlchemy, on SQLite or PostgreSQL).

Logged requests and rewards, idempotency claims, review items and labels,
drift alerts and snapshots, and their migrations.
"""
