"""Reward-model batching on CPU at one model size: an alias of :mod:`bench.judge`.

:mod:`bench.judge` runs the same comparison — (a) one at a time, (b) arrival-order
batches of 32, (c) the batcher — at three model sizes; this keeps the older
one-size command (hidden 128, 2 layers by default) working.

Run: ``.venv/bin/python -m bench.reward_model [--requests N] [--budget TOKENS]``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from bench.judge import SCORE_LIMIT, Size, run


def main(
    n_requests: Annotated[int, typer.Option("--requests", min=1)] = 512,
    budget: Annotated[int, typer.Option("--budget", min=1, help="max_batch_tokens")] = 4096,
    hidden: Annotated[int, typer.Option(min=64)] = 128,
    layers: Annotated[int, typer.Option(min=1)] = 2,
    threads: Annotated[int, typer.Option(min=0, help="torch threads; 0: torch's default.")] = 2,
) -> None:
    """Compare the three ways of batching at one model size."""
    results = run([Size(hidden, layers, n_requests)], budget=budget, threads=threads)
    if any(r.worst_difference >= SCORE_LIMIT for r in results):
        raise typer.Exit(1)


if __name__ == "__main__":
    typer.run(main)
