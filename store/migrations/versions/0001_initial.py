"""Initial tables: API keys, rubric versions, requests and the reward log.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create the tables."""
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(16), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked_at", sa.Float, nullable=True),
    )
    op.create_table(
        "rubric_versions",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("origin", sa.String(1024), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_rubric_versions_name_version", "rubric_versions", ["name", "version"])
    op.create_table(
        "requests",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("client", sa.String(128), nullable=False),
        sa.Column("idempotency_key", sa.String(256), nullable=True),
        sa.Column("endpoint", sa.String(64), nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("n_samples", sa.Integer, nullable=False),
        sa.Column("envelope", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("client", "idempotency_key", name="uq_requests_client_idempotency_key"),
    )
    op.create_table(
        "rewards",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.String(32), sa.ForeignKey("requests.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("sample_id", sa.String(512), nullable=False),
        sa.Column("group_id", sa.String(512), nullable=True),
        sa.Column("rubric_name", sa.String(128), nullable=False),
        sa.Column("rubric_version", sa.Integer, nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("reward", sa.Float, nullable=True),
        sa.Column("raw_reward", sa.Float, nullable=True),
        sa.Column("abstained", sa.Boolean, nullable=False),
        sa.Column("record", sa.Text, nullable=False),
        sa.Column("sample", sa.Text, nullable=True),
        sa.Column("sample_sha256", sa.String(64), nullable=False),
        sa.Column("latency_s", sa.Float, nullable=False),
        sa.Column("client", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("request_id", "position", name="uq_rewards_request_position"),
    )
    op.create_index("ix_rewards_rubric_created", "rewards", ["rubric_sha256", "created_at"])
    op.create_index("ix_rewards_sample_id", "rewards", ["sample_id"])
    op.create_index("ix_rewards_created", "rewards", ["created_at"])


def downgrade() -> None:
    """Drop the tables."""
    op.drop_table("rewards")
    op.drop_table("requests")
    op.drop_index("ix_rubric_versions_name_version", table_name="rubric_versions")
    op.drop_table("rubric_versions")
    op.drop_table("api_keys")
