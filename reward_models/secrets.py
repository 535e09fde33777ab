"""Secrets of declared models: read from the environment variable named, never held elsewhere.

A models file names the variable (``api_key_env: JUDGE_API_KEY``), never the
key. The key is read when a backend is built, goes into that backend's
request headers and nowhere else: not into a spec, a log line, an error
message, ``/readyz`` or a ``show`` output. URLs are shown with any password
they carry replaced (``http://user:***@host``), since a failure's message is
logged with the reward it failed.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

from arbiter.reward_models.errors import ModelUnavailableError, SecretMissingError

__all__ = ["ENV_NAME_PATTERN", "read_secret", "redact_url"]

#: What an environment variable's name looks like (and a key, usually, does not).
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


def read_secret(variable: str | None) -> str | None:
    """Return the value of environment variable ``variable`` (``None`` when none is named).

    Raises:
        SecretMissingError: the variable is named but not set, or empty (the
            message names the variable, never a value).
        ModelUnavailableError: ``variable`` is not a variable's name.
    """
    if variable is None:
        return None
    if not re.fullmatch(ENV_NAME_PATTERN, variable):
        raise ModelUnavailableError("api_key_env must name an environment variable")
    value = os.environ.get(variable)
    if not value:
        raise SecretMissingError(f"environment variable {variable} is not set (api_key_env)")
    return value


def redact_url(url: str) -> str:
    """Return ``url`` with the password of its user info replaced by ``***`` (pure)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
