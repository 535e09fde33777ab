"""The bandit grader: bandit's findings on the response's code, in-process, weighted into a score.

Bandit runs through its Python API on the code string (no subprocess, no temporary
file): its test set is built once per selection of tests, and each analysis is one
``ast.parse`` plus one walk of bandit's node visitor (``bench/static.py``
measures it against the ``bandit`` CLI). Bandit keeps some
state in globals, so analyses run on one thread per process (the event loop's,
or a pool worker's).

The score is a pure function of the findings (:func:`score_findings`): every
finding adds ``severity_weights[severity] * confidence_weights[confidence]`` to a
penalty, and the penalty maps to (0, 1] by

* ``exponential``: ``exp(-penalty / scale)`` (one HIGH/HIGH finding: 0.37), or
* ``reciprocal``: ``1 / (1 + penalty / scale)`` (one HIGH/HIGH finding: 0.5).

Neither mapping reaches 0, so more findings always score lower than fewer.

``# nosec`` is **not** honoured by default: the code is model-written, and a
policy rewarded for quiet bandit output would learn to append ``# nosec``. Every
``# nosec`` comment is listed in ``details`` (and becomes a
``suppression_comment`` violation when ``nosec_violation`` is set); findings on
such lines are marked ``under_nosec``.

The cache lives in :mod:`arbiter.graders.static_analysis`; the process pool shared
with the radon grader in :mod:`arbiter.graders.analysis_pool`.

One module, one concept: the bandit grader — running bandit in-process, the ``# nosec``
policy, the score and the config change together, and nothing else uses them.
"""

from __future__ import annotations

import io
import logging
import math
import tokenize
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import Field, field_validator

from arbiter.graders.analysis_pool import shared_pool
from arbiter.graders.base import Grader, GraderConfig, former_name
from arbiter.graders.repository.changes import code_to_read
from arbiter.graders.sandbox.syntax import parse_module
from arbiter.graders.static_analysis import StaticAnalyzer, analyse_response
from arbiter.graders.types import (
    FailureKind,
    GradeResult,
    Sample,
    Violation,
    ViolationType,
    program_language,
)

# bandit loads every report formatter it has an entry point for when it is first
# imported, and stevedore logs an error for one whose optional dependency is
# missing ("Could not load 'sarif': No module named 'sarif_om'") on every start.
# This grader never formats a report; a failing *test plugin* is still logged.
_FORMATTERS = frozenset(ep.name for ep in entry_points(group="bandit.formatters"))


class _UnusedFormatterErrors(logging.Filter):
    """Drop stevedore's load errors of bandit's report formatters (unused here)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (
            record.msg == "Could not load %r: %s"
            and isinstance(args, tuple)
            and bool(args)
            and args[0] in _FORMATTERS
        )


logging.getLogger("stevedore.extension").addFilter(_UnusedFormatterErrors())

# bandit ships no type information; it is used from this module only. Imported
# after the filter above is in place: importing it loads the formatters.
from bandit.core import (  # type: ignore[import-untyped]  # noqa: E402
    blacklisting,
    extension_loader,
    manager,
    meta_ast,
    node_visitor,
    test_set,
)
from bandit.core.config import (  # type: ignore[import-untyped]  # noqa: E402
    BanditConfig as BanditCoreConfig,
)
from bandit.core.metrics import (  # type: ignore[import-untyped]  # noqa: E402
    Metrics as BanditMetrics,
)

__all__ = [
    "LEVELS",
    "BanditAnalysis",
    "BanditConfig",
    "BanditGrader",
    "BanditScore",
    "BanditSelection",
    "Finding",
    "NosecComment",
    "analyze_bandit",
    "known_test_ids",
    "score_findings",
    "warm_bandit",
]

logger = logging.getLogger("arbiter.graders.bandit")

# ---------------------------------------------------------------------------
# Bandit, in-process.
# ---------------------------------------------------------------------------

Level = Literal["UNDEFINED", "LOW", "MEDIUM", "HIGH"]
#: bandit's ranking of severity and confidence, lowest first.
LEVELS: tuple[Level, ...] = ("UNDEFINED", "LOW", "MEDIUM", "HIGH")

#: A path, not a bare name: bandit derives a module name from it and warns on a
#: bare name. The directory does not exist, so no real ``__init__.py`` is found.
_FILENAME = "/<response>/response.py"
_SNIPPET_LINES = 3
#: What a parser's refusal of a depth says: CPython cannot compile it either.
_TOO_DEEP_TO_PARSE = "the code is nested too deeply for Python's parser"


def known_test_ids() -> frozenset[str]:
    """Return every test id bandit knows: plugins (B1xx, B5xx, B6xx, B7xx) and blacklists."""
    ids = set(extension_loader.MANAGER.plugins_by_id)
    for tests in extension_loader.MANAGER.blacklist.values():
        ids.update(t["id"] for t in tests)
    return frozenset(ids)


@dataclass(frozen=True, slots=True)
class BanditSelection:
    """What changes bandit's findings: which tests run, and whether ``# nosec`` counts."""

    tests: tuple[str, ...] = ()
    skips: tuple[str, ...] = ()
    honor_nosec: bool = False


@dataclass(frozen=True, slots=True)
class Finding:
    """One bandit issue, with what a reviewer needs to check it."""

    test_id: str
    test_name: str
    severity: str
    confidence: str
    line: int
    line_range: tuple[int, ...]
    col: int
    text: str
    cwe: int
    snippet: str
    under_nosec: bool

    def as_detail(self) -> dict[str, Any]:
        """Return the JSON-ready form put in ``details``."""
        return {
            "test_id": self.test_id,
            "test_name": self.test_name,
            "severity": self.severity,
            "confidence": self.confidence,
            "line": self.line,
            "col": self.col,
            "text": self.text,
            "cwe": self.cwe,
            "snippet": self.snippet,
            "under_nosec": self.under_nosec,
        }


@dataclass(frozen=True, slots=True)
class NosecComment:
    """A ``# nosec`` comment in the code (bandit's own pattern)."""

    line: int
    text: str


@dataclass(frozen=True, slots=True)
class BanditAnalysis:
    """Everything one bandit run found; cached and sent across processes, so plain data."""

    findings: tuple[Finding, ...] = ()
    nosec: tuple[NosecComment, ...] = ()
    suppressed: int = 0
    plugin_errors: tuple[str, ...] = ()
    syntax_error: str | None = None
    unanalysable: str | None = None


class _PluginErrors(logging.Handler):
    """Collect the errors bandit logs when one of its plugins raises.

    bandit's tester catches a plugin's exception and only logs it; without this
    the findings of that plugin would silently be missing.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().splitlines()[0])


_PLUGIN_ERRORS = _PluginErrors()
logging.getLogger("bandit.core.tester").addHandler(_PLUGIN_ERRORS)


@dataclass(slots=True)
class _BanditRunner:
    """A built test set and the blacklist data that goes with it."""

    test_set: Any
    blacklist_config: Any = field(default=None)


_RUNNERS: dict[tuple[tuple[str, ...], tuple[str, ...]], _BanditRunner] = {}
_BANDIT_CONFIG: Any = None


def warm_bandit() -> None:
    """Build bandit's default test set: a fresh pool worker's first analysis pays no import."""
    _bandit_runner(BanditSelection())


def _bandit_runner(selection: BanditSelection) -> _BanditRunner:
    global _BANDIT_CONFIG
    key = (selection.tests, selection.skips)
    runner = _RUNNERS.get(key)
    if runner is None:
        if _BANDIT_CONFIG is None:
            _BANDIT_CONFIG = BanditCoreConfig()
        profile = {"include": set(selection.tests), "exclude": set(selection.skips)}
        tests = test_set.BanditTestSet(_BANDIT_CONFIG, profile)
        runner = _BanditRunner(tests, getattr(blacklisting.blacklist, "_config", None))
        _RUNNERS[key] = runner
    return runner


def _source_bytes(code: str) -> bytes:
    """Encode ``code`` as a file would be, honouring a PEP 263 coding cookie.

    bandit's file-level checks (trojansource) decode the bytes with the declared
    encoding, so the bytes must say what the text says.
    """
    utf8 = code.encode("utf-8", "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(utf8).readline)
    except SyntaxError:
        return utf8
    if encoding in ("utf-8", "utf-8-sig"):
        return utf8
    try:
        return code.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return utf8


def _nosec_comments(code: str, honor: bool) -> tuple[list[NosecComment], dict[int, set[str]]]:
    """Find ``# nosec`` comments with bandit's pattern.

    Returns the comments, and, when they are to be honoured, bandit's map of
    line -> test ids the comment silences (empty set: all of them).
    """
    if "nosec" not in code:  # the common case: skip tokenizing altogether
        return [], {}
    comments: list[NosecComment] = []
    lines: dict[int, set[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT and manager.NOSEC_COMMENT.search(tok.string):
                comments.append(NosecComment(tok.start[0], tok.string))
                if honor:
                    # bandit's own parser (private, but the only way to read
                    # the test ids exactly as bandit does).
                    lines[tok.start[0]] = manager._parse_nosec_comment(tok.string)
    except (tokenize.TokenError, SyntaxError):
        pass  # as bandit does: keep the comments found before the error
    return comments, lines


def _snippet(lines: Sequence[str], line_range: Sequence[int]) -> str:
    first = min(line_range) if line_range else 0
    last = min(max(line_range) if line_range else 0, first + _SNIPPET_LINES - 1)
    return "\n".join(lines[max(first, 1) - 1 : last]).strip("\n")


def _too_deep(code: str) -> BanditAnalysis:
    """Say which gave up on ``code``: Python's parser (a syntax error) or bandit's visitor."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse_module(code)
    except (SyntaxError, RecursionError, MemoryError):
        return BanditAnalysis(syntax_error=_TOO_DEEP_TO_PARSE)
    return BanditAnalysis(unanalysable="the code is nested too deeply for bandit's visitor")


def analyze_bandit(code: str, selection: BanditSelection) -> BanditAnalysis:
    """Run bandit on ``code`` in this process (pure: same code, same analysis).

    A syntax error is part of the returned analysis, not an exception, so that
    it is cached and crosses process boundaries like any other result.
    """
    # Python refuses both before parsing (ValueError, not SyntaxError): say so here.
    if "\x00" in code:
        return BanditAnalysis(syntax_error="source code contains a null byte")
    try:
        code.encode("utf-8")
    except UnicodeEncodeError as e:
        return BanditAnalysis(syntax_error=f"source code is not valid text: {e.reason}")
    runner = _bandit_runner(selection)
    comments, nosec_lines = _nosec_comments(code, selection.honor_nosec)
    metrics = BanditMetrics()
    metrics.begin(_FILENAME)
    visitor = node_visitor.BanditNodeVisitor(
        _FILENAME,
        io.BytesIO(_source_bytes(code)),
        meta_ast.BanditMetaAst(),
        runner.test_set,
        False,
        nosec_lines,
        metrics,
    )
    # Building a test set stores the blacklist it selected on bandit's global
    # blacklist function; put back the one this selection was built with.
    blacklisting.blacklist._config = runner.blacklist_config
    _PLUGIN_ERRORS.messages.clear()
    try:
        with warnings.catch_warnings():
            # A SyntaxWarning turned into an error (python -W error) would make
            # valid code a syntax error; the model's invalid escapes are not ours.
            warnings.simplefilter("ignore")
            visitor.process(code)
    except SyntaxError as e:
        return BanditAnalysis(syntax_error=f"line {e.lineno}: {e.msg}")
    except (RecursionError, MemoryError):
        # CPython's parser runs out of its stack on a long unary chain (MemoryError) or
        # a 3,000-term sum (RecursionError); bandit's visitor recurses once per level
        # of code that parses. Either way the code is the candidate's to blame.
        return _too_deep(code)
    plugin_errors = tuple(_PLUGIN_ERRORS.messages)
    _PLUGIN_ERRORS.messages.clear()

    source_lines = code.splitlines()
    nosec_at = {c.line for c in comments}
    findings = []
    for issue in visitor.tester.results:
        line_range = tuple(int(n) for n in (issue.linerange or [issue.lineno]))
        cwe = getattr(issue.cwe, "id", 0) or 0
        findings.append(
            Finding(
                test_id=str(issue.test_id),
                test_name=str(issue.test),
                severity=str(issue.severity),
                confidence=str(issue.confidence),
                line=int(issue.lineno),
                line_range=line_range,
                col=int(issue.col_offset),
                text=str(issue.text),
                cwe=int(cwe),
                snippet=_snippet(source_lines, line_range),
                under_nosec=bool(nosec_at.intersection(line_range)),
            )
        )
    totals = metrics.data[_FILENAME]
    return BanditAnalysis(
        findings=tuple(findings),
        nosec=tuple(comments),
        suppressed=int(totals["nosec"]) + int(totals["skipped_tests"]),
        plugin_errors=plugin_errors,
    )


# ---------------------------------------------------------------------------
# Scoring (pure) and the grader.
# ---------------------------------------------------------------------------

Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]

DEFAULT_SEVERITY_WEIGHTS: dict[Level, float] = {
    "UNDEFINED": 0.0,
    "LOW": 0.1,
    "MEDIUM": 0.4,
    "HIGH": 1.0,
}
DEFAULT_CONFIDENCE_WEIGHTS: dict[Level, float] = {
    "UNDEFINED": 0.0,
    "LOW": 0.3,
    "MEDIUM": 0.6,
    "HIGH": 1.0,
}


def _with_defaults(
    given: Mapping[Level, float], defaults: Mapping[Level, float]
) -> dict[Level, float]:
    return {level: given.get(level, defaults[level]) for level in LEVELS}


class BanditConfig(GraderConfig):
    """Configuration of the bandit grader."""

    #: ``code_blocks`` was ``code_block`` here; unit_tests always said ``code_blocks``.
    renamed_keys: ClassVar[Mapping[str, str]] = {"code_block": "code_blocks"}

    severity_weights: dict[Level, Weight] = Field(
        default_factory=lambda: dict(DEFAULT_SEVERITY_WEIGHTS),
        description="Penalty factor per severity; levels left out keep their default.",
    )
    confidence_weights: dict[Level, Weight] = Field(
        default_factory=lambda: dict(DEFAULT_CONFIDENCE_WEIGHTS),
        description="Penalty factor per confidence; levels left out keep their default.",
    )
    mapping: Literal["exponential", "reciprocal"] = Field(
        default="exponential",
        description="exp(-penalty/scale), or 1/(1 + penalty/scale).",
    )
    scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        default=1.0, description="The penalty that costs one e-fold (or halves the score)."
    )
    tests: tuple[str, ...] = Field(default=(), description="Run only these test ids (B101, ...).")
    skips: tuple[str, ...] = Field(default=(), description="Never run these test ids.")
    honor_nosec: bool = Field(
        default=False,
        description="Let '# nosec' hide findings (off: model code must not silence bandit).",
    )
    nosec_violation: bool = Field(
        default=False, description="Report each '# nosec' as a suppression_comment violation."
    )
    plugin_errors: Literal["fail", "report"] = Field(
        default="fail",
        description="A bandit plugin raised: fail the component (findings may be missing), "
        "or score what was found and list the errors.",
    )
    code_blocks: Literal["all", "last"] = Field(
        default="all", description="Which fenced blocks of the response make the program."
    )
    code_block: Literal["all", "last"] | None = former_name("code_blocks")
    max_listed_findings: Annotated[int, Field(ge=0)] = Field(
        default=100, description="Findings listed in details (counts always cover all)."
    )
    fail_as_zero: bool = Field(
        default=True,
        description=(
            "Score the candidate's own faults as 0.0, their kind kept in details.failure_kind: "
            "no_code, syntax_error (Python's parser refusing code nested too deeply "
            "included) and unanalysable (code nested too deeply for bandit's visitor); false "
            "leaves them unscored, for the rubric's on_missing to decide. A failure of ours "
            "(a dead analysis worker, a plugin's crash) is never a 0."
        ),
    )

    @field_validator("severity_weights")
    @classmethod
    def _fill_severity(cls, v: dict[Level, float]) -> dict[Level, float]:
        return _with_defaults(v, DEFAULT_SEVERITY_WEIGHTS)

    @field_validator("confidence_weights")
    @classmethod
    def _fill_confidence(cls, v: dict[Level, float]) -> dict[Level, float]:
        return _with_defaults(v, DEFAULT_CONFIDENCE_WEIGHTS)

    @field_validator("tests", "skips")
    @classmethod
    def _known_ids(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        ids = tuple(sorted({t.strip().upper() for t in v}))
        unknown = [t for t in ids if t not in known_test_ids()]
        if unknown:
            raise ValueError(f"unknown bandit test id(s): {', '.join(unknown)}")
        return ids

    def selection(self) -> BanditSelection:
        """Return the part of this config that changes the findings (the cache key)."""
        return BanditSelection(self.tests, self.skips, self.honor_nosec)


@dataclass(frozen=True, slots=True)
class BanditScore:
    """The score, the penalty it came from, and the counts behind it."""

    score: float
    penalty: float
    by_severity: dict[str, int]
    by_confidence: dict[str, int]


def score_findings(findings: Sequence[Finding], config: BanditConfig) -> BanditScore:
    """Map findings to a score in (0, 1] (pure)."""
    by_severity: dict[str, int] = dict.fromkeys(LEVELS, 0)
    by_confidence: dict[str, int] = dict.fromkeys(LEVELS, 0)
    penalty = 0.0
    for f in findings:
        by_severity[f.severity] = by_severity.get(f.severity, 0) + 1
        by_confidence[f.confidence] = by_confidence.get(f.confidence, 0) + 1
        # bandit's levels are plain strings; one it might add later weighs 0.
        sev = config.severity_weights.get(cast(Level, f.severity), 0.0)
        conf = config.confidence_weights.get(cast(Level, f.confidence), 0.0)
        penalty += sev * conf
    x = penalty / config.scale
    score = math.exp(-x) if config.mapping == "exponential" else 1.0 / (1.0 + x)
    return BanditScore(min(1.0, max(0.0, score)), penalty, by_severity, by_confidence)


class BanditGrader(Grader[BanditConfig]):
    """Scores the response's code by bandit's findings, severity x confidence."""

    name: ClassVar[str] = "bandit"
    languages: ClassVar[frozenset[str] | None] = frozenset({"python"})
    #: 2: the candidate's own faults (no code, a syntax error, code too deep) score 0.
    version: ClassVar[str] = "2"
    config_model = BanditConfig
    description: ClassVar[str] = "bandit findings (in-process), weighted by severity x confidence"
    default_timeout_s: ClassVar[float] = 10.0

    def __init__(
        self, analyzer: StaticAnalyzer[BanditSelection, BanditAnalysis] | None = None
    ) -> None:
        self.analyzer = analyzer or StaticAnalyzer(
            analyze_bandit, pool=shared_pool(), warm_up=warm_bandit
        )

    async def warm(self) -> None:
        """Start the analysis workers and import the analyser here, before any job."""
        await self.analyzer.warm()

    async def grade(self, sample: Sample, config: BanditConfig) -> GradeResult:
        """Run bandit on the response's code and score its findings."""
        response, prompt = code_to_read(sample)
        outcome = await analyse_response(
            self,
            self.analyzer,
            response,
            config.code_blocks,
            config.selection(),
            prompt=prompt,
            language=program_language(sample.task),
            fail_as_zero=config.fail_as_zero,
        )
        if isinstance(outcome, GradeResult):
            return outcome
        analysis, cached, extracted = outcome

        violations = (
            tuple(
                Violation(
                    type=ViolationType.SUPPRESSION_COMMENT,
                    detail="'# nosec' silences bandit",
                    line=c.line,
                    snippet=c.text,
                )
                for c in analysis.nosec
            )
            if config.nosec_violation
            else ()
        )
        result = score_findings(analysis.findings, config)
        details: dict[str, Any] = {
            "penalty": result.penalty,
            "counts": {"severity": result.by_severity, "confidence": result.by_confidence},
            "findings": [f.as_detail() for f in analysis.findings[: config.max_listed_findings]],
            "findings_total": len(analysis.findings),
            "nosec": [{"line": c.line, "comment": c.text} for c in analysis.nosec],
            "nosec_honored": config.honor_nosec,
            "suppressed_by_nosec": analysis.suppressed,
            "plugin_errors": list(analysis.plugin_errors),
            "code_source": extracted.source,
            "truncated": extracted.truncated,
            "cached": cached,
        }
        if analysis.plugin_errors and config.plugin_errors == "fail":
            return self.failed(
                FailureKind.GRADER_ERROR,
                f"{len(analysis.plugin_errors)} bandit plugin error(s); findings may be missing",
                details=details,
                violations=violations,
            )
        return self.scored(result.score, details=details, violations=violations)

    def close(self) -> None:
        """Give back this grader's share of the analysis pool (the last user stops it)."""
        self.analyzer.close()
