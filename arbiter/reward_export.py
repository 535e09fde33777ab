"""``arbiter rewards export``: the logged rewards as JSON Lines, one reward a line, log order.

Each line is the reward exactly as the service returned it, under ``reward``,
beside where it sits in the log (``log_id``, ``request_id``, ``position``), its
sample id, its rubric and when it was logged (ISO 8601, UTC): the same shape
``GET /v1/rewards`` answers, so a file and an API page read alike. The store is
only read.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import IO, Any

from arbiter.store.reward_reads import LoggedRow, RewardReader

__all__ = ["export_rewards", "exported_line"]


def exported_line(row: LoggedRow) -> dict[str, Any]:
    """Return one logged reward as an export line."""
    return {
        "log_id": row.id,
        "request_id": row.request_id,
        "position": row.position,
        "sample_id": row.sample_id,
        "rubric": {
            "name": row.rubric_name,
            "version": row.rubric_version,
            "sha256": row.rubric_sha256,
        },
        "logged_at": datetime.fromtimestamp(row.created_at, UTC).isoformat().replace("+00:00", "Z"),
        "reward": row.record,
    }


def export_rewards(reader: RewardReader, sink: IO[bytes], **filters: Any) -> int:
    """Write every matching logged reward to ``sink`` as JSON Lines; return how many.

    Args:
        reader: The store's reward reader.
        sink: Where the lines go (binary).
        **filters: ``client``, ``sample_id``, ``rubric``, ``since``, ``until`` (Unix seconds),
            as :meth:`arbiter.store.reward_reads.RewardReader.find` takes them.
    """
    client = filters.pop("client", None)
    count = 0
    for row in reader.scan(client, **filters):
        sink.write(json.dumps(exported_line(row), sort_keys=True).encode("utf-8") + b"\n")
        count += 1
    return count
