"""Labelled JSONL sets written by this project: the demo set, and audit sets as they land."""

from pathlib import Path

__all__ = ["EVAL_SETS_DIR", "eval_set_path"]

EVAL_SETS_DIR = Path(__file__).resolve().parent


def eval_set_path(name: str) -> Path:
    """Return the path of the bundled eval set ``name`` (without ``.jsonl``)."""
    path = EVAL_SETS_DIR / f"{name}.jsonl"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in EVAL_SETS_DIR.glob("*.jsonl")))
        raise FileNotFoundError(f"no eval set {name!r} in {EVAL_SETS_DIR} (have: {known})")
    return path
