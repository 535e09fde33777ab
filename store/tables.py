"""The store's tables (SQLAlchemy Core); Alembic migrations create and evolve them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "api_keys",
    "drift_alerts",
    "drift_reset_log",
    "drift_resets",
    "drift_silences",
    "drift_state",
    "idempotency_claims",
    "metadata",
    "regression_cases",
    "regression_overrides",
    "requests",
    "review_items",
    "review_label_versions",
    "review_labels",
    "review_skips",
    "rewards",
    "rubric_versions",
]

metadata = MetaData()

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a bigint.
_ROW_ID = BigInteger().with_variant(Integer(), "sqlite")

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("role", String(16), nullable=False),
    # sha256 of the whole key: keys are 256-bit random, so a fast hash is enough;
    # the key itself is shown once at creation and never stored.
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
)

rubric_versions = Table(
    "rubric_versions",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("origin", String(1024), nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_rubric_versions_name_version", "name", "version"),
)

requests = Table(
    "requests",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("client", String(128), nullable=False),
    Column("idempotency_key", String(256), nullable=True),
    Column("endpoint", String(64), nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    Column("n_samples", Integer, nullable=False),
    # The response minus its rewards; rewards are rebuilt from their rows.
    Column("envelope", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("client", "idempotency_key", name="uq_requests_client_idempotency_key"),
)

rewards = Table(
    "rewards",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("request_id", String(32), ForeignKey("requests.id"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("sample_id", String(512), nullable=False),
    Column("group_id", String(512), nullable=True),
    Column("rubric_name", String(128), nullable=False),
    Column("rubric_version", Integer, nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    Column("reward", Float, nullable=True),
    Column("raw_reward", Float, nullable=True),
    Column("abstained", Boolean, nullable=False),
    # The reward exactly as returned to the client (components, penalties,
    # failures, grader versions), so a replay or an idempotent repeat is exact.
    Column("record", Text, nullable=False),
    # The sample as received, or NULL when the store keeps hashes only.
    Column("sample", Text, nullable=True),
    Column("sample_sha256", String(64), nullable=False),
    Column("latency_s", Float, nullable=False),
    Column("client", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("request_id", "position", name="uq_rewards_request_position"),
    Index("ix_rewards_rubric_created", "rubric_sha256", "created_at"),
    Index("ix_rewards_sample_id", "sample_id"),
    Index("ix_rewards_created", "created_at"),
)

# -- human review (revision 0002) -------------------------------------------------

review_items = Table(
    "review_items",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("reward_id", _ROW_ID, ForeignKey("rewards.id"), nullable=False, unique=True),
    Column("sample_id", String(512), nullable=False),
    Column("rubric_name", String(128), nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    # The probability this item had of being sampled: agreement statistics weight
    # each label by its inverse, so targeted sampling does not bias them.
    Column("inclusion_probability", Float, nullable=False),
    Column("reason", String(64), nullable=False),
    # "open" until it has ``required_reviews`` labels, then "done".
    Column("status", String(16), nullable=False),
    Column("required_reviews", Integer, nullable=False),
    Column("label_count", Integer, nullable=False),
    # A lease, not a lock: an expired lease returns the item to the queue.
    Column("lease_owner", String(128), nullable=True),
    Column("lease_token", String(32), nullable=True),
    Column("lease_expires_at", Float, nullable=True),
    Column("created_at", Float, nullable=False),
    Index("ix_review_items_status_rubric", "status", "rubric_name", "id"),
)

review_labels = Table(
    "review_labels",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("item_id", _ROW_ID, ForeignKey("review_items.id"), nullable=False),
    Column("reviewer", String(128), nullable=False),
    # JSON: component name -> "pass" | "fail".
    Column("verdicts", Text, nullable=False),
    Column("overall_score", Float, nullable=True),
    # JSON list of graders.types.ViolationType values.
    Column("hack_types", Text, nullable=False),
    Column("comment", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    # An edit replaces the label here (agreement reads the latest) and is kept,
    # with every earlier version, in review_label_versions (revision 0005).
    Column("version", Integer, nullable=False, server_default="1"),
    Column("updated_at", Float, nullable=True),
    # Double review means two *different* reviewers.
    UniqueConstraint("item_id", "reviewer", name="uq_review_labels_item_reviewer"),
)

review_label_versions = Table(
    "review_label_versions",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("label_id", _ROW_ID, ForeignKey("review_labels.id"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("verdicts", Text, nullable=False),
    Column("overall_score", Float, nullable=True),
    Column("hack_types", Text, nullable=False),
    Column("comment", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("label_id", "version", name="uq_review_label_versions_label_version"),
)

# A reviewer's skips: their claims take the items they skipped last, oldest skip
# first, so a skip moves on instead of handing the same item back.
review_skips = Table(
    "review_skips",
    metadata,
    Column("item_id", _ROW_ID, ForeignKey("review_items.id"), primary_key=True),
    Column("reviewer", String(128), primary_key=True),
    Column("skipped_at", Float, nullable=False),
)

drift_alerts = Table(
    "drift_alerts",
    metadata,
    # "<rubric>/<component>@<grader version>#<detector>#<window>" (revision 0004 widened it).
    Column("id", String(512), primary_key=True),
    Column("rubric_name", String(128), nullable=False),
    Column("component", String(128), nullable=False),
    Column("grader_version", String(64), nullable=False),
    Column("detector", String(64), nullable=False),
    Column("window", Integer, nullable=False),
    Column("statistic", Float, nullable=False),
    Column("threshold", Float, nullable=False),
    Column("message", Text, nullable=False),
    # JSON: the detector's evidence and the reference it compared against.
    Column("evidence", Text, nullable=False),
    Column("opened_at", Float, nullable=False),
    Column("closed_at", Float, nullable=True),
    Index("ix_drift_alerts_open", "closed_at", "rubric_name"),
)

# The drift monitor's streams (references, windows, CUSUM sums), so a restart
# resumes monitoring instead of warming up again. One row per monitor.
drift_state = Table(
    "drift_state",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("state", Text, nullable=False),
    Column("saved_at", Float, nullable=False),
    # JSON: how far into the reward log the state has read, when it follows the
    # log (several replicas); NULL for a monitor fed in-process.
    Column("log_cursor", Text, nullable=True),
)

# Who reset which streams and why, one row per reset (revision 0005): the record
# on-call reads back, apart from drift_resets, the queue the shared monitor drains.
drift_reset_log = Table(
    "drift_reset_log",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("rubric_name", String(128), nullable=False),
    Column("component", String(128), nullable=True),
    Column("grader_version", String(64), nullable=True),
    Column("requested_by", String(256), nullable=False),
    Column("reason", Text, nullable=False),
    Column("closed_alerts", Integer, nullable=False),
    Column("reset_at", Float, nullable=False),
)

# Silences (revision 0005): until ``until`` (or lifted), a rubric's (or one
# component's) open alerts flag no reward and page no one; the detectors go on
# against the same reference, unlike a reset.
drift_silences = Table(
    "drift_silences",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("rubric_name", String(128), nullable=False),
    Column("component", String(128), nullable=True),
    Column("requested_by", String(256), nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("until", Float, nullable=False),
    Column("lifted_at", Float, nullable=True),
)

# -- several replicas on one store (revision 0004) ----------------------------------

# A request with an Idempotency-Key is claimed here before it is graded, so that
# of two replicas sent the same key one grades and the other waits for its
# stored response. The row goes when the request is logged or fails.
idempotency_claims = Table(
    "idempotency_claims",
    metadata,
    Column("client", String(128), primary_key=True),
    Column("idempotency_key", String(256), primary_key=True),
    Column("owner", String(64), nullable=False),
    Column("claimed_at", Float, nullable=False),
    # Past this the owner is presumed dead and another replica may take over.
    Column("expires_at", Float, nullable=False),
)

# Accepted changes (POST /v1/drift/reset) waiting for the replica that runs the
# drift monitor to forget the stream's reference.
drift_resets = Table(
    "drift_resets",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("rubric_name", String(128), nullable=False),
    Column("component", String(128), nullable=False),
    Column("grader_version", String(64), nullable=False),
    Column("requested_at", Float, nullable=False),
    Column("applied_at", Float, nullable=True),
)

# -- regression cases (revision 0006) -----------------------------------------------

# A review label that names a hack, or fails a component its grader passed, makes
# its reviewer's case for that item: the sample as logged and the reward it got,
# graded again under every new version of the rubric before it is published.
regression_cases = Table(
    "regression_cases",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("rubric_name", String(128), nullable=False),
    # The rubric version the reward was made under.
    Column("rubric_sha256", String(64), nullable=False),
    Column("item_id", _ROW_ID, ForeignKey("review_items.id"), nullable=False),
    Column("label_id", _ROW_ID, ForeignKey("review_labels.id"), nullable=False),
    # The label's version that last set the case's marks.
    Column("label_version", Integer, nullable=False),
    Column("reviewer", String(128), nullable=False),
    Column("sample_id", String(512), nullable=False),
    # The sample as logged (task, response, metrics, trajectory), or NULL when the
    # store keeps hashes only: such a case is listed but cannot be graded again.
    Column("sample", Text, nullable=True),
    # JSON lists: the hack types the reviewer ticked, those of them the logged
    # reward's violations flagged, and the components the reviewer found fooled.
    Column("hack_types", Text, nullable=False),
    Column("flagged_types", Text, nullable=False),
    Column("fooled", Text, nullable=False),
    Column("reward", Float, nullable=True),
    # "open", "dismissed" (with who, when and why) or "retracted" (the label no
    # longer marks a hack).
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=True),
    Column("dismissed_by", String(128), nullable=True),
    Column("dismissed_at", Float, nullable=True),
    Column("dismiss_reason", Text, nullable=True),
    UniqueConstraint("item_id", "reviewer", name="uq_regression_cases_item_reviewer"),
    Index("ix_regression_cases_rubric_status", "rubric_name", "status", "id"),
)

# An admin published a rubric version that lets open cases through.
regression_overrides = Table(
    "regression_overrides",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("rubric_name", String(128), nullable=False),
    Column("rubric_version", Integer, nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    # The admin key's id, and its name as it was then.
    Column("forced_by", String(128), nullable=False),
    Column("forced_by_name", String(128), nullable=False),
    Column("forced_at", Float, nullable=False),
    # JSON: the ids of the cases let through, and each one's grading under the version.
    Column("case_ids", Text, nullable=False),
    Column("cases", Text, nullable=False),
    Column("ceiling", Float, nullable=True),
    Index("ix_regression_overrides_rubric", "rubric_name", "id"),
)
