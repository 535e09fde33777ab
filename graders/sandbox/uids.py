"""The sandbox uids a pool runs as, held across every pool on the host.

Two pools on one host (two replicas of the service, a test run beside a
service) would otherwise share uids, and with them RLIMIT_NPROC. Each uid has a
lock file; a pool holds the locks of its range while it is started.
"""

from __future__ import annotations

import fcntl
import os
import tempfile

from arbiter.graders.sandbox.errors import SandboxError

__all__ = ["DEFAULT_UID_BASE", "UidRange"]

#: Where automatically placed uid ranges start.
DEFAULT_UID_BASE = 61000
#: How far above DEFAULT_UID_BASE a free range is looked for.
_UID_SEARCH = 1 << 16
#: One lock file per sandbox uid, shared by every pool on the host.
_UID_LOCKS = os.path.join(
    "/run/lock" if os.path.isdir("/run/lock") else tempfile.gettempdir(), "arbiter-sandbox-uids"
)


class UidRange:
    """The sandbox uids one pool holds, so that no other pool on the host runs as them.

    Two pools on one host (two replicas of the service, a test run beside a
    service) would otherwise share uids, and with them RLIMIT_NPROC: a fork bomb
    in one could keep the other's runs from starting. Each uid has a lock file;
    a pool holds an ``flock`` on each of its uids for as long as it is open
    (the kernel drops it when the process dies). Only a root pool drops to
    these uids, so only a root pool takes them.
    """

    def __init__(self) -> None:
        self.base = DEFAULT_UID_BASE
        self._held: list[int] = []

    def take(self, wanted: int | None, count: int) -> int:
        """Hold ``count`` uids from ``wanted`` (or the first free range); return the base."""
        if os.getuid() != 0:
            self.base = DEFAULT_UID_BASE if wanted is None else wanted
            return self.base
        os.makedirs(_UID_LOCKS, mode=0o755, exist_ok=True)
        bases = (
            [wanted]
            if wanted is not None
            else range(DEFAULT_UID_BASE, DEFAULT_UID_BASE + _UID_SEARCH, count)
        )
        for base in bases:
            if self._hold(base, count):
                self.base = base
                return base
        if wanted is not None:
            last = wanted + count - 1
            raise SandboxError(f"sandbox uids {wanted}-{last} are held by another pool")
        raise SandboxError("no free range of sandbox uids on this host")

    def _hold(self, base: int, count: int) -> bool:
        for uid in range(base, base + count):
            fd = os.open(os.path.join(_UID_LOCKS, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                self.release()
                return False
            self._held.append(fd)
        return True

    def release(self) -> None:
        """Let other pools have the uids again."""
        for fd in self._held:
            os.close(fd)
        self._held.clear()
