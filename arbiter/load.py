"""A CPU load generator: proof that a reward does not move with the machine's load.

``arbiter audit --under-load N`` and ``bench/determinism.py`` grade while
``N x cores`` processes spin on pure Python loops, as a training node's data
loaders and rollout engines would keep its CPUs busy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cpu_load"]


@contextmanager
def cpu_load(level: float) -> Iterator[int]:
    """Keep ``level x cores`` busy processes running inside the block; yield how many.

    They run at normal priority, each in a session of its own, are killed when
    the block ends (however it ends), and die with this process (they read
    stdin, which closes with it).
    """
    count = round(level * (os.cpu_count() or 1))
    burners = []
    try:
        for _ in range(count):
            burners.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        "import sys, threading\n"
                        "threading.Thread(target=lambda: (sys.stdin.read(), __import__('os')"
                        "._exit(0)), daemon=True).start()\n"
                        "while True:\n    pass\n",
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    # Sessions of their own, as a node's other work runs: where the
                    # kernel groups sessions (sched_autogroup), each weighs as one.
                    start_new_session=True,
                )
            )
        time.sleep(0.5)  # every burner on the run queue before the work starts
        yield count
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()
            if burner.stdin is not None:
                burner.stdin.close()
