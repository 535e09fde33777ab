r"""Seconds each unit of ``make test`` took (a module, or a part of one: ``worker_unit``).

``make test`` hands its workers the costliest units first (tests/conftest.py), from
``tests/unit_seconds.json``, which this writes from a JUnit report of a parallel run::

    .venv/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder \
        -m "not exclusive" --junitxml=build/junit.xml
    .venv/bin/python -m tests.unit_seconds build/junit.xml

A unit missing from the table (a new module) costs what its ``slow(seconds=N)`` marks say.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

TABLE = Path(__file__).with_name("unit_seconds.json")


def read(path: Path = TABLE) -> dict[str, float]:
    """The table, or nothing where it is absent."""
    return json.loads(path.read_text()) if path.exists() else {}


def from_junit(report: Path) -> dict[str, float]:
    """Each unit's seconds (setup, call and teardown of its tests) in a JUnit report."""
    from tests.conftest import worker_unit

    seconds: Counter[str] = Counter()
    for case in ElementTree.parse(report).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        # classname: tests.api.test_x, or tests.api.test_x.TestClass
        module = [p for p in parts if not p[:1].isupper()]
        path = "/".join(module) + ".py"
        seconds[worker_unit(f"{path}::{case.get('name')}")] += float(case.get("time") or 0)
    return {unit: round(s, 1) for unit, s in sorted(seconds.items())}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    table = from_junit(Path(argv[0]))
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(table)} units, {sum(table.values()):.0f} s in all -> {TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
