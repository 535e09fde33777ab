"""The bandit grader: scoring, bandit's own functional expectations, nosec, cache and pool."""

from __future__ import annotations

import asyncio
import collections
import io
import json
import math
import os
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from hypothesis import example, given
from pydantic import ValidationError

from arbiter.graders.analysis_pool import WorkerPool
from arbiter.graders.bandit import (
    LEVELS,
    BanditConfig,
    BanditGrader,
    BanditSelection,
    Finding,
    analyze_bandit,
    score_findings,
)
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.runner import GraderJob, run_job
from arbiter.graders.static_analysis import StaticAnalyzer
from arbiter.graders.types import INFRASTRUCTURE_FAILURES, FailureKind, Sample, ViolationType
from tests.graders.reader_fuzz import TARGETS, fuzz_settings
from tests.strictness import unavailable

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
BANDIT = DATA / "bandit"


def finding(severity: str, confidence: str, test_id: str = "B000") -> Finding:
    return Finding(test_id, "t", severity, confidence, 1, (1,), 0, "", 0, "", False)


def grade(grader: BanditGrader, response: str, **config):
    return asyncio.run(grader.grade(Sample(id="s", response=response), BanditConfig(**config)))


@pytest.fixture
def grader() -> BanditGrader:
    # No pool: these tests check results, not parallelism.
    return BanditGrader(StaticAnalyzer(analyze_bandit))


# --- scoring (pure) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("findings", "config", "expected"),
    [
        ([], {}, 1.0),
        ([("HIGH", "HIGH")], {}, math.exp(-1.0)),
        ([("MEDIUM", "HIGH")], {}, math.exp(-0.4)),
        ([("LOW", "HIGH")], {}, math.exp(-0.1)),
        ([("HIGH", "MEDIUM")], {}, math.exp(-0.6)),
        ([("HIGH", "LOW")], {}, math.exp(-0.3)),
        ([("UNDEFINED", "HIGH")], {}, 1.0),
        ([("HIGH", "HIGH"), ("LOW", "HIGH")], {}, math.exp(-1.1)),
        ([("HIGH", "HIGH")], {"mapping": "reciprocal"}, 0.5),
        ([("HIGH", "HIGH")] * 3, {"mapping": "reciprocal"}, 0.25),
        ([("HIGH", "HIGH")], {"scale": 2.0}, math.exp(-0.5)),
        ([("HIGH", "HIGH")] * 2, {"scale": 2.0, "mapping": "reciprocal"}, 0.5),
        # A rubric naming some levels keeps the defaults for the others.
        (
            [("HIGH", "HIGH"), ("MEDIUM", "HIGH")],
            {"severity_weights": {"HIGH": 2.0}},
            math.exp(-2.4),
        ),
        ([("LOW", "LOW")], {"confidence_weights": {"LOW": 0.0}}, 1.0),
    ],
)
def test_score_findings(findings, config, expected):
    result = score_findings([finding(s, c) for s, c in findings], BanditConfig(**config))
    assert result.score == pytest.approx(expected)


def test_score_counts_by_level():
    fs = [finding("HIGH", "MEDIUM"), finding("LOW", "MEDIUM"), finding("LOW", "HIGH")]
    result = score_findings(fs, BanditConfig())
    assert result.by_severity == {"UNDEFINED": 0, "LOW": 2, "MEDIUM": 0, "HIGH": 1}
    assert result.by_confidence == {"UNDEFINED": 0, "LOW": 0, "MEDIUM": 2, "HIGH": 1}
    assert result.penalty == pytest.approx(1.0 * 0.6 + 0.1 * 0.6 + 0.1 * 1.0)


@pytest.mark.parametrize("mapping", ["exponential", "reciprocal"])
def test_more_findings_never_score_higher(mapping):
    config = BanditConfig(mapping=mapping)
    scores = [score_findings([finding("LOW", "LOW")] * n, config).score for n in range(40)]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < s <= 1.0 for s in scores)
    assert len(set(scores)) == len(scores)  # never flat: there is always a gradient


@pytest.mark.parametrize(
    "bad",
    [
        {"tests": ["B999"]},
        {"skips": ["not-an-id"]},
        {"severity_weights": {"CRITICAL": 1.0}},
        {"severity_weights": {"HIGH": -1.0}},
        {"scale": 0},
        {"mapping": "linear"},
        {"unknown_key": 1},
    ],
)
def test_bad_config_fails_at_load(bad):
    with pytest.raises(ValidationError):
        BanditConfig(**bad)


def test_test_ids_are_normalised():
    assert BanditConfig(skips=["b101", "B602", "b101"]).skips == ("B101", "B602")


# --- bandit's own functional expectations -----------------------------------


def _default_configuration_checks() -> list:
    path = BANDIT / "expected_counts.json"
    if not path.exists():
        reason = f"bandit's functional-test expectations are absent ({path})"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-data")]
    # plugin_config {} is bandit's default too; custom_test_set or a non-empty
    # plugin_config change which tests run and are not this grader's to match.
    cases = [
        e
        for e in json.loads(path.read_text())
        if not e["custom_test_set"] and not e["plugin_config"]
    ]
    return [
        pytest.param(e, id=f"{e['test']}-{'ignore_nosec' if e.get('ignore_nosec') else 'nosec'}")
        for e in cases
    ]


def read_source(path: Path) -> str:
    """Decode a file as Python would, honouring its coding cookie."""
    raw = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw.decode(encoding)


def test_there_are_77_default_configuration_checks():
    cases = _default_configuration_checks()
    if cases[0].values == (None,):
        unavailable(f"bandit's functional-test expectations are absent ({BANDIT})")
    assert len(cases) == 77


@pytest.mark.parametrize("case", _default_configuration_checks())
def test_matches_bandit_functional_counts(case, grader):
    code = read_source(BANDIT / "examples" / case["file"])
    # bandit's tests honour nosec unless they say otherwise; the grader does not
    # by default, so the test states bandit's setting explicitly.
    honor = not case.get("ignore_nosec", False)
    analysis = analyze_bandit(code, BanditSelection(honor_nosec=honor))
    assert analysis.syntax_error is None
    assert analysis.plugin_errors == ()
    sev = collections.Counter(f.severity for f in analysis.findings)
    conf = collections.Counter(f.confidence for f in analysis.findings)
    got = {
        "SEVERITY": {level: sev[level] for level in LEVELS},
        "CONFIDENCE": {level: conf[level] for level in LEVELS},
    }
    assert got == case["expect"]
    # The grader reports the same counts through its details.
    result = asyncio.run(
        grader.grade(Sample(id="x", response=code), BanditConfig(honor_nosec=honor))
    )
    assert result.score is not None
    assert result.details["counts"] == {
        "severity": got["SEVERITY"],
        "confidence": got["CONFIDENCE"],
    }


# --- the grader --------------------------------------------------------------

SHELL = "import subprocess\nsubprocess.Popen('ls ' + name, shell=True)\n"


def test_details_list_each_finding(grader):
    result = grade(grader, f"```python\n{SHELL}```")
    assert result.score is not None and result.score < 1.0
    assert result.failure is None
    ids = [f["test_id"] for f in result.details["findings"]]
    assert ids == ["B404", "B602"]
    b602 = result.details["findings"][1]
    assert b602["test_name"] == "subprocess_popen_with_shell_equals_true"
    assert (b602["severity"], b602["confidence"], b602["line"]) == ("HIGH", "HIGH", 2)
    assert b602["snippet"] == "subprocess.Popen('ls ' + name, shell=True)"
    assert result.details["findings_total"] == 2
    expected = score_findings(analyze_bandit(SHELL, BanditSelection()).findings, BanditConfig())
    assert result.score == pytest.approx(expected.score)


def test_clean_code_scores_one(grader):
    result = grade(grader, "def add(a, b):\n    return a + b\n")
    assert result.score == 1.0
    assert result.details["findings"] == []


def test_listed_findings_are_capped_but_counts_are_not(grader):
    code = "".join(f"eval(x{i})\n" for i in range(30))
    result = grade(grader, code, max_listed_findings=5)
    assert len(result.details["findings"]) == 5
    assert result.details["findings_total"] == 30
    assert result.details["counts"]["severity"]["MEDIUM"] == 30


#: Responses whose code bandit cannot score, each the candidate's doing.
CANDIDATE_FAULTS = [
    ("", FailureKind.NO_CODE),
    ("The answer is to use a loop.", FailureKind.NO_CODE),
    ("```python\ndef f(:\n    pass\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = 'unterminated\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = 1\x00\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = '\ud800'\n```", FailureKind.SYNTAX_ERROR),
    # Python's own parser gives up on these: CPython cannot compile them either.
    ("```python\nx = " + "(" * 300 + "1" + ")" * 300 + "\n```", FailureKind.SYNTAX_ERROR),
    ("```python\nx = " + "+".join(["1"] * 5000) + "\n```", FailureKind.SYNTAX_ERROR),
    # The parser's stack overflows as a MemoryError, which used to escape as a crash.
    ("```python\nx = " + "-" * 100_000 + "1\n```", FailureKind.SYNTAX_ERROR),
    # Parses and compiles, but is too deep for bandit's recursive visitor: it used to
    # be a grader_error, which made the whole reward abstain (the group's mean).
    ("```python\nx = " + "+".join(["1"] * 2000) + "\n```", FailureKind.UNANALYSABLE),
]


@pytest.mark.parametrize(("response", "kind"), CANDIDATE_FAULTS)
def test_a_candidates_fault_scores_zero_with_its_kind(grader, response, kind):
    result = grade(grader, response)
    assert result.score == 0.0 and result.failure is None
    assert result.details["failure_kind"] == kind.value
    assert result.details["message"]


@pytest.mark.parametrize(("response", "kind"), CANDIDATE_FAULTS)
def test_without_fail_as_zero_a_candidates_fault_is_unscored_and_never_ours(grader, response, kind):
    result = grade(grader, response, fail_as_zero=False)
    assert result.score is None
    assert result.failure is not None and result.failure.kind == kind
    assert kind not in INFRASTRUCTURE_FAILURES


def test_code_too_deep_for_bandit_compiles_and_runs():
    # The proof that bandit's refusal is no syntax error: CPython runs the code.
    code = "x = " + "+".join(["1"] * 2000) + "\n"
    namespace: dict[str, int] = {}
    exec(compile(code, "deep.py", "exec"), namespace)
    assert namespace["x"] == 2000
    assert analyze_bandit(code, BanditSelection()).unanalysable is not None


def test_runner_turns_nothing_into_a_crash():
    job = GraderJob(
        sample=Sample(id="s", response="```python\nif True print(1)\n```"),
        component="security",
        grader=BanditGrader(StaticAnalyzer(analyze_bandit)),
        config=BanditConfig(),
        timeout_s=10,
    )
    result = asyncio.run(run_job(job))
    assert result.score == 0.0 and result.details["failure_kind"] == "syntax_error"


# --- nosec --------------------------------------------------------------------

NOSEC = "import subprocess  # nosec\nsubprocess.Popen(cmd, shell=True)  # nosec B602\n"


def test_nosec_does_not_hide_findings_by_default(grader):
    result = grade(grader, NOSEC)
    assert [f["test_id"] for f in result.details["findings"]] == ["B404", "B602"]
    assert all(f["under_nosec"] for f in result.details["findings"])
    assert [n["line"] for n in result.details["nosec"]] == [1, 2]
    assert result.details["nosec_honored"] is False
    assert result.violations == ()  # reported in details; a violation only when asked


def test_nosec_scores_the_same_as_without_it(grader):
    with_nosec = grade(grader, NOSEC)
    without = grade(grader, NOSEC.replace("  # nosec B602", "").replace("  # nosec", ""))
    assert with_nosec.score == without.score < 1.0
    assert without.details["nosec"] == []


def test_nosec_can_be_a_violation(grader):
    result = grade(grader, NOSEC, nosec_violation=True)
    assert [(v.type, v.line) for v in result.violations] == [
        (ViolationType.SUPPRESSION_COMMENT, 1),
        (ViolationType.SUPPRESSION_COMMENT, 2),
    ]
    assert result.violations[1].snippet == "# nosec B602"


def test_nosec_honoured_when_configured(grader):
    result = grade(grader, NOSEC, honor_nosec=True)
    assert result.details["findings"] == []
    assert result.score == 1.0
    assert result.details["suppressed_by_nosec"] == 2


def test_nosec_inside_a_string_is_not_a_comment(grader):
    result = grade(grader, "x = '# nosec'\n")
    assert result.details["nosec"] == []


# --- test selection -------------------------------------------------------------


def test_skips_and_tests_select_checks(grader):
    assert [f["test_id"] for f in grade(grader, SHELL, skips=["B404"]).details["findings"]] == [
        "B602"
    ]
    assert [f["test_id"] for f in grade(grader, SHELL, tests=["B404"]).details["findings"]] == [
        "B404"
    ]


def test_selections_do_not_leak_into_each_other():
    # bandit keeps the blacklist a test set selected on a global; building a
    # second test set must not change what the first one reports.
    code = "import pickle\nimport subprocess\n"
    only_pickle = BanditSelection(skips=("B101", "B404"))
    both = BanditSelection(skips=("B101",))
    for _ in range(2):
        assert [f.test_id for f in analyze_bandit(code, both).findings] == ["B403", "B404"]
        assert [f.test_id for f in analyze_bandit(code, only_pickle).findings] == ["B403"]


def test_coding_cookie_is_respected():
    # Trojan-source detection reads the bytes with the declared encoding.
    code = "# -*- coding: latin-1 -*-\nx = 'caf\u00e9'\n"
    analysis = analyze_bandit(code, BanditSelection())
    assert analysis.syntax_error is None and analysis.findings == ()
    bidi = "x = 'a\u202eb'\n"
    assert [f.test_id for f in analyze_bandit(bidi, BanditSelection()).findings] == ["B613"]


# --- cache, deduplication, pool --------------------------------------------------


def test_cache_by_code_hash_and_selection():
    analyzer = StaticAnalyzer(analyze_bandit, cache_size=2)
    grader = BanditGrader(analyzer)
    first = grade(grader, SHELL)
    second = grade(grader, SHELL)
    assert (first.details["cached"], second.details["cached"]) == (False, True)
    assert second.score == first.score
    grade(grader, SHELL, honor_nosec=True)  # another selection: another entry
    assert (analyzer.stats.hits, analyzer.stats.misses) == (1, 2)
    grade(grader, "x = 1\n")  # evicts the least recently used (the first)
    assert grade(grader, SHELL).details["cached"] is False
    assert analyzer.stats.misses == 4


def test_identical_code_in_flight_is_analysed_once():
    analyzer = StaticAnalyzer(analyze_bandit)
    grader = BanditGrader(analyzer)

    async def batch():
        samples = [Sample(id=str(i), response=SHELL) for i in range(5)]
        return await asyncio.gather(*(grader.grade(s, BanditConfig()) for s in samples))

    results = asyncio.run(batch())
    assert analyzer.stats.misses == 1 and analyzer.stats.deduplicated == 4
    assert len({r.score for r in results}) == 1


def _die(code: str, selection: BanditSelection):
    os._exit(3)  # a worker killed mid-analysis (out of memory, say)


@pytest.mark.slow
def test_process_pool_gives_the_same_results_and_survives_a_dead_worker():
    pool = WorkerPool(2)
    try:
        pooled = BanditGrader(StaticAnalyzer(analyze_bandit, pool=pool, offload_at=2))
        inline = BanditGrader(StaticAnalyzer(analyze_bandit))
        codes = [SHELL, NOSEC, "eval(x)\n", "def f():\n    return 1\n", "import pickle\n"]

        async def batch(grader):
            samples = [Sample(id=str(i), response=c) for i, c in enumerate(codes)]
            return await asyncio.gather(*(grader.grade(s, BanditConfig()) for s in samples))

        got = asyncio.run(batch(pooled))
        assert pooled.analyzer.stats.offloaded == len(codes)
        want = asyncio.run(batch(inline))
        assert [r.score for r in got] == [r.score for r in want]
        assert [r.details["findings"] for r in got] == [r.details["findings"] for r in want]

        # One long response goes to the pool even when nothing else is queued.
        lines = BanditGrader(StaticAnalyzer(analyze_bandit, pool=pool, offload_lines=50))
        long_code = "".join(f"x{i} = {i}\n" for i in range(60))
        assert grade(lines, long_code).score == 1.0
        assert grade(lines, "x = 1\n").score == 1.0
        assert lines.analyzer.stats.offloaded == 1

        dying = BanditGrader(StaticAnalyzer(_die, pool=pool, offload_at=1))
        dead = grade(dying, "x = 1\n")
        assert dead.score is None and dead.failure is not None
        assert dead.failure.kind == FailureKind.GRADER_ERROR and dead.failure.retryable
        # A fresh pool replaces the broken one.
        again = asyncio.run(
            batch(BanditGrader(StaticAnalyzer(analyze_bandit, pool=pool, offload_at=2)))
        )
        assert [r.score for r in again] == [r.score for r in want]
    finally:
        pool.close()


def test_registers_under_its_name():
    registry = GraderRegistry()
    registry.register(BanditGrader)
    assert registry.get("bandit") is BanditGrader
    assert BanditGrader.config_model is BanditConfig


def test_importing_the_grader_logs_no_formatter_load_error() -> None:
    # Issue 27: every start logged "error ... Could not load 'sarif'" (bandit's
    # SARIF formatter needs sarif_om, which nothing here uses); a test plugin
    # that fails to load must still be reported, and every plugin still loads.
    script = (
        "import logging; logging.basicConfig(level=logging.WARNING)\n"
        "import graders.bandit as b\n"
        "from bandit.core import extension_loader as e\n"
        "assert 'B602' in b.known_test_ids()\n"
        "e.extension.LOG.error('Could not load %r: %s', 'some_plugin', 'boom')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert "Could not load 'sarif'" not in done.stderr
    assert "Could not load 'some_plugin': boom" in done.stderr


def test_a_task_in_another_language_is_not_applicable_never_zero(grader):
    from arbiter.graders.types import FailureKind, TaskSpec

    task = TaskSpec(kind="test_program", language="cpp", tests="int main() {}\n")
    sample = Sample(id="s", response='int f() { system("ls"); return 0; }\n', task=task)
    result = asyncio.run(grader.grade(sample, BanditConfig()))
    assert result.score is None
    assert result.failure is not None and result.failure.kind == FailureKind.NOT_APPLICABLE
    assert "cpp" in result.failure.message


# --- any text: bandit answers for every response --------------------------------

#: The unary chain overflows CPython's parser stack as a MemoryError, which escaped
#: analyze_bandit as a crash; the 2,000-term sum parses but was a grader_error.
UNARY_CHAIN = "x = " + "-" * 100_000 + "1\n"
LONG_SUM = "x = " + "+".join(["1"] * 2000) + "\n"


@fuzz_settings()
@given(TARGETS["bandit.analyze_bandit"].strategy)
@example(UNARY_CHAIN)
def test_analyze_bandit_answers_for_any_code(code):
    TARGETS["bandit.analyze_bandit"].check(code)


@fuzz_settings()
@given(TARGETS["bandit.grade"].strategy)
@example((UNARY_CHAIN, True))
@example((LONG_SUM, False))
def test_no_response_makes_bandit_fail_as_ours(args):
    TARGETS["bandit.grade"].check(args)
