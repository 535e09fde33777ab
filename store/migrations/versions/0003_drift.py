"""Drift monitoring: alerts with their evidence, and the monitor's saved state.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the drift tables."""
    op.create_table(
        "drift_alerts",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("component", sa.String(128), nullable=False),
        sa.Column("grader_version", sa.String(64), nullable=False),
        sa.Column("detector", sa.String(64), nullable=False),
        sa.Column("window", sa.Integer, nullable=False),
        sa.Column("statistic", sa.Float, nullable=False),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("opened_at", sa.Float, nullable=False),
        sa.Column("closed_at", sa.Float, nullable=True),
    )
    op.create_index("ix_drift_alerts_open", "drift_alerts", ["closed_at", "rubric_name"])
    op.create_table(
        "drift_state",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("saved_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    """Drop the drift tables."""
    op.drop_index("ix_drift_alerts_open", table_name="drift_alerts")
    op.drop_table("drift_alerts")
    op.drop_table("drift_state")
