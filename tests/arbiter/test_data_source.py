"""A row's data source rides through every adapter; verl's GSM8K and MATH become answer tasks."""

from __future__ import annotations

from arbiter.adapters import trl as trl_adapter
from arbiter.adapters.verl import sample_of
from arbiter.graders.types import Sample
from arbiter.rows import parse_label


def test_a_labels_data_source_is_the_samples():
    fields = parse_label({"data_source": "ifeval", "task": {"kind": "answer", "answer": "1"}})
    assert fields["data_source"] == "ifeval"
    assert fields["task"] == {"kind": "answer", "answer": "1"}


def test_gsm8k_and_math_answers_become_answer_tasks():
    assert parse_label("72", "openai/gsm8k")["task"] == {
        "kind": "answer",
        "answer": "72",
        "format": "number",
    }
    assert parse_label(r"\frac{1}{2}", "lighteval/MATH")["task"]["format"] == "math"
    # Elsewhere a bare label stays a label.
    assert "task" not in parse_label("72", "my/dataset")


def test_verl_passes_its_data_source():
    row = sample_of("openai/gsm8k", "so\n#### 72", "72", {"index": 3})
    sample = Sample.model_validate(row)
    assert sample.data_source == "openai/gsm8k"
    assert sample.task is not None and sample.task.kind == "answer"


def test_trl_passes_the_column_and_reads_a_mixed_task_column():
    rows = trl_adapter._rows(
        ["p1", "p2"],
        ["a", "b"],
        {
            "data_source": ["math", "code"],
            # One Arrow struct for two kinds: each row's other fields are null.
            "task": [
                {"kind": "answer", "answer": "1", "tests": None, "entry_point": None},
                '{"kind": "python_function", "tests": "assert f()", "entry_point": "f"}',
            ],
        },
    )
    samples = [Sample.model_validate(r) for r in rows]
    assert [s.data_source for s in samples] == ["math", "code"]
    assert [s.task.kind for s in samples if s.task] == ["answer", "python_function"]
