"""Storage (SQLAlchemy, on SQLite or PostgreSQL).

Logged requests and rewards, idempotency claims, review items and labels,
regression cases, drift alerts and snapshots, and their migrations.
"""

#: The public modules: this package re-exports nothing, so importing it stays cheap.
__all__ = [
    "db",
    "drift_log",
    "idempotency",
    "migrations",
    "regressions",
    "review",
    "reward_reads",
    "tables",
]
