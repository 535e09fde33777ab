"""The import rules of ``docs/architecture.md``, checked on the source.

Imports between packages go one way (the table of allowed arrows below), and
no modules of the project import each other in a circle, directly or through
others, lazily inside a function or not (an import only for type checking does
not count: it never runs).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The installed namespace: ``arbiter`` and its sub-packages, each a top-level folder
#: of the repository (``arbiter/graders`` links to ``graders/``, and so on).
SUBPACKAGES = ("rubrics", "graders", "reward_models", "monitoring", "store", "api", "eval_sets")
#: Package name → the folder that holds it.
FOLDERS = {"arbiter": REPO / "arbiter", **{f"arbiter.{p}": REPO / p for p in SUBPACKAGES}}
#: The trainer side, installed alone by ``pip install arbiter-rewards``: the client,
#: the adapters and the wire contract they send (``arbiter.graders.types``).
CLIENT = ("arbiter.client", "arbiter.adapters")
WIRE = "arbiter.graders.types"
#: Shared modules at the root of the namespace, standard library only: any layer may
#: import them (the version, which extra brings what, trainer rows, group statistics).
SHARED = ("arbiter", "arbiter.version", "arbiter.extras", "arbiter.rows", "arbiter.groups")

# layer -> the project packages (or modules) it may import besides itself and SHARED
ALLOWED: dict[str, set[str]] = {
    "arbiter.reward_models": set(),
    "arbiter.graders": {"arbiter.reward_models"},
    # Declared models are built from a models file; nothing else of reward_models.
    "arbiter.rubrics": {"arbiter.graders"},
    "arbiter.monitoring": {WIRE},
    "arbiter.store": set(),
    "arbiter.eval_sets": set(),
    "arbiter.api": {f"arbiter.{p}" for p in SUBPACKAGES},
    "client": {WIRE, *CLIENT},
    # The CLI and the offline tools (audit, replay, export) sit on top of everything.
    "arbiter": {"arbiter"},
}
#: Single modules allowed an arrow their layer is not: (importer, imported).
EXCEPTIONS = {("arbiter.rubrics.models_file", "arbiter.reward_models")}


def layer(module: str) -> str:
    """Name the layer a module of the namespace belongs to."""
    if module in SHARED:
        return "shared"
    for package in ALLOWED:
        if package.startswith("arbiter.") and (
            module == package or module.startswith(package + ".")
        ):
            return package
    if any(module == c or module.startswith(c + ".") for c in CLIENT):
        return "client"
    return "arbiter"


def project_files() -> list[tuple[str, Path]]:
    """Return (module name, file) for every module of the namespace, each file once."""
    found = []
    for package, folder in FOLDERS.items():
        # rglob does not descend the links of arbiter/: each file is seen in its own folder.
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append((".".join([package, *parts]), path))
    return found


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.split(".")[0] in {"arbiter", "bench", *SUBPACKAGES}}


def permitted(package: str, module: str, importer: str = "") -> bool:
    """Say whether a module of layer ``package`` (named ``importer``) may import ``module``."""
    if layer(module) in {package, "shared"}:
        return True
    if any(importer == i and module.startswith(m) for i, m in EXCEPTIONS):
        return True
    return any(module == rule or module.startswith(rule + ".") for rule in ALLOWED[package])


def arrow_offences(files: Iterable[tuple[str, Path]], package: str) -> list[str]:
    """Return each import, by a module of layer ``package``, that goes against the arrows."""
    return [
        f"{name} imports {module}"
        for name, path in files
        if layer(name) == package
        for module in sorted(imports_of(path))
        if not permitted(package, module, name)
    ]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_go_one_way(package):
    offences = arrow_offences(project_files(), package)
    assert not offences, "\n".join(offences)


def test_the_arrow_check_catches_upward_imports(tmp_path):
    planted = {
        # The service reading rows through the client SDK, or calling the CLI.
        "arbiter.api.openrlhf": "from arbiter.adapters.rows import parse_label\n",
        "arbiter.api.routes.rewards": "from arbiter.client import ArbiterClient\n",
        "arbiter.api.app": "def f():\n    from arbiter.cli import main\n",
        # The rubric's statistics from the models package.
        "arbiter.rubrics.compose": "from arbiter.reward_models.normalize import group_zscores\n",
        # The client reaching past the wire contract.
        "arbiter.client": "from arbiter.graders.runner import run_job\n",
    }
    allowed = {
        "arbiter.api.grading": "from arbiter.version import __version__\nimport arbiter.rows\n",
        "arbiter.rubrics.models_file": "from arbiter.reward_models.declarations import x\n",
        "arbiter.rubrics.score": "from arbiter.groups import group_zscores\n",
    }
    files = []
    for i, (name, text) in enumerate({**planted, **allowed}.items()):
        (tmp_path / f"m{i}.py").write_text(text)
        files.append((name, tmp_path / f"m{i}.py"))
    found = [o for package in ALLOWED for o in arrow_offences(files, package)]
    assert sorted(found) == [
        "arbiter.api.app imports arbiter.cli",
        "arbiter.api.openrlhf imports arbiter.adapters.rows",
        "arbiter.api.routes.rewards imports arbiter.client",
        "arbiter.client imports arbiter.graders.runner",
        "arbiter.rubrics.compose imports arbiter.reward_models.normalize",
    ]


def test_shared_modules_import_only_the_standard_library():
    offences = [
        f"{name} imports {module}"
        for name, path in project_files()
        if name in SHARED
        for module in sorted(runtime_imports(path))
        if module.split(".")[0] not in sys.stdlib_module_names
        and not any(module == s or module.startswith(s + ".") for s in SHARED if s != "arbiter")
    ]
    assert not offences, "\n".join(offences)


def test_only_the_namespace_is_imported():
    # A top-level ``graders`` or ``api`` import would load a second copy of the module.
    offences = [
        f"{path.relative_to(REPO)} imports {module}"
        for path in [p for _, p in project_files()]
        + sorted((REPO / "tests").rglob("*.py"))
        + sorted((REPO / "bench").rglob("*.py"))
        for module in sorted(imports_of(path))
        if module.split(".")[0] in SUBPACKAGES
    ]
    assert not offences, "\n".join(offences)


def test_the_links_map_each_folder_into_the_namespace():
    for package in SUBPACKAGES:
        link = REPO / "arbiter" / package
        assert link.is_symlink(), f"arbiter/{package} is not a link"
        assert link.resolve() == (REPO / package).resolve()


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


def module_name(root: Path, path: Path) -> str:
    """Name the module a file under ``root`` is imported as."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """Return the project modules that module ``name`` imports when it runs."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            for alias in node.names:
                child = f"{base}.{alias.name}"
                named.add(child if child in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    found = set()
    for module in named:
        # "import a.b.c" of a name inside a module: the nearest enclosing module.
        while module and module not in modules:
            module = module.rpartition(".")[0]
        if module and module != name:
            found.add(module)
    return found


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Map every module of ``packages`` under ``root`` to the project modules it imports."""
    files = {
        module_name(root, path): path
        for package in packages
        if (root / package).is_dir()
        for path in sorted((root / package).rglob("*.py"))
    }
    return graph_of(files)


def graph_of(files: dict[str, Path]) -> dict[str, set[str]]:
    """Map each module (name → file) to the modules among them that it imports."""
    return {name: module_imports(name, path, set(files)) for name, path in files.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


def test_no_import_cycles_between_the_projects_modules():
    modules = dict(project_files())
    modules.update(
        (module_name(REPO, path), path) for path in sorted((REPO / "bench").rglob("*.py"))
    )
    cycles = import_cycles(graph_of(modules))
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_catches_a_planted_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    # a -> b at import time, b -> c lazily in a function, c -> a by a relative import.
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    import pkg.sub.c\n")
    (package / "sub" / "c.py").write_text("from ..a import name\n")
    # d <-> e only for type checking: that never runs, so it is no cycle.
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n"
    )
    (package / "e.py").write_text("import pkg.d\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    (package / "b.py").write_text("")
    assert import_cycles(import_graph(tmp_path, ["pkg"])) == []


#: The sandbox's own interpreters (the confiner, the template, the run) run these:
#: a module of ``graders/sandbox`` whose name starts with ``_``.
CONFINED = REPO / "graders" / "sandbox"


def runtime_imports(path: Path) -> set[str]:
    """Return every module a file imports when it runs (lazily or not; not for type checking).

    ``from package import name`` counts as ``package.name``: the name may be a module.
    """
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: a relative import"
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found


def confined_offences(directory: Path, package: str) -> list[str]:
    """Return each import of a ``_`` module in ``directory`` that is neither stdlib nor confined."""
    offences = []
    for path in sorted(directory.glob("_*.py")):
        if path.name == "__init__.py":
            continue
        for module in sorted(runtime_imports(path)):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names:
                continue
            inside = module.removeprefix(package + ".")
            if module.startswith(package + ".") and inside.split(".")[0].startswith("_"):
                continue
            offences.append(f"{path.name} imports {module}")
    return offences


def test_the_sandboxs_confined_modules_import_only_the_standard_library():
    names = {path.stem for path in CONFINED.glob("_*.py")} - {"__init__"}
    # The template's modules and the confiner's are all among them.
    assert {"_zygote", "_linux", "_template", "_remote", "_codec", "_frames"} <= names
    assert not confined_offences(CONFINED, "arbiter.graders.sandbox")


def test_the_confined_check_catches_a_non_stdlib_import(tmp_path):
    (tmp_path / "_ok.py").write_text(
        "import os\nfrom typing import TYPE_CHECKING\nfrom arbiter.graders.sandbox import _other\n"
        "if TYPE_CHECKING:\n    from arbiter.graders.sandbox.clock import Moving\n"
    )
    (tmp_path / "_lazy.py").write_text("def f():\n    import numpy\n")
    (tmp_path / "_trusted.py").write_text("from arbiter.graders.sandbox.proxy import Channel\n")
    (tmp_path / "open.py").write_text("import pytest\n")  # not confined: no underscore
    assert confined_offences(tmp_path, "arbiter.graders.sandbox") == [
        "_lazy.py imports numpy",
        "_trusted.py imports arbiter.graders.sandbox.proxy.Channel",
    ]


def logger_names(path: Path) -> list[str]:
    """Return the names a module gives the loggers it keeps (``name = logging.getLogger(...)``).

    A name that is not a string literal is returned as ``<expression>``; the root
    logger (no name: the service's logging set-up configures it) is not one kept.
    """
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Attribute) and func.attr == "getLogger"):
            continue
        args = node.value.args
        if not args:
            continue
        if isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            names.append(args[0].value)
        else:
            names.append("<expression>")
    return names


def test_the_services_loggers_are_named_under_arbiter():
    # One prefix, so an operator's logging config reaches every one of them.
    offences = [
        f"{path.relative_to(REPO)}: {name}"
        for _, path in project_files()
        for name in logger_names(path)
        if not name.startswith("arbiter.")
    ]
    assert not offences, "\n".join(offences)


def test_the_logger_check_catches_a_module_named_logger(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import logging\nlogger = logging.getLogger(__name__)\n"
        "other = logging.getLogger('arbiter.m')\nroot = logging.getLogger()\n"
        "logging.getLogger('uvicorn.access').disabled = True\n"
    )
    assert logger_names(module) == ["<expression>", "arbiter.m"]
