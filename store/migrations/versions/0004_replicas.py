"""Several API replicas on one store: idempotency claims, the drift log's cursor, resets.

Also widens drift alert ids, which name their stream (with a rubric's sha256).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create the claims and resets tables; give the drift state a log cursor."""
    op.create_table(
        "idempotency_claims",
        sa.Column("client", sa.String(128), primary_key=True),
        sa.Column("idempotency_key", sa.String(256), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("claimed_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_table(
        "drift_resets",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("component", sa.String(128), nullable=False),
        sa.Column("grader_version", sa.String(64), nullable=False),
        sa.Column("requested_at", sa.Float, nullable=False),
        sa.Column("applied_at", sa.Float, nullable=True),
    )
    with op.batch_alter_table("drift_state") as batch:
        batch.add_column(sa.Column("log_cursor", sa.Text, nullable=True))
    # An alert's id names its stream, and the rubric-level stream's version is
    # the rubric's sha256: 64 characters did not hold it (SQLite never checked).
    with op.batch_alter_table("drift_alerts") as batch:
        batch.alter_column("id", type_=sa.String(512), existing_type=sa.String(64))


def downgrade() -> None:
    """Drop what the upgrade added."""
    with op.batch_alter_table("drift_alerts") as batch:
        batch.alter_column("id", type_=sa.String(64), existing_type=sa.String(512))
    with op.batch_alter_table("drift_state") as batch:
        batch.drop_column("log_cursor")
    op.drop_table("drift_resets")
    op.drop_table("idempotency_claims")
