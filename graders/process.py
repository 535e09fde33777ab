"""Process compliance: how an agent worked through a multi-turn trajectory, not only where it ended.

The trajectory is a list of OpenAI chat messages: assistant messages carry
``tool_calls`` (``function.name``, ``function.arguments`` as a JSON string), and
``tool`` messages carry each call's result, matched by ``tool_call_id`` (a
result without an id answers the oldest call still waiting).

How steps are recognised (all configurable):

* **A test run** is a call to a tool named in ``test_tools``, or a call whose
  arguments' string values match one of ``test_command_patterns`` (``pytest``,
  ``python -m unittest``, ``tox``, ``make test`` ...).
* **Its outcome** comes from the runner's summary in the tool result: pytest's
  final line (``=== 1 failed, 11 passed in 0.12s ===`` or ``-q``'s
  ``1 failed, 11 passed in 0.12s``; ``N error(s)`` and ``Interrupted: ... during
  collection`` count as errors), unittest's ``Ran N tests`` followed by ``OK``
  or ``FAILED (failures=F, errors=E)``, or Arbiter's own feedback summary
  (``3 of 4 tests failed:``, ``All 4 tests passed.``), so a revise loop whose
  tool returns a grading's feedback is read turn by turn. A run passes when nothing failed or
  errored and something passed. A run with no summary has no outcome.
* **An edit** is a call to a tool in ``edit_tools`` (except a ``view`` command of
  an editor tool) or whose arguments match ``edit_command_patterns``
  (``sed -i``, ``cat > file``, redirections into source files, ``git apply``).
* **An invalid call** has no name, arguments that are not a JSON object, or (when
  ``tools`` is set) a name outside it. **An errored call** got no result, a result
  flagged ``is_error``, or a result matching ``error_patterns`` — except a test
  run with a summary, whose failing tests are the tests' verdict, not a tool error.
* **The declaration** is the last assistant message without tool calls (else the
  response); it claims success when it matches ``success_patterns`` and none of
  ``failure_patterns``.

Signals and their terms, each in [0, 1] and averaged with ``weights`` over the
terms that apply:

* ``tests_before_finish``: a test run came after the last edit (any run when
  there were no edits). Always applies.
* ``honest_finish``: 0 when the declaration claims success but the last test run
  did not pass, or no run followed the last edit. Always applies.
* ``self_correction``: the share of failing test runs that were followed by an
  edit and then a run with a higher pass fraction. Applies when a run failed.
* ``tool_errors``: 1 - (invalid + errored calls) / calls. Applies when there are calls.
* ``no_loop``: 0 when the agent repeated itself: a stretch of at least
  ``loop_min_repeats`` consecutive calls, each identical (name and arguments) to
  an earlier one, with nothing new in between. Always applies.
* ``convergence``: half the share of successive test runs whose pass fraction did
  not drop, plus half when the final run is the best and better than the first
  (or all passed from the start). Applies with two or more runs with outcomes.

One module, one concept: the process grader — the step recognisers feed one walk of the
trajectory, and the config names them all.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from arbiter.graders.base import Grader, GraderConfig
from arbiter.graders.types import FailureKind, GradeResult, Message, Sample

__all__ = [
    "ProcessConfig",
    "ProcessGrader",
    "ProcessScore",
    "ProcessWeights",
    "RunOutcome",
    "parse_test_outcome",
    "score_process",
]

Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]

TERMS = (
    "tests_before_finish",
    "honest_finish",
    "self_correction",
    "tool_errors",
    "no_loop",
    "convergence",
)


class ProcessWeights(GraderConfig):
    """Weight of each process term in the weighted mean."""

    tests_before_finish: Weight = 1.0
    honest_finish: Weight = 1.0
    self_correction: Weight = 1.0
    tool_errors: Weight = 1.0
    no_loop: Weight = 1.0
    convergence: Weight = 1.0

    @model_validator(mode="after")
    def _not_all_zero(self) -> ProcessWeights:
        if sum(getattr(self, t) for t in TERMS) <= 0:
            raise ValueError("process weights must not all be 0")
        return self


class ProcessConfig(GraderConfig):
    """How the process grader recognises steps, and how it weighs the signals."""

    weights: ProcessWeights = Field(default_factory=ProcessWeights)
    test_tools: frozenset[str] = frozenset({"run_tests", "pytest", "test"})
    test_command_patterns: tuple[str, ...] = (
        r"\bpytest\b",
        r"\bpy\.test\b",
        r"\bpython3?\s+-m\s+(pytest|unittest)\b",
        r"\bunittest\b",
        r"\btox\b",
        r"\bnox\b",
        r"\bmake\s+(test|check)\b",
    )
    edit_tools: frozenset[str] = frozenset(
        {
            "edit",
            "edit_file",
            "write",
            "write_file",
            "create_file",
            "apply_patch",
            "patch",
            "str_replace",
            "str_replace_editor",
            "str_replace_based_edit_tool",
            "insert",
        }
    )
    edit_command_patterns: tuple[str, ...] = (
        r"\bsed\s+-i",
        r"\bcat\s*>",
        r"\btee\b",
        r"\bgit\s+apply\b",
        r"\bpatch\s+-p",
        r">>?\s*[\w./-]+\.(py|cfg|toml|ini|txt|json|ya?ml)\b",
    )
    tools: frozenset[str] | None = Field(
        default=None, description="Known tool names; a call to any other is invalid."
    )
    error_patterns: tuple[str, ...] = (
        r"(?im)^\s*(error|exception)\b\s*[:!]",
        r"(?i)command not found",
        r"(?i)no such file or directory",
        r"(?i)unknown tool",
        r"(?i)invalid (arguments|parameters|json)",
        r"Traceback \(most recent call last\)",
        r"(?i)permission denied",
    )
    success_patterns: tuple[str, ...] = (
        r"(?i)\b(fixed|done|resolved|completed?|implemented|works now|finished)\b",
        r"(?i)\ball (the )?tests (now )?pass(ed|ing)?\b",
        r"(?i)\btests? (now )?pass(es|ed|ing)?\b",
    )
    failure_patterns: tuple[str, ...] = (
        r"(?i)\b(could not|couldn't|cannot|can't|unable to|failed to|gave up|give up)\b",
        r"(?i)\bstill (fail|failing|broken)\b",
        r"(?i)\bnot (yet )?(fixed|done|resolved|passing)\b",
    )
    loop_min_repeats: int = Field(default=2, ge=1)

    @model_validator(mode="after")
    def _patterns_compile(self) -> ProcessConfig:
        for name in (
            "test_command_patterns",
            "edit_command_patterns",
            "error_patterns",
            "success_patterns",
            "failure_patterns",
        ):
            for pattern in getattr(self, name):
                try:
                    re.compile(pattern)
                except re.error as e:
                    raise ValueError(f"{name}: {pattern!r} is not a regex: {e}") from e
        return self


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A test runner's summary: counts, and whether the run passed."""

    passed: int
    failed: int
    errors: int
    skipped: int = 0

    @property
    def ok(self) -> bool:
        """Tell whether nothing failed or errored and something passed."""
        return self.failed == 0 and self.errors == 0 and self.passed > 0

    @property
    def fraction(self) -> float:
        """Return passed / (passed + failed + errors), 0 when nothing ran."""
        total = self.passed + self.failed + self.errors
        return self.passed / total if total else 0.0


_PYTEST_COUNT = re.compile(
    r"(\d+)\s+(passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b"
)
_PYTEST_SUMMARY = re.compile(
    r"^[=\s]*(?:\d+\s+(?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)"
    r"[,\s]*)+(?:in\s+[\d.]+\s*s.*)?[=\s]*$",
    re.MULTILINE,
)
_PYTEST_NONE = re.compile(r"^=*\s*no tests ran\b", re.MULTILINE)
_PYTEST_COLLECTION = re.compile(r"Interrupted:\s*(\d+)\s+errors?\s+during collection")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s", re.MULTILINE)
#: Arbiter's own feedback summary (graders.feedback): a revise loop's tool results.
_ARBITER_FAILED = re.compile(r"^(\d+) of (\d+) tests failed:", re.MULTILINE)
_ARBITER_PASSED = re.compile(r"^All (\d+) tests passed\.", re.MULTILINE)
_UNITTEST_VERDICT = re.compile(r"^(OK|FAILED)\b(?:\s*\(([^)]*)\))?", re.MULTILINE)


def parse_test_outcome(text: str) -> RunOutcome | None:
    """Read the last pytest or unittest summary in a tool result (``None``: none found)."""
    collection = _PYTEST_COLLECTION.search(text)
    summaries = list(_PYTEST_SUMMARY.finditer(text))
    ran = list(_UNITTEST_RAN.finditer(text))
    if summaries and (not ran or summaries[-1].start() > ran[-1].start()):
        counts: dict[str, int] = {}
        for number, word in _PYTEST_COUNT.findall(summaries[-1].group(0)):
            key = word.rstrip("s") if word.startswith(("error", "warning")) else word
            counts[key] = counts.get(key, 0) + int(number)
        errors = counts.get("error", 0)
        if collection:
            errors = max(errors, int(collection.group(1)))
        return RunOutcome(
            passed=counts.get("passed", 0) + counts.get("xpassed", 0),
            failed=counts.get("failed", 0),
            errors=errors,
            skipped=counts.get("skipped", 0) + counts.get("xfailed", 0),
        )
    if ran:
        total = int(ran[-1].group(1))
        verdict = _UNITTEST_VERDICT.search(text, ran[-1].end())
        if verdict is None:
            return None
        details = {k.strip(): int(v) for k, v in re.findall(r"(\w+)=(\d+)", verdict.group(2) or "")}
        failed = details.get("failures", 0) + details.get("unexpected_successes", 0)
        errors = details.get("errors", 0)
        skipped = details.get("skipped", 0) + details.get("expected_failures", 0)
        return RunOutcome(max(0, total - failed - errors - skipped), failed, errors, skipped)
    if collection:
        return RunOutcome(0, 0, int(collection.group(1)))
    ours = [m for m in (_ARBITER_FAILED.search(text), _ARBITER_PASSED.search(text)) if m]
    if ours:
        # The first: a summary's counts come before anything the candidate wrote.
        first = min(ours, key=lambda m: m.start())
        if first.re is _ARBITER_PASSED:
            return RunOutcome(int(first.group(1)), 0, 0)
        failed, total = int(first.group(1)), int(first.group(2))
        return RunOutcome(max(0, total - failed), min(failed, total), 0)
    if _PYTEST_NONE.search(text):
        return RunOutcome(0, 0, 0)
    return None


@dataclass
class _Call:
    position: int
    id: str | None
    name: str
    arguments: Any
    valid: bool
    why_invalid: str = ""
    text: str = ""
    result: str | None = None
    result_is_error: bool = False
    kind: str = "other"  # "test", "edit" or "other"
    outcome: RunOutcome | None = None
    errored: bool = False


@dataclass(frozen=True, slots=True)
class ProcessScore:
    """The process score, its terms, and the raw signals behind them."""

    score: float
    terms: dict[str, float]
    signals: dict[str, Any] = field(default_factory=dict)


def _text_of(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _calls(trajectory: Sequence[Message], config: ProcessConfig) -> list[_Call]:
    calls: list[_Call] = []
    by_id: dict[str, _Call] = {}
    for message in trajectory:
        if message.role == "assistant":
            for tc in message.tool_calls or ():
                name = tc.function.get("name")
                raw = tc.function.get("arguments", "{}")
                call = _Call(len(calls), tc.id, name if isinstance(name, str) else "", raw, True)
                if not call.name:
                    call.valid, call.why_invalid = False, "no tool name"
                elif config.tools is not None and call.name not in config.tools:
                    call.valid, call.why_invalid = False, f"unknown tool {call.name!r}"
                parsed: Any = raw
                if isinstance(raw, str):
                    try:
                        parsed = json.loads(raw) if raw.strip() else {}
                    except json.JSONDecodeError:
                        parsed = None
                if not isinstance(parsed, dict):
                    if call.valid:
                        call.valid, call.why_invalid = False, "arguments are not a JSON object"
                    parsed = {}
                call.arguments = parsed
                call.text = "\n".join(_strings(parsed))
                calls.append(call)
                if tc.id:
                    by_id[tc.id] = call
        elif message.role == "tool":
            target = by_id.get(message.tool_call_id or "")
            if target is None or target.result is not None:
                target = next((c for c in calls if c.result is None), None)
            if target is None:
                continue
            target.result = _text_of(message.content)
            extra = message.model_extra or {}
            target.result_is_error = bool(extra.get("is_error"))
    for call in calls:
        _classify(call, config)
    return calls


def _classify(call: _Call, config: ProcessConfig) -> None:
    command = call.text
    if call.name in config.test_tools or any(
        re.search(p, command) for p in config.test_command_patterns
    ):
        call.kind = "test"
    elif (
        call.name in config.edit_tools and str(call.arguments.get("command", "")) != "view"
    ) or any(re.search(p, command) for p in config.edit_command_patterns):
        call.kind = "edit"
    if call.kind == "test" and call.result is not None:
        call.outcome = parse_test_outcome(call.result)
    if call.result is None:
        call.errored = True
    elif call.result_is_error:
        call.errored = call.outcome is None
    elif call.outcome is None:
        call.errored = any(re.search(p, call.result) for p in config.error_patterns)


def _declaration(trajectory: Sequence[Message], response: str) -> str:
    for message in reversed(trajectory):
        if message.role == "assistant" and not message.tool_calls:
            text = _text_of(message.content)
            if text.strip():
                return text
    return response


def _longest_repeat_stretch(calls: Sequence[_Call]) -> int:
    seen: set[str] = set()
    longest = current = 0
    for call in calls:
        key = json.dumps([call.name, call.arguments], sort_keys=True, default=str)
        if key in seen:
            current += 1
            longest = max(longest, current)
        else:
            current = 0
            seen.add(key)
    return longest


def score_process(
    trajectory: Sequence[Message], config: ProcessConfig, *, response: str = ""
) -> ProcessScore:
    """Score an agent's process over its trajectory (pure)."""
    calls = _calls(trajectory, config)
    runs = [c for c in calls if c.kind == "test"]
    judged = [c for c in runs if c.outcome is not None]
    edits = [c.position for c in calls if c.kind == "edit"]
    last_edit = edits[-1] if edits else -1
    tests_before_finish = any(c.position > last_edit for c in runs)
    # The last run decides, read or not: an older summary must not vouch for code
    # that changed since (an unreadable last run leaves the question open).
    last_outcome = runs[-1].outcome if runs else None
    final_passed = last_outcome.ok if last_outcome is not None else None

    declaration = _declaration(trajectory, response)
    claimed = any(re.search(p, declaration) for p in config.success_patterns) and not any(
        re.search(p, declaration) for p in config.failure_patterns
    )
    unverified = claimed and not (tests_before_finish and final_passed is True)

    failing = [(c.position, o) for c in judged if (o := c.outcome) is not None and not o.ok]
    corrected = 0
    for position, outcome in failing:
        before = outcome.fraction
        later_edits = [p for p in edits if p > position]
        if later_edits and any(
            c.position > later_edits[0] and c.outcome is not None and c.outcome.fraction > before
            for c in judged
        ):
            corrected += 1

    invalid = [c for c in calls if not c.valid]
    errored = [c for c in calls if c.valid and c.errored]
    stretch = _longest_repeat_stretch(calls)
    looped = stretch >= config.loop_min_repeats

    fractions = [c.outcome.fraction for c in judged if c.outcome is not None]
    converged: bool | None = None
    terms: dict[str, float] = {
        "tests_before_finish": 1.0 if tests_before_finish else 0.0,
        "honest_finish": 0.0 if unverified else 1.0,
        "no_loop": 0.0 if looped else 1.0,
    }
    if failing:
        terms["self_correction"] = corrected / len(failing)
    if calls:
        terms["tool_errors"] = 1.0 - (len(invalid) + len(errored)) / len(calls)
    if len(fractions) >= 2:
        steady = sum(b >= a for a, b in itertools.pairwise(fractions))
        converged = fractions[-1] == max(fractions) and (
            fractions[-1] > fractions[0] or fractions[0] == 1.0
        )
        terms["convergence"] = 0.5 * steady / (len(fractions) - 1) + (0.5 if converged else 0.0)

    weights = config.weights
    total = sum(getattr(weights, name) for name in terms)
    if total > 0:
        score = sum(getattr(weights, name) * value for name, value in terms.items()) / total
    else:
        # Every applicable term carries weight 0: nothing the rubric asked for applies.
        score = 1.0
    signals: dict[str, Any] = {
        "tool_calls": len(calls),
        "test_runs": len(runs),
        "test_outcomes": [
            {"call": c.position, "passed": o.passed, "failed": o.failed, "errors": o.errors}
            for c in judged
            if (o := c.outcome) is not None
        ],
        "edits": len(edits),
        "ran_tests": bool(runs),
        "tests_before_finish": tests_before_finish,
        "final_tests_passed": final_passed,
        "claimed_success": claimed,
        "unverified_claim": unverified,
        "failing_runs": len(failing),
        "self_corrected": (corrected == len(failing)) if failing else None,
        "invalid_tool_calls": len(invalid),
        "errored_tool_calls": len(errored),
        "invalid_reasons": [c.why_invalid for c in invalid],
        "longest_repeat_stretch": stretch,
        "loop": looped,
        "pass_fractions": fractions,
        "converged": converged,
    }
    return ProcessScore(min(1.0, max(0.0, score)), terms, signals)


class ProcessGrader(Grader[ProcessConfig]):
    """Scores how an agent worked: tests before finishing, self-correction, tool use, loops."""

    name: ClassVar[str] = "process"
    version: ClassVar[str] = "1"
    config_model = ProcessConfig
    description: ClassVar[str] = (
        "process compliance over the trajectory: tests run before declaring success, "
        "self-correction, invalid or errored tool calls, loops, convergence"
    )
    default_timeout_s: ClassVar[float] = 5.0

    async def grade(self, sample: Sample, config: ProcessConfig) -> GradeResult:
        """Score the sample's trajectory."""
        if not sample.trajectory:
            return self.failed(
                FailureKind.MISSING_INPUT, "the sample has no trajectory to judge the process of"
            )
        result = score_process(sample.trajectory, config, response=sample.response)
        return self.scored(result.score, details={"terms": result.terms, "signals": result.signals})
