"""Review: label versions (a reviewer edits a submitted label) and per-reviewer skips.

Drift: a record of each reset, with who asked for it and why; silences with an expiry.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Version review labels, keep each version, record skips and drift resets."""
    with op.batch_alter_table("review_labels") as batch:
        batch.add_column(sa.Column("version", sa.Integer, nullable=False, server_default="1"))
        batch.add_column(sa.Column("updated_at", sa.Float, nullable=True))
    op.create_table(
        "review_label_versions",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("label_id", _ROW_ID, sa.ForeignKey("review_labels.id"), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("verdicts", sa.Text, nullable=False),
        sa.Column("overall_score", sa.Float, nullable=True),
        sa.Column("hack_types", sa.Text, nullable=False),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("label_id", "version", name="uq_review_label_versions_label_version"),
    )
    # Labels stored before this revision are their own first version.
    op.execute(
        "INSERT INTO review_label_versions "
        "(label_id, version, verdicts, overall_score, hack_types, comment, created_at) "
        "SELECT id, 1, verdicts, overall_score, hack_types, comment, created_at "
        "FROM review_labels"
    )
    op.create_table(
        "review_skips",
        sa.Column("item_id", _ROW_ID, sa.ForeignKey("review_items.id"), primary_key=True),
        sa.Column("reviewer", sa.String(128), primary_key=True),
        sa.Column("skipped_at", sa.Float, nullable=False),
    )
    op.create_table(
        "drift_reset_log",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("component", sa.String(128), nullable=True),
        sa.Column("grader_version", sa.String(64), nullable=True),
        sa.Column("requested_by", sa.String(256), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("closed_alerts", sa.Integer, nullable=False),
        sa.Column("reset_at", sa.Float, nullable=False),
    )
    op.create_table(
        "drift_silences",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("component", sa.String(128), nullable=True),
        sa.Column("requested_by", sa.String(256), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("until", sa.Float, nullable=False),
        sa.Column("lifted_at", sa.Float, nullable=True),
    )


def downgrade() -> None:
    """Drop what the upgrade added."""
    op.drop_table("drift_silences")
    op.drop_table("drift_reset_log")
    op.drop_table("review_skips")
    op.drop_table("review_label_versions")
    with op.batch_alter_table("review_labels") as batch:
        batch.drop_column("updated_at")
        batch.drop_column("version")
