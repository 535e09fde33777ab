"""Every runnable example of the README and the site runs, and prints what its page shows.

The rules (which blocks run, how output is compared) are ``tests/docs/examples.py``'s
docstring, and the site's contributing page. The last tests prove the collector can
fail: a flag that does not exist, an output that differs, a block nobody marked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.examples import (
    ROOT,
    Service,
    examples,
    matches,
    pages,
    run_page,
    unmarked,
)

RUNNABLE = [page for page in pages() if examples(page)]


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    # Started by the first example that needs one, stopped at the end of the session.
    served = Service(tmp_path_factory.mktemp("docs-service"))
    yield served
    served.stop()


def test_every_example_says_whether_it_runs() -> None:
    missing = [
        f"{b.path.relative_to(ROOT)}:{b.line} ({b.language})" for p in pages() for b in unmarked(p)
    ]
    assert not missing, (
        "mark each block `<!-- run -->`, or say why it is only shown with "
        "`<!-- not run: WHY -->`: " + ", ".join(missing)
    )


@pytest.mark.slow(seconds=150)
@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_the_page_s_examples_run(
    page: Path,
    tmp_path: Path,
    service: Service,
    record_property: pytest.RecordProperty,
) -> None:
    ran, failed = run_page(page, tmp_path / "work", service)
    record_property("documentation_examples", ran)
    assert not failed, "\n".join(str(f) for f in failed)


# -- the collector fails where it should -------------------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_a_flag_that_does_not_exist_fails_its_page(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "Score it:\n\n<!-- run -->\n```bash\n"
        "arbiter score --no-such-flag --rubric mixed-rl eval_sets/task-kinds.jsonl\n```\n",
    )
    ran, failed = run_page(page, tmp_path / "work")
    assert ran == 1 and len(failed) == 1
    assert "page.md:4" in str(failed[0]) and "No such option" in str(failed[0]), failed


def test_output_that_differs_from_the_page_fails(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "<!-- run -->\n```console\n$ arbiter --version\narbiter 0.0.0-not-this\n```\n\n"
        "<!-- run -->\n```python\nprint('right', 1.0)\n```\n\n<!-- output -->\n```text\n"
        "wrong 1.0\n```\n",
    )
    ran, failed = run_page(page, tmp_path / "work")
    assert ran == 1 and "does not match" in str(failed[0]), failed
    page.write_text(page.read_text().replace("0.0.0-not-this", "..."), encoding="utf-8")
    ran, failed = run_page(page, tmp_path / "again")
    assert ran == 2 and "page.md:8" in str(failed[0]) and "does not match" in str(failed[0])


def test_an_unexpected_exit_status_fails(tmp_path: Path) -> None:
    page = _page(tmp_path, "<!-- run: exit=1 -->\n```bash\ntrue\n```\n")
    assert "exited 0, not 1" in str(run_page(page, tmp_path / "work")[1][0])


def test_a_block_nobody_marked_is_found(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "```bash\nmake demo\n```\n\n<!-- not run: minutes -->\n```bash\nmake test\n```\n\n"
        "```json\n{}\n```\n",
    )
    assert [(b.line, b.language) for b in unmarked(page)] == [(1, "bash")]


def test_the_matching_rule() -> None:
    table = "| id   | reward |\n| a    | 1.0000 |\n| b    | 0.3125 |\n"
    assert matches("| id | reward |\n...\n| b | 0.3125 |", table)
    assert matches("| a | 1... |", "| a | 1.0000 |")
    assert not matches("| id | reward |\n| b | 0.3125 |", table)
    assert not matches("| a | 0... |", "| a | 1.0000 |")
    assert matches("\nwrote 9 reward(s) to ...\n\n", "wrote 9 reward(s) to rewards.jsonl  \n")
