"""What the adapters share: turning trainer rows into samples, and reading the rubric."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import orjson

from arbiter.client import ArbiterClient, AsyncArbiterClient

__all__ = ["client_from_env", "fetch_rubric", "parse_label", "text_of"]


def text_of(value: Any) -> str:
    """Return the text of a completion: a string, or the last message's content."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        content = value[-1].get("content")
        return content if isinstance(content, str) else ""
    return str(value)


def parse_label(label: Any) -> dict[str, Any]:
    """Read a ground-truth label: a task spec (dict or JSON) becomes ``task``, else ``labels``."""
    parsed = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = orjson.loads(label)
        except orjson.JSONDecodeError:
            parsed = label
    if isinstance(parsed, dict) and "task" in parsed:
        return {
            "task": parsed["task"],
            "labels": {k: v for k, v in parsed.items() if k != "task"} or None,
        }
    if isinstance(parsed, dict) and "kind" in parsed and "tests" in parsed:
        return {"task": parsed}
    return {"labels": {"label": label}} if label is not None else {}


def sample_id(prefix: str, *parts: str) -> str:
    """Return a stable id for a row from its content."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:20]
    return f"{prefix}-{digest}"


def fetch_rubric(client: ArbiterClient, name: str) -> dict[str, Any]:
    """Return the resolved form of a rubric's latest version, as the service has it.

    The service resolves it (it knows every grader, plugins included); the
    trainer side needs only component names, weights and penalties.
    """
    resolved: dict[str, Any] = client.rubric(name)["resolved"]
    return resolved


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"set {name} to use this adapter")
    return value


def client_from_env() -> tuple[ArbiterClient, str]:
    """Build a client from ARBITER_URL, ARBITER_API_KEY and ARBITER_RUBRIC."""
    return ArbiterClient(_env("ARBITER_URL"), os.environ.get("ARBITER_API_KEY")), _env(
        "ARBITER_RUBRIC"
    )


def async_client_from_env() -> tuple[AsyncArbiterClient, str]:
    """Build an async client from ARBITER_URL, ARBITER_API_KEY and ARBITER_RUBRIC."""
    client = AsyncArbiterClient(_env("ARBITER_URL"), os.environ.get("ARBITER_API_KEY"))
    return client, _env("ARBITER_RUBRIC")
