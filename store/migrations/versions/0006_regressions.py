"""Regression cases: confirmed hacks kept as cases, and the record of forced publishes.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create the regression cases and the overrides of their gate."""
    op.create_table(
        "regression_cases",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("item_id", _ROW_ID, sa.ForeignKey("review_items.id"), nullable=False),
        sa.Column("label_id", _ROW_ID, sa.ForeignKey("review_labels.id"), nullable=False),
        sa.Column("label_version", sa.Integer, nullable=False),
        sa.Column("reviewer", sa.String(128), nullable=False),
        sa.Column("sample_id", sa.String(512), nullable=False),
        sa.Column("sample", sa.Text, nullable=True),
        sa.Column("hack_types", sa.Text, nullable=False),
        sa.Column("flagged_types", sa.Text, nullable=False),
        sa.Column("fooled", sa.Text, nullable=False),
        sa.Column("reward", sa.Float, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=True),
        sa.Column("dismissed_by", sa.String(128), nullable=True),
        sa.Column("dismissed_at", sa.Float, nullable=True),
        sa.Column("dismiss_reason", sa.Text, nullable=True),
        sa.UniqueConstraint("item_id", "reviewer", name="uq_regression_cases_item_reviewer"),
    )
    op.create_index(
        "ix_regression_cases_rubric_status", "regression_cases", ["rubric_name", "status", "id"]
    )
    op.create_table(
        "regression_overrides",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("rubric_version", sa.Integer, nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("forced_by", sa.String(128), nullable=False),
        sa.Column("forced_by_name", sa.String(128), nullable=False),
        sa.Column("forced_at", sa.Float, nullable=False),
        sa.Column("case_ids", sa.Text, nullable=False),
        sa.Column("cases", sa.Text, nullable=False),
        sa.Column("ceiling", sa.Float, nullable=True),
    )
    op.create_index("ix_regression_overrides_rubric", "regression_overrides", ["rubric_name", "id"])


def downgrade() -> None:
    """Drop what the upgrade added."""
    op.drop_index("ix_regression_overrides_rubric", table_name="regression_overrides")
    op.drop_table("regression_overrides")
    op.drop_index("ix_regression_cases_rubric_status", table_name="regression_cases")
    op.drop_table("regression_cases")
