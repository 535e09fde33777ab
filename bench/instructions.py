"""Instructions a sample, counted by cachegrind: what wall-clock rates miss on a busy machine.

Run: ``.venv/bin/python -m bench.instructions [--against PATH] [--batches N]``.

``bench.api``'s rates move by a third from one run to the next when other
tenants share the machine; the number of instructions a sample costs does not.
Two workloads, both on ``bench.api``'s batches (256 samples, the
efficiency-only rubric):

- **floor**: ``score_samples`` in-process, as ``bench.api``'s floor;
- **route**: ``POST /v1/rewards`` through the ASGI app (authentication, body
  limits, validation, grading, the SQLite log, the response), without a socket.

Each runs under ``valgrind --tool=cachegrind`` twice, with 2 and with 2 + N
batches (N = 24 by default: the route's drift monitor freezes its references,
a one-time cost, within the first dozen); the difference over N x 256 samples
is the cost a sample, free of start-up and imports. ``--against PATH``
measures another checkout (a ``git worktree`` of an older commit, say) in the
same run with this environment, and prints our count over its count.
Instructions are not time (cache misses and system calls are not in them), so
a change near the ratio 1 still wants ``bench.api`` on a quiet machine; a
change of a few percent in either direction shows here first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = ("floor", "route")


def floor(batches: int) -> None:
    """Score ``batches`` batches in-process, cycling over four of bench.api's, validated first."""
    from arbiter.graders.types import Sample
    from arbiter.rubrics.loader import load_rubric
    from arbiter.rubrics.score import score_samples
    from bench.api import make_batches

    rubric = load_rubric(Path("rubrics/library/efficiency.yaml"))
    decoded = [json.loads(body)["samples"] for body in make_batches(4)]
    samples = [[Sample.model_validate(s) for s in batch] for batch in decoded]

    async def go() -> None:
        for b in range(batches):
            await score_samples(rubric, samples[b % len(samples)])

    asyncio.run(go())


def route(batches: int) -> None:
    """POST ``batches`` of bench.api's bodies to /v1/rewards through the ASGI app."""
    import logging

    import httpx

    tmp = tempfile.mkdtemp()
    db = f"sqlite:///{tmp}/bench.db"
    os.environ.update(
        ARBITER_DATABASE_URL=db, ARBITER_LOG_LEVEL="WARNING", ARBITER_RUBRIC_RELOAD_INTERVAL_S="0"
    )
    from arbiter.api.app import create_app
    from arbiter.store.db import Store
    from bench.api import make_batches

    logging.disable(logging.WARNING)
    store = Store(db)
    store.migrate()
    _, key = store.create_key("bench", "trainer")
    store.close()
    bodies = make_batches(batches)
    app = create_app()

    async def go() -> None:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
            async with httpx.AsyncClient(
                transport=transport, base_url="http://arbiter", headers=headers
            ) as http:
                for body in bodies:
                    response = await http.post("/v1/rewards", content=body)
                    if response.status_code != 200:
                        raise SystemExit(f"/v1/rewards answered {response.status_code}")

    asyncio.run(go())
    shutil.rmtree(tmp, ignore_errors=True)


def count(tree: Path, workload: str, batches: int) -> int:
    """Return the instructions of one child run in ``tree`` under cachegrind."""
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            workload,
            str(batches),
        ],
        cwd=tree,
        # One BLAS thread: idle BLAS threads spin, and cachegrind would count the spinning.
        env={**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"{workload} in {tree} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def per_sample(tree: Path, workload: str, batches: int) -> float:
    """Return instructions a sample: (2 + batches runs) minus (2 runs), over the samples.

    The two runs go at once: instructions do not depend on what else runs.
    """
    from bench.api import BATCH

    with ThreadPoolExecutor(2) as pool:
        short, long = pool.map(lambda n: count(tree, workload, n), (2, 2 + batches))
    return (long - short) / (batches * BATCH)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout to measure the same way")
    parser.add_argument("--batches", type=int, default=24, help="batches of 256 in the difference")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "BATCHES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        # Run by path: the tree's modules, not this folder's (bench/api.py is not api/).
        if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
            del sys.path[0]
        workload, batches = args.child
        {"floor": floor, "route": route}[workload](int(batches))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    trees = [("ours", REPO)] + ([("baseline", args.against.resolve())] if args.against else [])
    for workload in WORKLOADS:
        counts = {name: per_sample(tree, workload, args.batches) for name, tree in trees}
        line = "  ".join(f"{name} {value:,.0f}" for name, value in counts.items())
        print(f"{workload:>5}: instructions a sample: {line}", flush=True)
        if "baseline" in counts:
            ratio = counts["ours"] / counts["baseline"]
            print(f"{workload:>5}: ratio ours / baseline: {ratio:.3f}")


if __name__ == "__main__":
    main()
