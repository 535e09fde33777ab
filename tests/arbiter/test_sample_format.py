"""The sample format's page is generated from the models, and its every example earns 1.0."""

from __future__ import annotations

import asyncio
import typing
from pathlib import Path

import pytest

from arbiter.graders.registry import default_registry
from arbiter.graders.types import Sample, Task
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.score import score_samples
from arbiter.sample_format import KINDS, examples, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_page_is_the_generated_one() -> None:
    committed = (ROOT / "docs" / "samples.md").read_text(encoding="utf-8")
    assert committed == render(), "regenerate: python -m arbiter.sample_format -o docs/samples.md"


def test_every_task_kind_is_on_the_page_with_an_example() -> None:
    union = typing.get_args(typing.get_args(Task)[0])
    kinds = {
        kind for model in union for kind in typing.get_args(model.model_fields["kind"].annotation)
    }
    assert kinds == set(KINDS)
    rows = examples()
    shown = {example_id for _, ids in KINDS.values() for example_id in ids}
    assert shown == set(rows), "every example is shown, and every one shown exists"
    for kind, (_, ids) in KINDS.items():
        for example_id in ids:
            sample = Sample.model_validate(rows[example_id])
            assert sample.task is not None and sample.task.kind == kind


def test_the_readme_points_at_the_page_and_names_every_kind() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/samples.md" in readme
    for kind in KINDS:
        assert f"`{kind}`" in readme, kind


@pytest.mark.slow(seconds=20)
def test_every_example_scores_one_under_mixed_rl(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.graders.languages.conftest import require_toolchain

    # The repository example names its snapshot by a path relative to the checkout.
    monkeypatch.chdir(ROOT)
    registry = default_registry()
    try:
        unit = registry.instance("unit_tests")
        require_toolchain(unit, "cpp")  # type: ignore[arg-type]
        require_toolchain(unit, "javascript")  # type: ignore[arg-type]
        samples = [Sample.model_validate(row) for row in examples().values()]
        rubric = load_rubric(ROOT / "rubrics" / "library" / "mixed-rl.yaml")
        rewards = asyncio.run(score_samples(rubric, samples, registry=registry))
    finally:
        registry.close()
    assert {r.id: r.reward for r in rewards} == {s.id: 1.0 for s in samples}, [
        (r.id, r.abstain_reason) for r in rewards if r.reward != 1.0
    ]
