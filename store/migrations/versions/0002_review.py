"""Human review: the review queue's items and their labels.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create the review tables."""
    op.create_table(
        "review_items",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("reward_id", _ROW_ID, sa.ForeignKey("rewards.id"), nullable=False, unique=True),
        sa.Column("sample_id", sa.String(512), nullable=False),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("inclusion_probability", sa.Float, nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("required_reviews", sa.Integer, nullable=False),
        sa.Column("label_count", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("lease_token", sa.String(32), nullable=True),
        sa.Column("lease_expires_at", sa.Float, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index(
        "ix_review_items_status_rubric", "review_items", ["status", "rubric_name", "id"]
    )
    op.create_table(
        "review_labels",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("item_id", _ROW_ID, sa.ForeignKey("review_items.id"), nullable=False),
        sa.Column("reviewer", sa.String(128), nullable=False),
        sa.Column("verdicts", sa.Text, nullable=False),
        sa.Column("overall_score", sa.Float, nullable=True),
        sa.Column("hack_types", sa.Text, nullable=False),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("item_id", "reviewer", name="uq_review_labels_item_reviewer"),
    )


def downgrade() -> None:
    """Drop the review tables."""
    op.drop_table("review_labels")
    op.drop_index("ix_review_items_status_rubric", table_name="review_items")
    op.drop_table("review_items")
