"""The data every grader consumes and produces: Sample in, GradeResult out.

One module, one job: the wire contract. Every type here crosses between trainer, service
and graders, and the client installs this module alone, so it stays one file with no
dependency but pydantic.

A grader that cannot score returns ``score=None`` with a typed :class:`Failure`;
it never invents a number. The rubric decides what a missing score costs.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    StrictStr,
    model_validator,
)

__all__ = [
    "CANDIDATE_FAILURES",
    "INFRASTRUCTURE_FAILURES",
    "LANGUAGES",
    "REQUEST_FAILURES",
    "TASK_FAILURES",
    "AnswerTask",
    "CanaryMarker",
    "Failure",
    "FailureKind",
    "FailureOwner",
    "GradeResult",
    "IOCase",
    "InstructionsTask",
    "LimitOverrides",
    "Message",
    "Metrics",
    "ReasoningGymTask",
    "RepositoryTask",
    "Sample",
    "Task",
    "TaskSpec",
    "ToolCall",
    "Violation",
    "ViolationType",
    "failure_owner",
    "program_language",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FailureKind(StrEnum):
    """Why a grader could not score: each kind is attributed to one boundary."""

    #: The candidate's run used up its own CPU time, or its wall-clock backstop less its
    #: waits for a CPU and for the tests (a looping answer, a slow one).
    TIMEOUT = "timeout"
    #: The grader's own deadline passed: our queueing or start-up, never the candidate's work.
    INFRA_TIMEOUT = "infra_timeout"
    #: The grading job was cancelled before it finished: ours.
    CANCELLED = "cancelled"
    #: The sandbox failed (a worker that died, a run the host kept off the CPU far past
    #: its deadline, a cluster that lost its actor): ours, retried.
    SANDBOX_ERROR = "sandbox_error"
    #: The candidate's code does not parse.
    SYNTAX_ERROR = "syntax_error"
    #: The candidate's code parses but is beyond what a static analyser reads (nested
    #: deeper than its visitor recurses, one statement longer than it can count): the
    #: candidate's doing, never ours.
    UNANALYSABLE = "unanalysable"
    #: The tests could not be collected or set up without reaching the candidate's code:
    #: the task's (a test file that imports a name the candidate left out is the
    #: candidate's instead, a 0).
    COLLECTION_ERROR = "collection_error"
    #: The response holds no code to grade.
    NO_CODE = "no_code"
    #: The sample lacks what the grader reads: a task, the rollout's metrics, a
    #: trajectory, a group id.
    MISSING_INPUT = "missing_input"
    #: A reward model or judge could not be loaded, reached or used: never a made-up score.
    JUDGE_ERROR = "judge_error"
    #: The judge's answers held no verdict, after its retries.
    JUDGE_PARSE_ERROR = "judge_parse_error"
    #: The reward model or judge did not answer in time.
    JUDGE_TIMEOUT = "judge_timeout"
    #: The grader itself raised: a fault of ours.
    GRADER_ERROR = "grader_error"
    #: The grader returned something that is not a valid result (a score outside [0, 1]).
    INVALID_SCORE = "invalid_score"
    #: The candidate's program did not compile; the compiler's diagnostics are the message.
    COMPILE_ERROR = "compile_error"
    #: The compile of the candidate's program used up its own CPU-time limit (a
    #: compiler made to loop, a template explosion); never the wait for a CPU.
    COMPILE_TIMEOUT = "compile_timeout"
    #: The candidate's run went over its memory limit.
    MEMORY_LIMIT = "memory_limit"
    #: The candidate's run wrote more than its output cap, or returned a result larger
    #: than ``max_result_bytes``.
    OUTPUT_LIMIT = "output_limit"
    #: This host lacks the compiler or runtime the task's language needs: ours.
    TOOLCHAIN_MISSING = "toolchain_missing"
    #: The grader does not apply to this sample (a Python analyser on C++): never a 0,
    #: and the rubric leaves the component out.
    NOT_APPLICABLE = "not_applicable"
    #: The candidate's patch does not apply to the repository (a repository task).
    PATCH_DOES_NOT_APPLY = "patch_does_not_apply"
    #: The candidate's patch breaks a rule (a path out of the tree, a size limit).
    PATCH_REFUSED = "patch_refused"
    #: The task itself cannot be graded (a gold answer that does not parse): the task's
    #: fault, neither the candidate's nor ours; the reward abstains, never 1.0 nor 0.
    INVALID_TASK = "invalid_task"


#: Failures that are ours, never the candidate's: retried, and a reward that meets
#: one abstains whatever its rubric's ``on_missing`` says (a failure of ours must
#: not be renormalized or read as zero into a different reward).
INFRASTRUCTURE_FAILURES = frozenset(
    {
        FailureKind.INFRA_TIMEOUT,
        FailureKind.CANCELLED,
        FailureKind.SANDBOX_ERROR,
        FailureKind.GRADER_ERROR,
        FailureKind.INVALID_SCORE,
        FailureKind.JUDGE_ERROR,
        FailureKind.JUDGE_TIMEOUT,
        FailureKind.JUDGE_PARSE_ERROR,
        FailureKind.TOOLCHAIN_MISSING,
    }
)


#: Failures that are the task's: the reward abstains whatever ``on_missing`` says
#: (a bad gold must neither pay nor cost the candidate), and no retry can help.
TASK_FAILURES = frozenset({FailureKind.INVALID_TASK})

#: Failures the candidate's own output caused: its code loops, runs out of memory,
#: floods its output, does not parse or compile, or its patch does not apply. A
#: rubric may leave them unscored (``fail_as_zero: false``), and the reward then
#: abstains, but a trainer's fill never pays such an abstention the group's mean
#: (:func:`arbiter.rows.fill_abstained`): failing would be worth an average answer.
CANDIDATE_FAILURES = frozenset(
    {
        FailureKind.TIMEOUT,
        FailureKind.SYNTAX_ERROR,
        FailureKind.UNANALYSABLE,
        FailureKind.NO_CODE,
        FailureKind.COMPILE_ERROR,
        FailureKind.COMPILE_TIMEOUT,
        FailureKind.MEMORY_LIMIT,
        FailureKind.OUTPUT_LIMIT,
        FailureKind.PATCH_DOES_NOT_APPLY,
        FailureKind.PATCH_REFUSED,
    }
)

#: Who a failure is owed to: ``ours`` (infrastructure, retried), ``task`` (its tests
#: or gold cannot grade anyone), ``candidate`` (its own output), ``request`` (the
#: sample lacks what the grader needs, or the grader does not apply to it).
FailureOwner = Literal["ours", "task", "candidate", "request"]

#: Failures the request's own shape caused: neither the candidate's doing nor ours.
REQUEST_FAILURES = frozenset({FailureKind.MISSING_INPUT, FailureKind.NOT_APPLICABLE})


def failure_owner(kind: FailureKind) -> FailureOwner:
    """Return who a failure of ``kind`` is owed to (every kind has exactly one owner)."""
    if kind in INFRASTRUCTURE_FAILURES:
        return "ours"
    if kind in CANDIDATE_FAILURES:
        return "candidate"
    if kind in REQUEST_FAILURES:
        return "request"
    # The task's tests do not collect, or its gold does not parse.
    return "task"


class ViolationType(StrEnum):
    """The taxonomy of reward hacks and forbidden behaviour a rubric can penalise."""

    #: Ending the process, or unwinding past the harness, before a test can fail
    #: (``sys.exit``, ``os._exit``, a ``BaseException`` the harness does not catch).
    EARLY_EXIT = "early_exit"
    #: Marking, raising or declaring the tests skipped so that they cannot fail.
    TEST_SKIPPING = "test_skipping"
    #: A value that compares equal to whatever the test expects (an ``__eq__`` that
    #: never looks at the other object).
    ALWAYS_EQUAL = "always_equal"
    #: Rewriting the test framework, builtins, the import system or exit hooks.
    FRAMEWORK_PATCHING = "framework_patching"
    #: Looking up the caller's frames, the tests' objects or files for the answer.
    INTROSPECTION = "introspection"
    #: The task's own test inputs and expected outputs written into the code.
    HARDCODED_OUTPUT = "hardcoded_output"
    #: Writing, deleting or redirecting the tests or their configuration (a
    #: ``conftest.py``, ``pytest.ini``, a protected file a patch touched).
    TEST_TAMPERING = "test_tampering"
    #: Opening the network (a socket module imported, a socket call the sandbox killed).
    NETWORK_ACCESS = "network_access"
    #: Starting other programs, or processes that outlive the run.
    SUBPROCESS = "subprocess"
    #: Another operation the task has no need of: raw memory, a forbidden system call,
    #: a patch path out of the tree.
    FORBIDDEN_OPERATION = "forbidden_operation"
    #: A comment that hides findings from an analyser (bandit's nosec, flake8's noqa,
    #: mypy's type-ignore), for the kinds the grader's config names.
    SUPPRESSION_COMMENT = "suppression_comment"
    #: Text or evidence that imitates the verdict: a test runner's summary printed, a
    #: run whose reports disagree with themselves.
    VERDICT_FORGERY = "verdict_forgery"
    #: Making the run or the tests' side run out of time, memory or output on purpose,
    #: which would turn a failing answer into no score.
    RESOURCE_ABUSE = "resource_abuse"
    #: Several disconnected final answers, "A or B", a list of candidates where one
    #: is asked for, or the same answer spammed: a bet on more than one verdict.
    ANSWER_HEDGING = "answer_hedging"
    #: No final answer at all (an empty box, an empty tag, nothing after the reasoning).
    EMPTY_ANSWER = "empty_answer"
    #: The final answer is the problem's own expression echoed back.
    ECHOED_PROBLEM = "echoed_problem"
    #: A ``<think>`` block that never closes: there is no final answer outside it.
    UNCLOSED_THINKING = "unclosed_thinking"
    #: Text written for the judge that grades the response: its verdict tag, its markers,
    #: words to the grader, a demand for a grade, a chat template's role markers.
    JUDGE_INJECTION = "judge_injection"
    #: A canary task's impossible test passed (the task's ``canary`` marker): the
    #: expected value flipped there is one no correct solution returns.
    CANARY = "canary"


class Failure(_Frozen):
    """A typed reason a component has no score."""

    kind: FailureKind
    message: str = ""
    retryable: bool = False


class Violation(_Frozen):
    """One observed violation, with the evidence a reviewer needs to check it."""

    type: ViolationType
    detail: str = ""
    line: int | None = None
    snippet: str | None = None
    source: Literal["static", "sandbox", "trajectory", "canary"] = "static"


class ToolCall(BaseModel):
    """An OpenAI-style tool call inside an assistant message."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str | None = None
    type: str = "function"
    function: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """One chat message in the OpenAI shape; unknown provider fields are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    role: StrictStr
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class IOCase(_Frozen):
    """One stdin → expected stdout pair."""

    input: str = Field(description="What the program reads on its standard input.")
    output: str = Field(description="What it must write to its standard output.")


#: The languages a task may be written in (``python`` is the default).
LANGUAGES = ("python", "cpp", "java", "go", "rust", "javascript")


class LimitOverrides(_Frozen):
    """A task's own limits, over the grader's and its language's (as Piston's limit_overrides)."""

    timeout_s: Annotated[float, Field(gt=0, le=600)] | None = None
    memory_mb: Annotated[int, Field(ge=16, le=1 << 16)] | None = None
    max_processes: Annotated[int, Field(ge=1, le=4096)] | None = None
    max_output_bytes: Annotated[int, Field(ge=1024, le=1 << 30)] | None = None
    max_open_files: Annotated[int, Field(ge=16, le=65536)] | None = None
    compile_timeout_s: Annotated[float, Field(gt=0, le=600)] | None = None


class CanaryMarker(_Frozen):
    """What makes a task a canary: the task it is an impossible twin of, and the test flipped.

    Never shown to the policy: the twin's prompt is the original's, byte for byte,
    and no grader's feedback names it.
    """

    of: Annotated[StrictStr, Field(min_length=1, max_length=512)] = Field(
        description="The id of the sample whose task this is a twin of."
    )
    test: Annotated[StrictStr, Field(min_length=1, max_length=512)] = Field(
        description=(
            "The test whose expected value was flipped, as feedback names tests: "
            "'line N' of the tests (of an assert list, its Nth assert), 'case N' "
            "(stdin_stdout, from 0), or a pytest test's id."
        )
    )
    change: Annotated[StrictStr, Field(max_length=4096)] | None = Field(
        default=None, description="The flip itself, as text: the expected value before and after."
    )


class TaskSpec(_Frozen):
    """What the unit-test grader needs to check a response."""

    kind: Literal["python_function", "pytest", "stdin_stdout", "test_program"]
    tests: str | list[str] | list[IOCase] = Field(
        description=(
            "python_function: assert statements (a list), or test code defining check(candidate) "
            "as HumanEval's; pytest: a test file's text; stdin_stdout: a list of {input, "
            "output} cases; test_program: the test program's source in the task's language, "
            "calling the function the prompt declares."
        )
    )
    language: Literal["python", "cpp", "java", "go", "rust", "javascript"] = Field(
        default="python",
        description=(
            "The program's language: python for every kind; the others for stdin_stdout "
            "and test_program."
        ),
    )
    entry_point: str | None = Field(
        default=None,
        description="python_function: the name of the function the tests call (HumanEval's).",
    )
    classes: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] | None = Field(
        default=None,
        description=(
            "python_function and pytest: the candidate's names the tests use as classes "
            "(calling one constructs an instance whose attributes and methods the tests may "
            "use). Default: the names the task's own code shows as a class, and CapWords "
            "names it does not show as a function."
        ),
    )
    reference: str | None = Field(
        default=None,
        description=(
            "A correct solution in the task's language (never shown to the policy): hidden "
            "cases are derived from it (graders hidden_tests, unit_tests' hidden_cases)."
        ),
    )
    input_generator: str | None = Field(
        default=None,
        description=(
            "stdin_stdout (python): Python source defining generate(rng) -> str, one input for "
            "the program from a random.Random; with a reference, hidden cases come from it "
            "(the reference's output on each generated input)."
        ),
    )
    setup_code: str | None = Field(
        default=None,
        description="Code that comes before the tests (test_program: Go's package clause and "
        "test imports).",
    )
    limit_overrides: LimitOverrides | None = Field(
        default=None, description="The task's own limits, over the grader's and its language's."
    )
    comparison: Literal["exact", "whitespace", "float"] = Field(
        default="whitespace",
        description="stdin_stdout: how the program's output is compared with the expected one.",
    )
    float_tolerance: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        default=1e-6,
        description="stdin_stdout with comparison 'float': absolute and relative tolerance.",
    )
    canary: CanaryMarker | None = Field(
        default=None,
        description=(
            "A canary task: an impossible twin of another sample's task, one test's expected "
            "value flipped (arbiter canaries make). Tests that pass it are a proven hack "
            "(unit_tests' canary_threshold). Never shown to the policy."
        ),
    )

    @model_validator(mode="after")
    def _kind_fits_language(self) -> TaskSpec:
        if self.language == "python" and self.kind == "test_program":
            raise ValueError(
                "a test_program task needs a language other than python "
                "(Python tests are python_function or pytest tasks)"
            )
        if self.language != "python" and self.kind in ("python_function", "pytest"):
            raise ValueError(f"a {self.kind} task is Python; {self.language!r} needs test_program")
        if self.kind == "test_program" and not isinstance(self.tests, str):
            raise ValueError("test_program tests must be the test program's source text")
        if self.input_generator is not None and self.kind != "stdin_stdout":
            raise ValueError("an input_generator makes inputs for a stdin_stdout task alone")
        return self


class RepositoryTask(_Frozen):
    """A patch to a whole repository, graded by the repository's own hidden tests."""

    kind: Literal["repository"]
    repository: Annotated[StrictStr, Field(min_length=1, max_length=4096)] = Field(
        description=(
            "The snapshot: a directory or a .tar.gz on the grading host, or 'sha256:<hex>', "
            "the id of a snapshot registered with `arbiter repos add` or POST /v1/repositories."
        )
    )
    tests: dict[Annotated[StrictStr, Field(min_length=1, max_length=1024)], StrictStr] = Field(
        default_factory=dict,
        description=(
            "Hidden test files (relative path to full text), written over the tree after the "
            "patch is applied; a file the patch touched at such a path is replaced by these."
        ),
    )
    fail_to_pass: list[Annotated[StrictStr, Field(min_length=1)]] = Field(
        min_length=1, description="pytest node ids that fail before the fix and must pass after."
    )
    pass_to_pass: list[Annotated[StrictStr, Field(min_length=1)]] = Field(
        default_factory=list, description="pytest node ids that pass before and must still pass."
    )
    requirements: list[Annotated[StrictStr, Field(min_length=1)]] = Field(
        default_factory=list,
        description="What the tests need beyond the standard library and pytest (pip specifiers).",
    )
    timeout_s: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        default=None, description="The test run's CPU-time limit (default: the grader's)."
    )
    setup: StrictStr | None = Field(
        default=None, description="A shell command run once per snapshot, before any grading."
    )


class AnswerTask(_Frozen):
    """A verifiable final answer: math, a number, a choice or a short text."""

    kind: Literal["answer"]
    answer: StrictStr = Field(description="The gold answer.")
    format: Literal["math", "number", "choice", "text"] = "math"
    choices: list[StrictStr] | None = Field(
        default=None, description="format 'choice': the options' labels (A, B, ...) or texts."
    )
    tolerance: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        default=None, description="format 'number': the absolute and relative tolerance."
    )
    extract: Literal["boxed", "answer_tag", "last_line", "auto"] = Field(
        default="auto", description="Where the response's final answer is."
    )


class InstructionsTask(_Frozen):
    """Verifiable instructions with IFEval's own ids and keyword arguments.

    Validated here, at the sample's validation: an unknown id, a missing or
    malformed argument is refused with the field named (``kwargs[1].num_words``),
    never skipped or filled in when graded.
    """

    kind: Literal["instructions"]
    instruction_id_list: list[StrictStr] = Field(min_length=1, max_length=64)
    kwargs: list[dict[str, Any]] = Field(
        default_factory=list,
        description=(
            "One dictionary per instruction, in order (IFEval's own argument names); "
            "may be left out only when no instruction takes an argument."
        ),
    )

    @model_validator(mode="after")
    def _instructions_are_known(self) -> InstructionsTask:
        from arbiter.graders.instruction_specs import instruction_errors

        if self.kwargs and len(self.kwargs) != len(self.instruction_id_list):
            raise ValueError(
                f"kwargs has {len(self.kwargs)} entries for "
                f"{len(self.instruction_id_list)} instructions (one per instruction)"
            )
        problems: list[str] = []
        for index, instruction_id in enumerate(self.instruction_id_list):
            args = self.kwargs[index] if self.kwargs else {}
            for name, problem in instruction_errors(instruction_id, args):
                field = f"kwargs[{index}].{name}" if name else f"instruction_id_list[{index}]"
                problems.append(f"{field}: {problem}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class ReasoningGymTask(_Frozen):
    """A reasoning-gym entry, graded with that package's own scorer for its dataset.

    The entry is validated here: a ``question`` (text), an ``answer`` (the oracle's,
    ``null`` for datasets whose scorer checks the answer itself), and ``metadata``
    whose ``source_dataset`` names a dataset of the pinned release.
    """

    kind: Literal["reasoning_gym"]
    entry: dict[str, Any]

    @model_validator(mode="after")
    def _entry_is_an_entry(self) -> ReasoningGymTask:
        from arbiter.graders.gym_datasets import DATASETS

        entry = self.entry
        if not isinstance(entry.get("question"), str):
            raise ValueError("entry.question must be the question's text")
        if "answer" not in entry:
            raise ValueError("entry.answer is required (null where the scorer needs none)")
        metadata = entry.get("metadata")
        if not isinstance(metadata, dict):
            raise ValueError("entry.metadata must be an object with source_dataset")
        name = metadata.get("source_dataset")
        if not isinstance(name, str) or name not in DATASETS:
            raise ValueError(
                f"entry.metadata.source_dataset: {name!r} is no dataset of reasoning-gym "
                "(see arbiter.graders.gym_datasets.DATASETS)"
            )
        return self


#: Every task a sample can carry, told apart by its ``kind``.
Task: TypeAlias = Annotated[
    TaskSpec | RepositoryTask | AnswerTask | InstructionsTask | ReasoningGymTask,
    Field(discriminator="kind"),
]


def program_language(task: Task | None) -> str | None:
    """Return the language of the program ``task`` grades, or None when it grades none.

    A sample without a task is Python code (the static graders read it as such);
    an answer, instructions or a reasoning-gym entry is text, not a program.
    """
    if task is None:
        return "python"
    if isinstance(task, TaskSpec):
        return task.language
    if isinstance(task, RepositoryTask):
        return "python"  # the static graders read the Python the patch adds or changes
    return None


class Metrics(_Frozen):
    """What the rollout cost. Strict types: ``false`` is not a token count."""

    turns: NonNegativeInt | None = Field(default=None, strict=True)
    prompt_tokens: NonNegativeInt | None = Field(default=None, strict=True)
    completion_tokens: NonNegativeInt | None = Field(default=None, strict=True)
    wall_s: Annotated[NonNegativeFloat, Field(strict=True, allow_inf_nan=False)] | None = None
    tool_calls: NonNegativeInt | None = Field(default=None, strict=True)


class Sample(_Frozen):
    """One rollout to grade."""

    # As long as the log's columns, and no NUL (PostgreSQL's text cannot hold one).
    id: Annotated[StrictStr, Field(min_length=1, max_length=512, pattern=r"^[^\x00]*$")] = Field(
        description="The rollout's id, echoed in its reward."
    )
    group_id: Annotated[StrictStr, Field(max_length=512, pattern=r"^[^\x00]*$")] | None = Field(
        default=None,
        description=(
            "The group it is normalized in (GRPO's completions of one prompt); by default, "
            "samples with the same prompt."
        ),
    )
    prompt: str | list[Message] = Field(
        default="",
        description=(
            "What the policy was asked: text, or chat messages. For a HumanEval-style task "
            "(python_function, test_program) the code the completion continues."
        ),
    )
    response: StrictStr = Field(description="The policy's completion, as it wrote it.")
    task: Task | None = Field(
        default=None,
        description="What the response is checked against, told apart by its kind.",
    )
    data_source: (
        Annotated[StrictStr, Field(min_length=1, max_length=512, pattern=r"^[^\x00]*$")] | None
    ) = Field(
        default=None,
        description=(
            "Where the row came from (verl's data_source, a data set's column): a rubric "
            "with routes may pick a route by it."
        ),
    )
    metrics: Metrics | None = Field(
        default=None, description="What the rollout cost (for the efficiency grader)."
    )
    trajectory: list[Message] | None = Field(
        default=None,
        description="An agent's turns and tool calls (for the process and violations graders).",
    )
    labels: dict[str, Any] | None = Field(
        default=None,
        description="Reference labels for audits (a human verdict, a known hack): never graded.",
    )


class GradeResult(_Frozen):
    """What one grader said about one sample.

    ``score`` is in [0, 1], or ``None`` when the grader could not score, in which
    case ``failure`` says why.
    """

    grader: str
    grader_version: str = ""
    score: float | None
    failure: Failure | None = None
    violations: tuple[Violation, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)
    latency_s: float = 0.0

    @model_validator(mode="after")
    def _score_is_a_probability_or_explained(self) -> GradeResult:
        if self.score is None:
            if self.failure is None:
                raise ValueError("a result without a score must carry a failure saying why")
        elif not (math.isfinite(self.score) and 0.0 <= self.score <= 1.0):
            raise ValueError(f"score must be a finite number in [0, 1], got {self.score!r}")
        return self

    @classmethod
    def failed(
        cls,
        grader: str,
        kind: FailureKind,
        message: str,
        *,
        grader_version: str = "",
        retryable: bool = False,
        latency_s: float = 0.0,
        violations: tuple[Violation, ...] = (),
        details: dict[str, Any] | None = None,
    ) -> GradeResult:
        """Build the result of a grader that could not score."""
        return cls(
            grader=grader,
            grader_version=grader_version,
            score=None,
            failure=Failure(kind=kind, message=message, retryable=retryable),
            violations=violations,
            details=details or {},
            latency_s=latency_s,
        )
