"""The radon grader: radon's metrics on the response's code, in-process, shaped into a score.

One ``ast.parse`` feeds radon's complexity and Halstead visitors, and one pass of
radon's raw tokenizer counts lines; the maintainability index is computed from
those exactly as ``radon.metrics.mi_visit`` does (a test checks it to the last
bit), without parsing the code a second time.

The blocks whose cyclomatic complexity is scored are every function, method and
closure (radon leaves a closure's complexity out of its parent's, so a policy
could otherwise hide branches in one), plus the module's top-level code as one
block named ``<module>`` when it has a decision point or there is no function
at all. Radon does not see classes defined inside functions; neither does this.

Each scored metric becomes a term in [0, 1] through a :class:`Curve`: 1 while the
metric is at or better than ``ok``; beyond it, with ``d`` the distance from
``ok`` as a fraction of the span to ``worst``,

* ``linear``: ``max(0, 1 - d)`` (0 at ``worst``),
* ``exponential``: ``exp(-rate * d)`` (``exp(-rate)`` at ``worst``, never 0),
* ``step``: 0.

``worst`` may lie above ``ok`` (higher is worse: complexity) or below it (lower
is worse: the maintainability index). The terms combine by weighted mean,
minimum or product.

One module, one concept: the radon grader — its measurement, its curves and its config
are read together whenever its score is in question, and nothing else uses them.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from radon.complexity import add_inner_blocks, cc_rank  # type: ignore[import-untyped]
from radon.metrics import h_visit_ast, mi_compute, mi_rank  # type: ignore[import-untyped]
from radon.raw import analyze as raw_analyze  # type: ignore[import-untyped]
from radon.visitors import ComplexityVisitor, Function  # type: ignore[import-untyped]

from arbiter.graders.analysis_pool import shared_pool
from arbiter.graders.base import Grader, GraderConfig, former_name
from arbiter.graders.repository.changes import code_to_read
from arbiter.graders.sandbox.syntax import parse_module
from arbiter.graders.static_analysis import StaticAnalyzer, analyse_response
from arbiter.graders.types import GradeResult, Sample, program_language

__all__ = [
    "Block",
    "Curve",
    "RadonConfig",
    "RadonGrader",
    "RadonMetrics",
    "RadonOptions",
    "RadonScore",
    "curve_score",
    "longest_statement_lines",
    "measure_radon",
    "score_complexity",
    "warm_radon",
]

Shape = Literal["linear", "exponential", "step"]
Finite = Annotated[float, Field(allow_inf_nan=False)]

_HALSTEAD_FIELDS = (
    "h1",
    "h2",
    "N1",
    "N2",
    "vocabulary",
    "length",
    "calculated_length",
    "volume",
    "difficulty",
    "effort",
    "time",
    "bugs",
)
_TOO_DEEP = "the code is nested too deeply for radon's visitors"
_RAW_FIELDS = ("loc", "lloc", "sloc", "comments", "multi", "blank", "single_comments")


@dataclass(frozen=True, slots=True)
class RadonOptions:
    """What changes radon's numbers (part of the cache key)."""

    count_asserts: bool = True
    mi_count_multi: bool = True
    max_statement_lines: int = 500


def longest_statement_lines(tree: ast.AST) -> int:
    """Return the most physical lines one logical line of ``tree`` spans.

    A simple statement counts whole; a compound one (def, if, with, ...) only up
    to where its body starts, since its body is made of other statements.
    """
    longest = 1
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(node, ast.Match):
            span = node.cases[0].pattern.lineno - node.lineno if node.cases else 1
        elif isinstance(body, list) and body:
            span = body[0].lineno - node.lineno
        else:
            span = (node.end_lineno or node.lineno) - node.lineno + 1
        longest = max(longest, span)
    return longest


@dataclass(frozen=True, slots=True)
class Block:
    """One scored block: a function, method, closure, or the module's top level."""

    name: str
    kind: Literal["function", "method", "module"]
    line: int
    end_line: int
    complexity: int

    def as_detail(self) -> dict[str, Any]:
        """Return the JSON-ready form put in ``details``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "line": self.line,
            "end_line": self.end_line,
            "complexity": self.complexity,
            "rank": cc_rank(self.complexity),
        }


@dataclass(frozen=True, slots=True)
class RadonMetrics:
    """radon's metrics for one piece of code; plain data, cached and sent across processes."""

    module_complexity: int = 0
    total_complexity: int = 0
    blocks: tuple[Block, ...] = ()
    maintainability_index: float = 100.0
    halstead: tuple[tuple[str, float], ...] = ()
    halstead_functions: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    raw: tuple[tuple[str, int], ...] = ()
    syntax_error: str | None = None
    unanalysable: str | None = None

    @property
    def max_cyclomatic(self) -> int:
        """The highest complexity of any scored block."""
        return max((b.complexity for b in self.blocks), default=1)

    @property
    def mean_cyclomatic(self) -> float:
        """The mean complexity of the scored blocks."""
        if not self.blocks:
            return 1.0
        return sum(b.complexity for b in self.blocks) / len(self.blocks)

    def value(self, metric: str) -> float:
        """Return the value of a scorable metric by its config name."""
        if metric == "max_cyclomatic":
            return float(self.max_cyclomatic)
        if metric == "mean_cyclomatic":
            return self.mean_cyclomatic
        if metric == "maintainability":
            return self.maintainability_index
        if metric == "lloc":
            return float(dict(self.raw)["lloc"])
        if metric.startswith("halstead_"):
            return float(dict(self.halstead)[metric.removeprefix("halstead_")])
        raise KeyError(metric)


def _blocks(visitor: Any) -> tuple[Block, ...]:
    blocks: list[Block] = []
    for b in add_inner_blocks(visitor.blocks):
        if not isinstance(b, Function):
            continue  # a class's complexity is the sum of its methods': not a unit
        blocks.append(
            Block(
                name=b.fullname,
                kind="method" if b.is_method else "function",
                line=b.lineno,
                end_line=b.endline,
                complexity=b.complexity,
            )
        )
    blocks.sort(key=lambda b: (b.line, b.name))
    if not blocks or visitor.complexity > 1:
        end = visitor.max_line if math.isfinite(visitor.max_line) else 0
        blocks.insert(0, Block("<module>", "module", 1, int(end), visitor.complexity))
    return tuple(blocks)


def _halstead(report: Any) -> tuple[tuple[str, float], ...]:
    return tuple((name, float(getattr(report, name))) for name in _HALSTEAD_FIELDS)


def warm_radon() -> None:
    """Measure a one-line module, so that a fresh pool worker's first analysis pays no import."""
    measure_radon("x = 1\n", RadonOptions())


#: Line boundaries of str.splitlines that are not Python's, as spaces.
_NOT_PYTHON_NEWLINES = dict.fromkeys(map(ord, "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), " ")


def measure_radon(code: str, options: RadonOptions) -> RadonMetrics:
    """Compute radon's metrics for ``code`` in this process (pure).

    A syntax error is part of the returned metrics, not an exception, so that it
    is cached and crosses process boundaries like any other result.
    """
    try:
        with warnings.catch_warnings():
            # A SyntaxWarning turned into an error (python -W error) would make
            # valid code a syntax error; the model's invalid escapes are not ours.
            warnings.simplefilter("ignore")
            tree = parse_module(code)
    except SyntaxError as e:
        return RadonMetrics(syntax_error=f"line {e.lineno}: {e.msg}")
    except ValueError as e:  # "source code string cannot contain null bytes"
        return RadonMetrics(syntax_error=str(e))
    except (RecursionError, MemoryError):
        # CPython's parser runs out of its stack (a long unary chain is a MemoryError):
        # code it cannot compile either, so a syntax error.
        return RadonMetrics(syntax_error="the code is nested too deeply for Python's parser")
    # radon's raw line counter re-tokenizes a logical line once per physical line
    # it spans: quadratic, so a statement spanning more than max_statement_lines
    # (bandit's long_set.py example is one literal of thousands of lines) is
    # refused rather than counted.
    span = longest_statement_lines(tree)
    if span > options.max_statement_lines:
        return RadonMetrics(
            unanalysable=f"one statement spans {span} lines, more than "
            f"{options.max_statement_lines}: radon's line counting is quadratic in that"
        )
    try:
        cc = ComplexityVisitor.from_ast(tree, no_assert=not options.count_asserts)
        # The MI is radon's, whatever the assert setting: it always counts asserts.
        mi_cc = cc if options.count_asserts else ComplexityVisitor.from_ast(tree)
        halstead = h_visit_ast(tree)
        # radon splits lines with str.splitlines, which also breaks at characters
        # Python's own tokenizer does not (\x0b, \x0c, \x1c-\x1e, \x85, \u2028,
        # \u2029): one inside a string literal cut the line, and radon raised
        # SyntaxError on code Python compiles. As spaces they count as Python reads them.
        raw = raw_analyze(code.translate(_NOT_PYTHON_NEWLINES))
    except RecursionError:
        return RadonMetrics(unanalysable=_TOO_DEEP)
    except SyntaxError as e:
        # Code Python parsed that radon's own tokenizing still refuses: its text, not ours.
        return RadonMetrics(unanalysable=f"radon's line counter cannot read it: {e}")
    # The same arithmetic, in the same order, as radon.metrics.mi_parameters.
    comment_lines = raw.comments + (raw.multi if options.mi_count_multi else 0)
    comments_pct = comment_lines / float(raw.sloc) * 100 if raw.sloc != 0 else 0
    mi = mi_compute(halstead.total.volume, mi_cc.total_complexity, raw.lloc, comments_pct)
    return RadonMetrics(
        module_complexity=int(cc.complexity),
        total_complexity=int(cc.total_complexity),
        blocks=_blocks(cc),
        maintainability_index=float(mi),
        halstead=_halstead(halstead.total),
        halstead_functions=tuple((name, _halstead(r)) for name, r in halstead.functions),
        raw=tuple((name, int(getattr(raw, name))) for name in _RAW_FIELDS),
    )


class Curve(GraderConfig):
    """How one metric maps to [0, 1]: full marks at ``ok``, falling towards ``worst``."""

    ok: Finite
    worst: Finite
    shape: Shape | None = Field(default=None, description="Overrides the grader-wide shape.")
    rate: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    weight: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0

    @model_validator(mode="after")
    def _span(self) -> Curve:
        if self.ok == self.worst:
            raise ValueError(f"ok and worst must differ (both {self.ok:g})")
        return self


def curve_score(value: float, curve: Curve, shape: Shape, rate: float) -> float:
    """Map one metric's value to [0, 1] under ``shape`` (pure)."""
    d = (value - curve.ok) / (curve.worst - curve.ok)
    if d <= 0:
        return 1.0
    if shape == "step":
        return 0.0
    if shape == "linear":
        return max(0.0, 1.0 - d)
    return math.exp(-rate * d)


_HALSTEAD_METRICS = ("halstead_difficulty", "halstead_effort", "halstead_bugs", "halstead_volume")


def _bare(value: Any, *, higher_is_worse: bool) -> Any:
    """Expand a bare number: ``N`` means ``{ok: N, worst: 3N}`` (or ``worst: 0`` for the MI)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"ok": value, "worst": 3 * value if higher_is_worse else 0.0}
    return value


class RadonConfig(GraderConfig):
    """Configuration of the radon grader: one optional curve per scorable metric."""

    #: ``code_blocks`` was ``code_block`` here; unit_tests always said ``code_blocks``.
    renamed_keys: ClassVar[Mapping[str, str]] = {"code_block": "code_blocks"}

    max_cyclomatic: Curve | None = Field(
        default_factory=lambda: Curve(ok=10, worst=30),
        description="Highest block complexity; a bare N means {ok: N, worst: 3N}.",
    )
    mean_cyclomatic: Curve | None = Field(
        default_factory=lambda: Curve(ok=5, worst=15),
        description="Mean block complexity; a bare N means {ok: N, worst: 3N}.",
    )
    maintainability: Curve | None = Field(
        default_factory=lambda: Curve(ok=20, worst=0),
        description="Maintainability index (0-100, radon ranks >19 as A); "
        "a bare N means {ok: N, worst: 0}.",
    )
    lloc: Curve | None = Field(default=None, description="Logical lines of code.")
    halstead_difficulty: Curve | None = None
    halstead_effort: Curve | None = None
    halstead_bugs: Curve | None = None
    halstead_volume: Curve | None = None
    shape: Shape = "linear"
    rate: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        default=3.0, description="Exponential shape: the term is exp(-rate) at worst."
    )
    combine: Literal["mean", "min", "product"] = "mean"
    count_asserts: bool = Field(
        default=True, description="An assert is a decision point (radon's default)."
    )
    mi_count_multi: bool = Field(
        default=True, description="Multi-line strings count as comments in the MI (radon mi's)."
    )
    max_statement_lines: Annotated[int, Field(ge=1)] = Field(
        default=500,
        description="Longer single statements are not analysed (unanalysable, the "
        "candidate's fault: see fail_as_zero): radon's time grows with the square of a "
        "statement's length.",
    )
    include_halstead: bool = Field(default=False, description="Halstead metrics in details.")
    include_raw: bool = Field(default=True, description="Raw line counts in details.")
    code_blocks: Literal["all", "last"] = Field(
        default="all", description="Which fenced blocks of the response make the program."
    )
    code_block: Literal["all", "last"] | None = former_name("code_blocks")
    max_listed_blocks: Annotated[int, Field(ge=0)] = 100
    fail_as_zero: bool = Field(
        default=True,
        description=(
            "Score the candidate's own faults as 0.0, their kind kept in details.failure_kind: "
            "no_code, syntax_error (Python's parser refusing code nested too deeply "
            "included) and unanalysable (code nested too deeply for radon's visitors, or a "
            "statement longer than max_statement_lines); false leaves them unscored, for the "
            "rubric's on_missing to decide. A failure of ours (a dead analysis worker) is "
            "never a 0."
        ),
    )

    # The editor schema must accept the bare-number shorthand the validator expands.
    @field_validator(
        "max_cyclomatic",
        "mean_cyclomatic",
        "lloc",
        *_HALSTEAD_METRICS,
        mode="before",
        json_schema_input_type=Curve | float | None,
    )
    @classmethod
    def _bare_higher_is_worse(cls, v: Any) -> Any:
        return _bare(v, higher_is_worse=True)

    @field_validator("maintainability", mode="before", json_schema_input_type=Curve | float | None)
    @classmethod
    def _bare_lower_is_worse(cls, v: Any) -> Any:
        return _bare(v, higher_is_worse=False)

    @model_validator(mode="after")
    def _has_a_curve(self) -> RadonConfig:
        curves = self.curves()
        if not curves:
            raise ValueError("set at least one metric's curve")
        if self.combine == "mean" and sum(c.weight for c in curves.values()) <= 0:
            raise ValueError("curve weights must not all be 0 when combine is 'mean'")
        return self

    def curves(self) -> dict[str, Curve]:
        """Return metric name -> curve, for the metrics that are scored."""
        names = ("max_cyclomatic", "mean_cyclomatic", "maintainability", "lloc", *_HALSTEAD_METRICS)
        return {n: c for n in names if (c := getattr(self, n)) is not None}

    def options(self) -> RadonOptions:
        """Return the part of this config that changes radon's numbers (the cache key)."""
        return RadonOptions(self.count_asserts, self.mi_count_multi, self.max_statement_lines)


@dataclass(frozen=True, slots=True)
class RadonScore:
    """The combined score and each metric's term."""

    score: float
    terms: dict[str, dict[str, Any]]


def score_complexity(metrics: RadonMetrics, config: RadonConfig) -> RadonScore:
    """Score radon's metrics against the config's curves (pure)."""
    terms: dict[str, dict[str, Any]] = {}
    for metric, curve in config.curves().items():
        value = metrics.value(metric)
        shape = curve.shape or config.shape
        terms[metric] = {
            "value": value,
            "ok": curve.ok,
            "worst": curve.worst,
            "shape": shape,
            "weight": curve.weight,
            "score": curve_score(value, curve, shape, curve.rate or config.rate),
        }
    scores = [t["score"] for t in terms.values()]
    if config.combine == "min":
        score = min(scores)
    elif config.combine == "product":
        score = math.prod(scores)
    else:
        weights = [t["weight"] for t in terms.values()]
        score = sum(w * s for w, s in zip(weights, scores, strict=True)) / sum(weights)
    return RadonScore(min(1.0, max(0.0, score)), terms)


def _details(metrics: RadonMetrics, result: RadonScore, config: RadonConfig) -> dict[str, Any]:
    details: dict[str, Any] = {
        "cyclomatic": {
            "max": metrics.max_cyclomatic,
            "mean": metrics.mean_cyclomatic,
            "module": metrics.module_complexity,
            "total": metrics.total_complexity,
            "blocks": [b.as_detail() for b in metrics.blocks[: config.max_listed_blocks]],
            "blocks_total": len(metrics.blocks),
        },
        "maintainability": {
            "index": metrics.maintainability_index,
            "rank": mi_rank(metrics.maintainability_index),
        },
        "terms": result.terms,
    }
    if config.include_raw:
        details["raw"] = dict(metrics.raw)
    if config.include_halstead:
        details["halstead"] = {
            "total": dict(metrics.halstead),
            # A list, not a dict: two classes may each have a method of one name.
            "functions": [{"name": name, **dict(h)} for name, h in metrics.halstead_functions],
        }
    return details


class RadonGrader(Grader[RadonConfig]):
    """Scores the response's code by cyclomatic complexity and maintainability (radon)."""

    name: ClassVar[str] = "radon"
    languages: ClassVar[frozenset[str] | None] = frozenset({"python"})
    #: 2: the candidate's own faults (no code, a syntax error, code too deep or too long
    #: for radon) score 0.
    version: ClassVar[str] = "2"
    config_model = RadonConfig
    description: ClassVar[str] = (
        "radon cyclomatic complexity (max, mean), maintainability index, Halstead, raw metrics"
    )
    default_timeout_s: ClassVar[float] = 10.0

    def __init__(self, analyzer: StaticAnalyzer[RadonOptions, RadonMetrics] | None = None) -> None:
        self.analyzer = analyzer or StaticAnalyzer(
            measure_radon, pool=shared_pool(), warm_up=warm_radon
        )

    async def warm(self) -> None:
        """Start the analysis workers and import the analyser here, before any job."""
        await self.analyzer.warm()

    async def grade(self, sample: Sample, config: RadonConfig) -> GradeResult:
        """Measure the response's code with radon and score it."""
        response, prompt = code_to_read(sample)
        outcome = await analyse_response(
            self,
            self.analyzer,
            response,
            config.code_blocks,
            config.options(),
            prompt=prompt,
            language=program_language(sample.task),
            fail_as_zero=config.fail_as_zero,
        )
        if isinstance(outcome, GradeResult):
            return outcome
        metrics, cached, extracted = outcome
        result = score_complexity(metrics, config)
        details = _details(metrics, result, config)
        details.update(code_source=extracted.source, truncated=extracted.truncated, cached=cached)
        return self.scored(result.score, details=details)

    def close(self) -> None:
        """Give back this grader's share of the analysis pool (the last user stops it)."""
        self.analyzer.close()
