"""A reviewer labels each kind of component from what the page shows, and nothing else.

For each grader kind of the rubric library (unit tests, bandit, radon,
efficiency, violation detectors, a reward-model judge) a one-component rubric
grades a good and a bad rollout. A scripted reviewer reads only the page's text (the component's
guidance and summary, the rollout's metrics), decides pass or fail by a rule a
person would apply, labels with the per-component keyboard shortcuts, and the
stored labels must match what each rollout really is. Efficiency is labelled
blind: the metrics and the rubric's budget are enough without any score.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from arbiter.store.db import Store
from arbiter.store.review import ReviewQueue
from tests.api.conftest import Server, StartServer

pytestmark = pytest.mark.browser

ADD_TASK = {
    "kind": "python_function",
    "entry_point": "add",
    "tests": ["assert add(2, 3) == 5", "assert add(-4, 10) == 6"],
}
HONEST = "```python\ndef add(a, b):\n    return a + b\n```\n"
BRANCHY = (
    "```python\ndef add(a, b):\n"
    + "".join(f"    if a == {i}:\n        return {i} + b\n" for i in range(6))
    + "    return a + b\n```\n"
)

# kind -> (component line of the rubric, show scores, good sample, bad sample)
KINDS: dict[str, tuple[str, bool, dict[str, Any], dict[str, Any]]] = {
    "tests": (
        "{grader: unit_tests, config: {timeout_s: 10, fail_as_zero: true}}",
        True,
        {"response": HONEST, "task": ADD_TASK},
        {"response": HONEST.replace("a + b", "a - b"), "task": ADD_TASK},
    ),
    "security": (
        "{grader: bandit}",
        True,
        {"response": HONEST},
        {
            "response": "```python\nimport subprocess\n\ndef add(a, b):\n"
            "    return subprocess.call(f'expr {a} + {b}', shell=True)\n```\n"
        },
    ),
    "complexity": (
        "{grader: radon, config: {max_cyclomatic: 3}}",
        True,
        {"response": HONEST},
        {"response": BRANCHY},
    ),
    "efficiency": (
        "{grader: efficiency, config: {max_turns: 5}}",
        False,
        {"response": HONEST, "metrics": {"turns": 2}},
        {"response": HONEST, "metrics": {"turns": 9}},
    ),
    "judge": (
        "{grader: reward_model, config: {model: default}}",
        True,
        {"prompt": "What is 2 + 3?", "response": "2 + 3 = 5."},
        {"prompt": "What is 4 + 4?", "response": "4 + 4 = 9."},
    ),
    "hacks": (
        "{grader: violations}",
        True,
        {"response": HONEST, "task": ADD_TASK},
        {"response": "```python\nimport sys\n\ndef add(a, b):\n    sys.exit(0)\n```\n"},
    ),
}


def rubric(kind: str) -> str:
    line, show, _, _ = KINDS[kind]
    return (
        f"name: kind-{kind}\nversion: 1\ncomponents:\n  {kind}: {line}\n"
        f"review: {{sample_rate: 1.0, show_scores: {str(show).lower()}}}\n"
    )


# -- the scripted reviewer: page text in, verdict out ------------------------------


def number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"the page does not show {pattern!r}:\n{text}"
    return float(match.group(1))


Shown = dict[str, str]  # what the page shows: row, metrics, prompt, response


def judge_tests(shown: Shown) -> bool:
    row = shown["row"]
    passed = number(r"(\d+) of \d+ tests passed", row)
    return passed == number(r"\d+ of (\d+) tests passed", row)


def judge_security(shown: Shown) -> bool:
    row = shown["row"]
    # A finding of HIGH or MEDIUM severity is worth failing; "0 finding(s)" passes.
    return number(r"(\d+) finding\(s\) in the code", row) == 0 or not re.search(
        r"B\d+ (HIGH|MEDIUM)", row
    )


def judge_complexity(shown: Shown) -> bool:
    row = shown["row"]
    limit = number(r"cyclomatic complexity[^:]*: fine up to (\d+)", row)
    return number(r"max_cyclomatic (\d+)", row) <= limit


def judge_efficiency(shown: Shown) -> bool:
    row, metrics = shown["row"], shown["metrics"]
    assert "score" not in row.lower(), "blind review showed a score"
    return number(r"turns\s+(\d+)", metrics) <= number(r"turns at most (\d+)", row)


def judge_hacks(shown: Shown) -> bool:
    return "found nothing" in shown["row"]


def judge_judge(shown: Shown) -> bool:
    # A judge is checked against the answer itself: its guidance asks for a correct
    # answer, and the (random, tiny) model's score is only shown beside it.
    assert re.search(r"score \d\.\d\d", shown["row"]), shown["row"]
    a, b = (int(n) for n in re.findall(r"\d+", shown["prompt"]))
    return f"= {a + b}." in shown["response"]


JUDGES: dict[str, Callable[[Shown], bool]] = {
    "tests": judge_tests,
    "security": judge_security,
    "complexity": judge_complexity,
    "efficiency": judge_efficiency,
    "hacks": judge_hacks,
    "judge": judge_judge,
}


@pytest.fixture(scope="module")
def server(start_server: StartServer) -> Server:
    server = start_server(grader_plugins="tests.api.plugin_graders,tests.browser.judge_plugin")
    # Rubrics of their own for the task and the lease tests: their items stay unlabelled.
    extra = {"lease": "efficiency", "task": "hacks"}
    for kind in KINDS:
        (server.rubric_dir / f"kind-{kind}.yaml").write_text(rubric(kind))
    for name, kind in extra.items():
        text = rubric(kind).replace(f"kind-{kind}", f"kind-{name}")
        (server.rubric_dir / f"kind-{name}.yaml").write_text(text)
    wanted = {f"kind-{k}" for k in (*KINDS, *extra)}
    deadline = time.monotonic() + 30
    with server.client() as http:
        while not wanted <= {r["name"] for r in http.get("/v1/rubrics").json()}:
            assert time.monotonic() < deadline, "the rubric files were never loaded"
            time.sleep(0.1)
        batches = [*KINDS.items(), *((name, KINDS[kind]) for name, kind in extra.items())]
        for kind, (_, _, good, bad) in batches:
            samples = [
                {"id": f"{kind}-good", "group_id": kind, "prompt": "Write add(a, b).", **good},
                {"id": f"{kind}-bad", "group_id": kind, "prompt": "Write add(a, b).", **bad},
            ]
            graded = http.post("/v1/rewards", json={"rubric": f"kind-{kind}", "samples": samples})
            assert graded.status_code == 200, graded.text
    return server


def sign_in(page: Any, server: Server, rubric: str) -> None:
    page.goto(f"{server.url}/review")
    page.fill("#key", server.keys["reviewer"])
    page.click("#sign-in")
    page.wait_for_selector("#queue:not(.hidden)")
    page.fill("#rubric", rubric)
    page.locator("h1").click()  # leave the text box so shortcuts apply


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_reviewer_labels_each_component_kind_from_the_page_alone(
    browser: Any, server: Server, kind: str
) -> None:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    decided: dict[str, bool] = {}
    try:
        sign_in(page, server, f"kind-{kind}")
        for _ in range(2):
            page.keyboard.press("n")
            page.wait_for_selector("#item:not(.hidden)")
            sample_id = page.text_content("#item-meta").split("sample ", 1)[1].split(" ")[0]
            shown = {
                "row": page.locator(f"[data-component='{kind}']").inner_text(),
                "metrics": page.locator("#metrics").inner_text(),
                "prompt": page.locator("#prompt").inner_text(),
                "response": page.locator("#response").inner_text(),
            }
            # Nothing on the page is raw JSON, and no empty box follows a response.
            for section in ("#grading", "#task", "#metrics", "#verdicts"):
                assert '{"' not in (page.text_content(section) or ""), section
            assert all(
                (p.text_content() or "").strip() for p in page.query_selector_all("#response pre")
            )
            if KINDS[kind][1]:
                assert "sampled because" in page.text_content("#grading")
            else:
                assert page.query_selector("#grading-box.hidden") is not None
            verdict = JUDGES[kind](shown)
            decided[sample_id] = verdict
            page.keyboard.press("p" if verdict else "f")  # the highlighted component only
            page.keyboard.press("5" if verdict else "1")
            page.keyboard.press("Control+Enter")
            page.locator("#message", has_text="Saved the label").wait_for()
    finally:
        page.close()
    assert not problems, problems
    # The reviewer got every item right from the page alone.
    assert decided == {f"{kind}-good": True, f"{kind}-bad": False}
    store = Store(server.db_url)
    try:
        labels = {row["sample_id"]: row for row in ReviewQueue(store).labels(f"kind-{kind}")}
    finally:
        store.close()
    assert {s: row["verdicts"] for s, row in labels.items()} == {
        f"{kind}-good": {kind: "pass"},
        f"{kind}-bad": {kind: "fail"},
    }


def test_a_python_function_task_reads_as_code(browser: Any, server: Server) -> None:
    page = browser.new_page()
    try:
        sign_in(page, server, "kind-task")
        page.keyboard.press("n")
        page.wait_for_selector("#task-box:not(.hidden)")
        task = page.text_content("#task")
        assert "entry point" in task and "add" in task
        assert "assert add(2, 3) == 5" in task and "[" not in task
        assert [e.text_content() for e in page.query_selector_all("#task .tok-kw")] == [
            "assert",
            "assert",
        ]
        page.keyboard.press("s")
        page.locator("#message", has_text="Skipped").wait_for()
    finally:
        page.close()


def test_closing_the_tab_gives_the_lease_back(browser: Any, server: Server) -> None:
    page = browser.new_page()
    sign_in(page, server, "kind-lease")
    page.keyboard.press("n")
    page.wait_for_selector("#item:not(.hidden)")
    with server.client("reviewer") as http:
        assert http.get("/v1/review/queue", params={"rubric": "kind-lease"}).json()["leased"] == 1
        page.close()  # a closed tab: pagehide, then the keepalive release
        deadline = time.monotonic() + 20
        while (stats := http.get("/v1/review/queue", params={"rubric": "kind-lease"}).json())[
            "leased"
        ]:
            assert time.monotonic() < deadline, "the closed tab kept its lease"
            time.sleep(0.05)
        assert stats["open"] == 2
        # Another reviewer's claim gets it at once, not after the 10-minute lease.
        claimed = http.post("/v1/review/claim", json={"rubric": "kind-lease"}).json()["item"]
        assert claimed is not None
    assert httpx.get(f"{server.url}/healthz").status_code == 200
