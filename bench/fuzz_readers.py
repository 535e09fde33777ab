"""Fuzz every trusted-side reader of candidate text and count what escapes it.

``python -m bench.fuzz_readers [--examples N] [--only PREFIX ...]`` runs each target of
:mod:`tests.graders.reader_fuzz` (the strategies the tests use, one copy) with ``N``
generated examples (10,000 by default) and prints, per reader, the examples run, the
uncaught exceptions (an exception the reader's module does not document, which the
grader would report as a crash of ours), and the slowest example's CPU time (the example
itself too when it took over :data:`SLOW_S`: a quadratic reader). Nothing is shrunk: every
example runs, so the count is the count. The first example of each kind of escape is
printed, shortened, for a regression ``@example``.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import traceback
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings

from tests.graders.reader_fuzz import TARGETS, Target


@dataclass
class Tally:
    """What one target's run saw."""

    examples: int = 0
    uncaught: int = 0
    slowest_s: float = 0.0
    #: The slowest example, shortened (a quadratic reader shows here first).
    slowest: str = ""
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    first: dict[str, str] = field(default_factory=dict)


def _shortened(example: object) -> str:
    """``repr`` of an example: its first 200 characters and its length."""
    text = repr(example)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text):,} characters)"


def run(target: Target, examples: int) -> Tally:
    """Run ``target`` on ``examples`` generated inputs, counting escapes instead of stopping."""
    tally = Tally()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(target.strategy)
    def probe(example: object) -> None:
        tally.examples += 1
        start = time.process_time()
        try:
            target.check(example)
        except Exception as e:  # the count is the point: every escape, not the first
            tally.uncaught += 1
            where = traceback.extract_tb(e.__traceback__)[-1]
            kind = f"{type(e).__name__} at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}"
            tally.kinds[kind] += 1
            tally.first.setdefault(kind, repr(example)[:300])
        finally:
            spent = time.process_time() - start
            if spent > tally.slowest_s:
                tally.slowest_s = spent
                tally.slowest = _shortened(example)

    probe()
    return tally


#: An example slower than this is printed with its reader.
SLOW_S = 0.5


def main(argv: list[str] | None = None) -> int:
    """Run the targets; exit 1 when any exception escaped a reader."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="examples per reader")
    parser.add_argument("--only", nargs="*", default=(), help="targets whose name starts so")
    args = parser.parse_args(argv)
    chosen = [t for n, t in TARGETS.items() if not args.only or n.startswith(tuple(args.only))]
    print(f"{'reader':36} {'examples':>9} {'uncaught':>9} {'slowest':>10} {'cpu':>9}")
    escaped = 0
    for target in chosen:
        start = time.process_time()
        tally = run(target, args.examples)
        spent = time.process_time() - start
        escaped += tally.uncaught
        print(
            f"{target.name:36} {tally.examples:>9} {tally.uncaught:>9} "
            f"{tally.slowest_s * 1000:>8.1f}ms {spent:>8.1f}s",
            flush=True,
        )
        if tally.slowest_s >= SLOW_S:
            print(f"    slowest: {tally.slowest}", flush=True)
        for kind, count in tally.kinds.most_common():
            print(f"    {count} x {kind}: first {tally.first[kind]}", flush=True)
    print(f"{len(chosen)} readers, {escaped} uncaught exceptions")
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
