"""Which confinement layers this host provides, measured by starting a real zygote.

The zygote applies every layer and reports each as ``active`` or
``unavailable: <why>``; nothing is assumed from kernel versions. The future
``arbiter sandbox check`` prints :func:`check_layers`, and a service that must
not run with less calls :func:`require_layers` at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from arbiter.graders.sandbox.pool import PoolConfig, SandboxPool

__all__ = ["LAYERS", "MissingLayersError", "check_layers", "require_layers"]

#: Every layer a zygote reports on.
LAYERS: tuple[str, ...] = (
    "namespaces",
    "run_dir_limits",
    "unprivileged_uid",
    "no_new_privs",
    "landlock",
    "signal_scoping",
    "seccomp",
)


class MissingLayersError(RuntimeError):
    """Layers that a setting or rubric requires are not active on this host."""


def check_layers(config: PoolConfig | None = None) -> dict[str, str]:
    """Start a one-slot pool and return layer name → ``active`` or why it is unavailable."""
    base = config or PoolConfig()
    pool = SandboxPool(
        PoolConfig(
            slots=1,
            uid_base=base.uid_base,
            preload=(),
            scratch_root=base.scratch_root,
            pytest=False,
        )
    )
    try:
        reported = pool.layers()
    finally:
        pool.close()
    out = {name: reported.get(name, "unavailable: not attempted") for name in LAYERS}
    if "landlock_abi" in reported:
        out["landlock_abi"] = reported["landlock_abi"]
    return out


def require_layers(layers: Mapping[str, str], required: Iterable[str]) -> None:
    """Raise :class:`MissingLayersError` unless every required layer is active."""
    missing = {
        name: layers.get(name, "unknown layer")
        for name in required
        if not layers.get(name, "").startswith("active")
    }
    if missing:
        lines = "; ".join(f"{k}: {v}" for k, v in sorted(missing.items()))
        raise MissingLayersError(f"required sandbox layers are not active: {lines}")
