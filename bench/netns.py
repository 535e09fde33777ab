"""Run a command in a fresh network namespace with only loopback up.

Ray binds to the host's interface address even when told 127.0.0.1; inside a
namespace whose only interface is ``lo`` it has no other address to take, so a
test or benchmark cluster never listens beyond this host. As root ``unshare
--net`` is enough; an ordinary user also maps itself to root in a user
namespace (``--map-root-user``).
"""

from __future__ import annotations

import os
import shutil

__all__ = ["netns_available", "netns_command"]


def netns_available() -> bool:
    """Whether ``unshare`` and ``ip`` are on PATH (the namespace itself may still be refused)."""
    return shutil.which("unshare") is not None and shutil.which("ip") is not None


def netns_command(argv: list[str]) -> list[str]:
    """Return ``argv`` wrapped to run in a new network namespace, ``lo`` brought up first."""
    user = [] if os.getuid() == 0 else ["--map-root-user"]
    script = 'ip link set lo up && exec "$@"'
    return ["unshare", "--net", *user, "--", "sh", "-c", script, "sh", *argv]
