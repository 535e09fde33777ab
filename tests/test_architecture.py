"""The import rules of DESIGN.md, checked on the source: imports go one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = {
    "arbiter",
    "rubrics",
    "graders",
    "reward_models",
    "monitoring",
    "store",
    "api",
    "eval_sets",
    "bench",
}

# package -> the project packages (or modules) it may import besides itself
ALLOWED: dict[str, set[str]] = {
    "reward_models": set(),
    "graders": {"reward_models"},
    "rubrics": {"graders", "reward_models"},
    "monitoring": {"graders.types"},
    "store": set(),
    "eval_sets": set(),
    "api": OURS - {"bench", "api"},
    "arbiter": OURS - {"bench", "arbiter"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.split(".")[0] in OURS}


def permitted(package: str, module: str) -> bool:
    top = module.split(".")[0]
    if top == package:
        return True
    return any(
        module == rule or module.startswith(rule + ".") or top == rule for rule in ALLOWED[package]
    )


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_go_one_way(package):
    offences = []
    for path in sorted((REPO / package).rglob("*.py")):
        for module in sorted(imports_of(path)):
            if not permitted(package, module):
                offences.append(f"{path.relative_to(REPO)} imports {module}")
    assert not offences, "\n".join(offences)


def test_pure_core_knows_nothing_of_http_storage_or_clocks():
    pure = [REPO / "rubrics" / "compose.py", REPO / "rubrics" / "formula.py"]
    banned = {"time", "datetime", "fastapi", "httpx", "sqlalchemy", "threading", "asyncio"}
    for path in pure:
        tree = ast.parse(path.read_text())
        names = {
            a.name.split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import)
            for a in n.names
        }
        names |= {
            n.module.split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module
        }
        assert not names & banned, f"{path.name} imports {names & banned}"
