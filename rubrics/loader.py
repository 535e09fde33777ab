"""Load rubric YAML that people edit by hand, with errors that point at the line.

Validation runs in three passes and reports every problem it can find, not just
the first: the document's shape (:class:`~arbiter.rubrics.schema.RubricSpec`), each
component's grader config (by that grader's own model), then the rules that
span fields (formula names, gates, penalties, weights). Each problem names the
file, line and column, the key path, what was expected and what was found.

Values are validated as JSON in pydantic's strict mode, which is exactly what
the published JSON Schema (``arbiter rubric schema``) says: ``weight: "0.1"`` is a
string where a number is expected, in the editor and here alike. A tab in the
indentation (which YAML forbids) is reported at its line, and the rest of the
file is still checked with the tabs read as spaces.

Whatever the text, parsing raises :class:`RubricError` and nothing else, and its
cost is bounded before the document is built: a size of text and of its longest
line (checked before the YAML reader runs), then a budget of nodes (counted as
aliases expand), of aliases and of nesting depth (:data:`YAML_LIMITS`).

One module, one concept: reading a rubric file — the three passes share the line map of
the YAML document, and every error they raise must point into it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    ScalarEvent,
)
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from arbiter.graders.base import GraderConfig
from arbiter.graders.registry import GraderRegistry, UnknownGraderError, default_registry
from arbiter.graders.types import ViolationType
from arbiter.rubrics.cautions import rubric_cautions
from arbiter.rubrics.errors import RubricError, RubricIssue
from arbiter.rubrics.formula import Formula, FormulaError, compile_formula
from arbiter.rubrics.rubric import (
    Component,
    Gate,
    Route,
    Rubric,
    canonical_document,
    canonical_sha256,
)
from arbiter.rubrics.schema import RESERVED_NAMES, ComponentSpec, PenaltySpec, RubricSpec

__all__ = ["build_rubric", "load_rubric", "parse_rubric"]

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """What one rubric document may hold; real rubrics use a small fraction.

    ``chars`` and ``line_chars`` are checked on the text itself, before the YAML
    reader (pure Python, tens of microseconds a character) sees any of it: a
    hostile rubric sent to a busy service is refused in microseconds, not
    parsed for seconds (a 20,000-term formula is one 340 KB line).
    """

    #: Scalars and collections, with each alias counted as the nodes it expands to
    #: (the library's rubrics hold under 150; the YAML reader spends some 100 us on each).
    nodes: int = 2_000
    aliases: int = 100
    depth: int = 32
    #: The whole document (the library's largest rubric is under 2,000).
    chars: int = 64 << 10
    #: One line (a formula is at most 2,000 characters; a description wraps).
    line_chars: int = 4_000


YAML_LIMITS = YamlLimits()


class _OverBudget(Exception):
    """The document is over a limit of :data:`YAML_LIMITS` (message says which)."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


def _scan_events(yaml: YAML, text: str) -> None:
    """Check depth, aliases and raw node count on the event stream, before composing.

    The composer recurses per level and expands nothing yet, so this bounds
    its work; alias expansion is bounded later, as :func:`_plain` visits nodes.
    """
    depth = nodes = aliases = 0
    limits = YAML_LIMITS
    for event in yaml.parse(text):
        mark = event.start_mark
        where = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        if isinstance(event, CollectionStartEvent):
            depth += 1
            nodes += 1
            if depth > limits.depth:
                raise _OverBudget(f"nested deeper than {limits.depth} levels", *where)
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
        elif isinstance(event, ScalarEvent):
            nodes += 1
        elif isinstance(event, AliasEvent):
            aliases += 1
            if aliases > limits.aliases:
                raise _OverBudget(f"more than {limits.aliases} aliases", *where)
        if nodes > limits.nodes:
            raise _OverBudget(f"more than {limits.nodes} values", *where)


@dataclass
class Positions:
    """Where each key and value of a YAML document starts (0-based line, column)."""

    keys: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    values: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    quoted: set[KeyPath] = field(default_factory=set)

    def locate(self, path: KeyPath, *, key: bool = False) -> tuple[int | None, int | None]:
        """Return the 1-based position of ``path``, or of its nearest ancestor present."""
        exact = (
            (self.keys.get(path) if key else None) or self.values.get(path) or self.keys.get(path)
        )
        if exact is not None:
            return exact[0] + 1, exact[1] + 1
        # Not in the document (a key left out): point at the nearest ancestor's key.
        for end in range(len(path) - 1, -1, -1):
            pos = self.keys.get(path[:end]) or self.values.get(path[:end])
            if pos is not None:
                return pos[0] + 1, pos[1] + 1
        return None, None


def _plain(node: Any, path: KeyPath, positions: Positions, budget: list[int]) -> Any:
    """Turn ruamel's round-trip nodes into plain Python, recording positions.

    ``budget`` holds the nodes still allowed; an alias is visited (and paid
    for) each time it appears, so expansion cannot outgrow the budget.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise _OverBudget(f"more than {YAML_LIMITS.nodes} values once aliases are expanded")
    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key, value in node.items():
            plain_key = _plain_scalar(key)
            sub = (*path, plain_key)
            positions.keys[sub] = node.lc.key(key)
            positions.values[sub] = node.lc.value(key)
            out[plain_key] = _plain(value, sub, positions, budget)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, value in enumerate(node):
            sub = (*path, i)
            positions.values[sub] = node.lc.item(i)
            items.append(_plain(value, sub, positions, budget))
        return items
    if isinstance(node, SingleQuotedScalarString | DoubleQuotedScalarString):
        positions.quoted.add(path)
    return _plain_scalar(node)


def _plain_scalar(value: Any) -> Any:
    # ruamel subclasses int/float/str to keep formatting; strict validators want
    # the builtins. bool is checked first: it is an int too.
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def _check_size(text: str, source: str) -> None:
    """Refuse a document longer than :data:`YAML_LIMITS` allows, before reading it."""
    limits = YAML_LIMITS
    if len(text) > limits.chars:
        message = f"{len(text):,} characters; the limit is {limits.chars:,}"
        raise _too_large(source, _OverBudget(message, 1, 1))
    longest = max(text.splitlines() or [""], key=len)
    if len(longest) > limits.line_chars:
        line = text.splitlines().index(longest) + 1
        message = f"line {line} has {len(longest):,} characters; the limit is {limits.line_chars:,}"
        raise _too_large(source, _OverBudget(message, line, limits.line_chars + 1))


def _load_yaml(text: str, source: str) -> Any:
    _check_size(text, source)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    try:
        _scan_events(yaml, text)
        return yaml.load(text)
    except _OverBudget as e:
        raise _too_large(source, e) from None
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        what = " ".join(p for p in (e.context, e.problem) if p) or "invalid YAML"
        raise RubricError([RubricIssue(source, line, col, "", f"invalid YAML: {what}")]) from e
    except YAMLError as e:
        raise RubricError([RubricIssue(source, None, None, "", f"invalid YAML: {e}")]) from e
    except (ValueError, TypeError, RecursionError) as e:
        # What ruamel's constructors raise on values it cannot build, such as an
        # integer beyond Python's digit limit or an unhashable key.
        raise RubricError(
            [RubricIssue(source, None, None, "", f"invalid YAML: {type(e).__name__}: {e}")]
        ) from None


def _too_large(source: str, e: _OverBudget) -> RubricError:
    return RubricError(
        [RubricIssue(source, e.line, e.col, "", f"the document is too large: {e.message}")]
    )


# Tab widths tried, in order, to read past tabs in the indentation.
_TAB_WIDTHS = (2, 4, 8, 1)


def _tab_issues(text: str, source: str) -> list[RubricIssue]:
    """Report every tab in a line's indentation (YAML indents with spaces only)."""
    issues = []
    for number, line in enumerate(text.splitlines(), start=1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent:
            issues.append(
                RubricIssue(
                    source,
                    number,
                    indent.index("\t") + 1,
                    "",
                    "a tab character in the indentation; expected spaces (YAML forbids tabs there)",
                )
            )
    return issues


def _read_yaml(text: str, source: str) -> tuple[Any, Positions, list[RubricIssue]]:
    """Parse YAML; return the document, its positions and the tab issues found on the way.

    With tabs in the indentation the text is read again with each tab expanded
    (trying a few widths), so the rest of the file is still checked; only when
    no width parses is the YAML error itself reported beside the tabs.
    """
    _check_size(text, source)
    tabs = _tab_issues(text, source)
    if not tabs:
        document = _load_yaml(text, source)
    else:
        document, first_error = None, None
        for width in _TAB_WIDTHS:
            try:
                document = _load_yaml(text.expandtabs(width), source)
                break
            except RubricError as e:
                first_error = first_error or e
        else:
            assert first_error is not None
            raise RubricError([*tabs, *first_error.issues]) from first_error
    positions = Positions()
    try:
        return _plain(document, (), positions, [YAML_LIMITS.nodes]), positions, tabs
    except _OverBudget as e:
        raise _too_large(source, e) from None


def load_rubric(path: str | Path, registry: GraderRegistry | None = None) -> Rubric:
    """Load and validate the rubric file at ``path``.

    Raises:
        RubricError: listing every problem, each with file, line and column.
        OSError: when the file cannot be read.
    """
    path = Path(path)
    return parse_rubric(path.read_text(encoding="utf-8"), source=str(path), registry=registry)


def parse_rubric(
    text: str, *, source: str = "<rubric>", registry: GraderRegistry | None = None
) -> Rubric:
    """Parse and validate rubric YAML text (``source`` labels it in errors)."""
    data, positions, tabs = _read_yaml(text, source)
    try:
        rubric = build_rubric(data, source=source, registry=registry, positions=positions)
    except RubricError as e:
        issues = [*tabs, *e.issues]
        raise RubricError(sorted(issues, key=lambda i: (i.line or 0, i.column or 0))) from e
    if tabs:
        raise RubricError(tabs)
    return rubric


def build_rubric(
    data: Any,
    *,
    source: str = "<rubric>",
    registry: GraderRegistry | None = None,
    positions: Positions | None = None,
    cautions: bool = True,
) -> Rubric:
    """Validate an already-parsed rubric document (YAML or JSON) and compile it.

    ``cautions``: find what validation notices without refusing (a route's own build
    leaves them to its rubric's, which knows which samples the route takes).
    """
    registry = registry or default_registry()
    report = _Report(source, positions or Positions(), data)
    if not isinstance(data, dict):
        found = "an empty document" if data is None else type(data).__name__
        report.add((), f"expected a mapping with name, version and components; found {found}")
        raise report.error()

    spec: RubricSpec | None = None
    try:
        spec = _validate(RubricSpec, data)
    except ValidationError as e:
        report.add_validation(e, (), RubricSpec)

    configs = _validate_components(data, registry, report)
    formula, conditions = _compile_formulas(data, report)
    if spec is None or report.issues:
        raise report.error()

    penalties = _check_semantics(spec, formula, configs, report)
    if report.issues:
        raise report.error()
    gates = tuple(
        Gate(spec=gate, condition=condition)
        for gate, condition in zip(spec.gates, conditions, strict=True)
        if condition is not None
    )

    components = {
        name: Component(
            name=name,
            grader=c.grader,
            weight=c.weight,
            required=c.required,
            timeout_s=c.timeout_s,
            config=configs[name],
        )
        for name, c in spec.components.items()
    }
    routes = _build_routes(spec, data, source, registry, positions or Positions(), report)
    if report.issues:
        raise report.error()
    canonical = canonical_document(spec, configs)
    for route in routes:
        # The hash covers each route with its grader configs filled in, as its own does.
        body = route.rubric.canonical()
        canonical["routes"][route.name].update(
            {k: v for k, v in body.items() if k in canonical["routes"][route.name]}
        )
    rubric = Rubric(
        spec=spec,
        components=components,
        formula=formula,
        gates=gates,
        penalties=penalties,
        sha256=canonical_sha256(canonical),
        source=source,
        routes=tuple(routes),
    )
    if not cautions:
        return rubric
    shown: list[RubricIssue] = []
    for path, message in rubric_cautions(rubric, registry):
        # A caution points at its key (the components, a config key), a gate's at its condition.
        line, col = report.positions.locate(path, key=path[-1] != "when")
        shown.append(RubricIssue(source, line, col, _dotted(path), message))
    return dataclasses.replace(rubric, warnings=tuple(shown)) if shown else rubric


#: What a route body shares with a rubric file (its ``when`` and ``description`` are its own).
_ROUTE_BODY = ("components", "combine", "gates", "penalties", "on_missing", "clip", "normalize")


def _build_routes(
    spec: RubricSpec,
    data: dict[str, Any],
    source: str,
    registry: GraderRegistry,
    positions: Positions,
    report: _Report,
) -> list[Route]:
    """Compile each route as a rubric of its own, ``<name>.<route>``, errors at their lines.

    A route's body is checked by the very code that checks a rubric file (grader
    configs, formulas, gates, penalties, renormalize rules); its issues come back
    with their path under ``routes.<route>`` and their line in this file.
    """
    routes: list[Route] = []
    for route_name, route in spec.routes.items():
        raw = data["routes"][route_name]
        body = {k: raw[k] for k in _ROUTE_BODY if k in raw}
        sub = {"name": f"{spec.name}.{route_name}", "version": spec.version, **body}
        # A route keeps its rubric's review and drift settings (its streams are its own).
        sub.update({k: data[k] for k in ("review", "drift") if k in data})
        prefix: KeyPath = ("routes", route_name)
        inner = Positions(
            keys={p[2:]: v for p, v in positions.keys.items() if p[:2] == prefix},
            values={p[2:]: v for p, v in positions.values.items() if p[:2] == prefix},
            quoted={p[2:] for p in positions.quoted if p[:2] == prefix},
        )
        try:
            rubric = build_rubric(
                sub, source=source, registry=registry, positions=inner, cautions=False
            )
        except RubricError as e:
            for issue in e.issues:
                path = f"routes.{route_name}" + (f".{issue.path}" if issue.path else "")
                report.issues.append(
                    RubricIssue(issue.source, issue.line, issue.column, path, issue.message)
                )
            continue
        routes.append(
            Route(
                name=route_name,
                kinds=frozenset(route.when.kind) if route.when.kind else None,
                data_sources=frozenset(route.when.data_source) if route.when.data_source else None,
                rubric=rubric,
            )
        )
    return routes


def _validate_components(
    data: dict[str, Any], registry: GraderRegistry, report: _Report
) -> dict[str, GraderConfig]:
    """Validate each component's config with its grader's model (pass 2)."""
    configs: dict[str, GraderConfig] = {}
    components = data.get("components")
    if not isinstance(components, dict):
        return configs
    for name, raw in components.items():
        if not isinstance(raw, dict) or not isinstance(raw.get("grader"), str):
            continue  # pass 1 reported it
        unknown = raw.keys() - ComponentSpec.model_fields.keys()
        if "config" not in raw and any(
            difflib.get_close_matches(str(k), ["config"], n=1, cutoff=0.6) for k in unknown
        ):
            # `config` itself is misspelled (pass 1 said so): checking the grader's
            # defaults instead would report "missing" keys the author did write.
            continue
        try:
            grader = registry.get(raw["grader"])
        except UnknownGraderError as e:
            report.add(("components", name, "grader"), str(e))
            continue
        config = raw.get("config", {})
        if not isinstance(config, dict):
            continue  # pass 1 reported it
        prefix: KeyPath = ("components", name, "config")
        try:
            configs[name] = _validate(grader.config_model, config)
        except ValidationError as e:
            report.add_validation(e, prefix, grader.config_model)
    return configs


ModelT = typing.TypeVar("ModelT", bound=BaseModel)


def _validate(model: type[ModelT], data: Any) -> ModelT:
    """Validate as the JSON Schema reads: JSON types, strictly (no "0.1" for a number).

    Strict JSON mode still takes a list for a tuple and a string for an enum, as
    JSON must; YAML's own scalars beyond JSON (timestamps) arrive as strings.
    """
    return model.model_validate_json(json.dumps(data, default=str), strict=True)


def _compile_formulas(
    data: dict[str, Any], report: _Report
) -> tuple[Formula | None, list[Formula | None]]:
    """Compile ``combine`` and every gate's ``when`` against the component names.

    This runs on the raw document, so a misspelled name in a formula is reported
    even when other parts of the file are broken too.
    """
    components = data.get("components")
    names = [n for n in components if isinstance(n, str)] if isinstance(components, dict) else []
    formula: Formula | None = None
    combine = data.get("combine", "weighted_sum")
    if isinstance(combine, str) and combine != "weighted_sum":
        formula = report.formula(("combine",), combine, names)
    conditions: list[Formula | None] = []
    gates = data.get("gates")
    for i, gate in enumerate(gates if isinstance(gates, list) else []):
        when = gate.get("when") if isinstance(gate, dict) else None
        conditions.append(
            report.formula(("gates", i, "when"), when, names) if isinstance(when, str) else None
        )
    return formula, conditions


def _check_semantics(
    spec: RubricSpec,
    formula: Formula | None,
    configs: dict[str, GraderConfig],
    report: _Report,
) -> dict[ViolationType, PenaltySpec]:
    """Check the rules that span fields (pass 3)."""
    for name in spec.components:
        if name in RESERVED_NAMES:
            report.add(
                ("components", name),
                f"{name!r} is a reserved word of the formula language; rename the component",
                key=True,
            )
    if spec.combine == "weighted_sum":
        if sum(c.weight for c in spec.components.values()) <= 0:
            report.add(
                ("components",),
                "weighted_sum needs at least one component with a weight above 0; "
                "found all weights 0",
            )
    elif spec.on_missing == "renormalize":
        report.add(
            ("on_missing",),
            "'renormalize' re-weights a weighted_sum and has no meaning for a formula; "
            f"expected 'abstain' or 'zero' with combine: {spec.combine!r}; found 'renormalize'",
        )
    if spec.combine == "weighted_sum" and spec.on_missing == "renormalize":
        _check_droppable(spec, configs, report)

    penalties: dict[ViolationType, PenaltySpec] = {}
    for i, penalty in enumerate(spec.penalties):
        if penalty.violation in penalties:
            report.add(
                ("penalties", i, "violation"),
                f"a penalty for {penalty.violation.value!r} is already set earlier; "
                "expected one entry per violation type",
            )
        penalties[penalty.violation] = penalty

    if spec.clip is not None and not spec.clip[0] < spec.clip[1]:
        low, high = spec.clip
        report.add(("clip",), f"expected [low, high] with low < high; found [{low:g}, {high:g}]")
    return penalties


def _check_droppable(spec: RubricSpec, configs: dict[str, GraderConfig], report: _Report) -> None:
    """Refuse a component the candidate can drop from a renormalized sum by failing it.

    A grader with ``fail_as_zero`` (``unit_tests``) leaves the candidate's own
    faults (a timeout, no code, a syntax or compile error) unscored unless it is
    set; under ``renormalize`` the other components' weights then grow to fill
    the gap, so a candidate that loops forever instead of failing its tests
    earns the whole reward from the rest. Harmless when nothing else is weighted
    (the reward abstains) or the component is required (likewise).
    """
    for name, component in spec.components.items():
        if component.required or getattr(configs.get(name), "fail_as_zero", True):
            continue
        others = [n for n, c in spec.components.items() if n != name and c.weight > 0]
        if component.weight > 0 and others:
            report.add(
                ("components", name),
                f"under on_missing: renormalize, a candidate that fails {name!r} by its own "
                "fault (a timeout, no code, a syntax or compile error) leaves it unscored, "
                f"and the weights of {', '.join(repr(n) for n in others)} grow to fill its "
                "place: failing would pay. Expected 'fail_as_zero: true' in its config (the "
                "candidate's faults score 0), 'required: true', or on_missing 'abstain' or "
                "'zero'",
                key=True,
            )


class _Report:
    """Collects issues and turns key paths into file positions."""

    def __init__(self, source: str, positions: Positions, data: Any) -> None:
        self.source = source
        self.positions = positions
        self.data = data
        self.issues: list[RubricIssue] = []
        #: The same issues, to refuse a repeat in constant time (a hostile file has thousands).
        self._seen: set[RubricIssue] = set()

    def error(self) -> RubricError:
        ordered = sorted(self.issues, key=lambda i: (i.line or 0, i.column or 0))
        return RubricError(ordered)

    def add(
        self, path: KeyPath, message: str, *, key: bool = False, col_offset: int | None = None
    ) -> None:
        line, col = self.positions.locate(path, key=key)
        if col_offset is not None and col is not None:
            col += col_offset + (1 if path in self.positions.quoted else 0)
        issue = RubricIssue(self.source, line, col, _dotted(path), message)
        if issue not in self._seen:
            self._seen.add(issue)
            self.issues.append(issue)

    def formula(self, path: KeyPath, text: str, names: list[str]) -> Formula | None:
        try:
            return compile_formula(text, names)
        except FormulaError as e:
            self.add(path, f"in formula {text!r}: {e.message}", col_offset=e.col)
            return None

    def add_validation(
        self, error: ValidationError, prefix: KeyPath, model: type[BaseModel]
    ) -> None:
        """Report each pydantic error at its real key path (union tags dropped)."""
        grouped: dict[tuple[KeyPath, str], list[str]] = {}
        order: list[tuple[KeyPath, str, bool, Any]] = []
        for err in error.errors(include_url=False):
            path, at_key = self._data_path(prefix, tuple(err["loc"]), err["type"])
            kind = err["type"]
            if kind == "extra_forbidden":
                self.add(path, self._unknown_key(path, prefix, model), key=True)
                continue
            if kind == "missing":
                self.add(path, f"missing required key {path[-1]!r}")
                continue
            if kind == "value_error":
                reason = err["msg"].removeprefix("Value error, ")
                present = path in self.positions.values or not self.positions.values
                found = _show(err.get("input")) if present else "nothing (the key is left out)"
                self.add(path, f"{reason}; found {found}")
                continue
            if kind in ("enum", "literal_error") and isinstance(err.get("input"), str):
                choices = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
                close = difflib.get_close_matches(err["input"], choices, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                self.add(
                    path,
                    f"expected one of: {', '.join(choices)}; found {err['input']!r}{hint}",
                    key=at_key,
                )
                continue
            slot = (path, "key" if at_key else "value")
            if slot not in grouped:
                grouped[slot] = []
                order.append((path, slot[1], at_key, err.get("input")))
            message = _expected(err["msg"])
            if message not in grouped[slot]:
                grouped[slot].append(message)
        for path, tag, at_key, found in order:
            expected = " or ".join(grouped[(path, tag)])
            what = "key" if at_key else "value"
            self.add(path, f"expected {expected}; found {what} {_show(found)}", key=at_key)

    def _data_path(self, prefix: KeyPath, loc: KeyPath, kind: str) -> tuple[KeyPath, bool]:
        """Map a pydantic ``loc`` to the path of keys that exist in the document."""
        node: Any = self.data
        for part in prefix:
            # A prefix may name a key the document lacks (a defaulted config).
            node = node.get(part) if isinstance(node, dict) else None
        path = list(prefix)
        at_key = False
        for i, part in enumerate(loc):
            last = i == len(loc) - 1
            if part == "[key]":
                at_key = True
                continue
            in_dict = isinstance(node, dict) and part in node
            in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
            if in_dict or in_list:
                node = node[part]
                path.append(part)
            elif last and kind == "missing":
                path.append(part)
            # else: a union member's tag, which is not in the document
        return tuple(path), at_key

    def _unknown_key(self, path: KeyPath, prefix: KeyPath, model: type[BaseModel]) -> str:
        key = path[-1]
        allowed = sorted(_allowed_keys(model, path[len(prefix) : -1]))
        message = f"unknown key {key!r}"
        if allowed:
            message += f"; expected one of: {', '.join(allowed)}"
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
        return message


def _allowed_keys(model: type[BaseModel], path: KeyPath) -> set[str]:
    """Return the keys the model accepts at ``path`` (for "did you mean")."""
    types_at: list[Any] = [model]
    for part in path:
        following: list[Any] = []
        for tp in types_at:
            following.extend(_child_types(tp, part))
        types_at = following
    keys: set[str] = set()
    for tp in types_at:
        for candidate in _unwrap(tp):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                for name, info in candidate.model_fields.items():
                    keys.add(info.alias or name)
    return keys


def _unwrap(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        return [u for arg in typing.get_args(tp) for u in _unwrap(arg)]
    return [tp]


def _child_types(tp: Any, part: str | int) -> list[Any]:
    out: list[Any] = []
    for candidate in _unwrap(tp):
        origin = typing.get_origin(candidate)
        args = typing.get_args(candidate)
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            for name, info in candidate.model_fields.items():
                if part in (name, info.alias):
                    out.append(info.annotation)
        elif origin is dict and len(args) == 2:
            out.append(args[1])
        elif origin in (list, tuple) and args:
            out.append(args[0])
    return out


def _expected(message: str) -> str:
    """Turn pydantic's "Input should be X" into "X" for an "expected ...; found ..." line."""
    for lead in ("Input should be ", "Value error, "):
        if message.startswith(lead):
            return message[len(lead) :]
    return message[0].lower() + message[1:] if message else message


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _dotted(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
