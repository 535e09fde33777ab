"""Models files and grader plugins: the one loader every entry point uses.

A models file declares the reward models and LLM judges that rubrics name
(``model: default`` in a ``reward_model`` component, ``judge: default`` in an
``llm_judge`` one)::

    reward_models:
      default: {backend: transformers, path: /models/rm}
    judges:
      default: {backend: openai, base_url: http://127.0.0.1:8000/v1, model: judge,
                api_key_env: JUDGE_API_KEY}

It is read like a rubric: every problem in one pass, each with file, line and
column, the key path, what was expected and what was found, and "did you mean"
for a misspelled key (the rubric loader's machinery). Relative paths in it
(``path``, ``tokenizer``, ``chat_template``) are relative to the file.

:func:`prepare_registry` is the one way a registry gets its declared models
and plugin modules (``register(registry)``): ``arbiter serve``
(``ARBITER_MODELS``, ``ARBITER_GRADER_PLUGINS``), ``arbiter score``,
``audit``, ``replay`` and ``rubric validate`` (``--models``, ``--plugins``, the
same variables) and the Ray grader actors (:func:`registry_setup`, shipped to
them) all call it. Declared models are built on the graders' warm-up, so
validating a rubric or grading the sandbox on an actor loads none.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arbiter.graders.llm_judge import LLMJudgeGrader
from arbiter.graders.registry import GraderRegistry
from arbiter.graders.reward_model import RewardModelGrader
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.declarations import (
    JudgeSpec,
    ModelsSpec,
    RewardModelSpec,
    build_judge,
    build_reward_model,
    close_client,
)
from arbiter.reward_models.judge import JudgeClient
from arbiter.reward_models.model_set import ModelSet
from arbiter.reward_models.usage import ModelUsage
from arbiter.rubrics.errors import RubricError, RubricIssue
from arbiter.rubrics.json_schema import _draft7
from arbiter.rubrics.loader import Positions, _read_yaml, _Report, _validate
from arbiter.rubrics.rubric import Rubric

__all__ = [
    "DeclaredModels",
    "ModelsFile",
    "ModelsFileError",
    "PluginError",
    "check_rubric_models",
    "load_models_file",
    "load_plugins",
    "models_json_schema",
    "parse_models_file",
    "prepare_registry",
    "registry_setup",
]

logger = logging.getLogger("arbiter.models")

#: Fields holding local paths, resolved against the models file's folder.
_PATH_FIELDS = {"reward_models": ("path", "tokenizer", "chat_template"), "judges": ("path",)}
#: Which grader names which kind of model, and by which config key.
_NAMED_BY = {"reward_model": ("model", "reward_models"), "llm_judge": ("judge", "judges")}


class ModelsFileError(RubricError):
    """A models file that cannot be used; every problem found is in ``issues``."""


class PluginError(ImportError):
    """A grader plugin module that cannot be imported or has no ``register(registry)``."""


@dataclass(frozen=True, slots=True)
class ModelsFile:
    """A validated models file: its spec (paths resolved) and where it came from."""

    spec: ModelsSpec
    source: str

    @property
    def sha256(self) -> str:
        """Return the hash of the resolved declarations (what every process must agree on)."""
        return hashlib.sha256(self.spec.model_dump_json().encode()).hexdigest()


def load_models_file(path: str | Path) -> ModelsFile:
    """Load and validate the models file at ``path``.

    Raises:
        ModelsFileError: listing every problem, each with file, line and column.
        OSError: the file cannot be read.
    """
    path = Path(path)
    return parse_models_file(
        path.read_text(encoding="utf-8"), source=str(path), base_dir=path.resolve().parent
    )


def parse_models_file(
    text: str, *, source: str = "<models>", base_dir: Path | None = None
) -> ModelsFile:
    """Parse and validate models-file YAML (``source`` labels it in errors).

    ``base_dir``: the folder relative paths are read against (default: as written).
    """
    try:
        data, positions, tabs = _read_yaml(text, source)
    except RubricError as e:
        raise ModelsFileError(e.issues) from None
    report = _Report(source, positions, data)
    if data is None:
        data = {}  # an empty file declares nothing: valid, and says so when used
    if not isinstance(data, dict):
        report.add((), f"expected a mapping with reward_models and judges; found {_kind(data)}")
        raise ModelsFileError(report.error().issues)
    spec: ModelsSpec | None = None
    try:
        spec = _validate(ModelsSpec, data)
    except ValidationError as e:
        report.add_validation(e, (), ModelsSpec)
    issues = sorted([*tabs, *_cleaned(report.issues)], key=lambda i: (i.line or 0, i.column or 0))
    if issues or spec is None:
        raise ModelsFileError(issues)
    return ModelsFile(_resolved(spec, base_dir), source)


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__


def _cleaned(issues: list[RubricIssue]) -> list[RubricIssue]:
    """Drop what a misspelled key already explains, and never echo a would-be secret.

    A key written as ``pathh`` makes ``path`` "missing" too; the misspelling's
    own line says so. A value under ``api_key_env`` that is not a variable's
    name is likely the key itself: the message must not repeat it.
    """
    meant = {
        (i.path.rsplit(".", 1)[0], m.group(1))
        for i in issues
        if (m := re.search(r"did you mean '([^']+)'\?$", i.message))
    }
    out = []
    for issue in issues:
        missing = re.fullmatch(r"missing required key '([^']+)'", issue.message)
        if missing and (issue.path.rsplit(".", 1)[0], missing.group(1)) in meant:
            continue
        if issue.path.endswith(".api_key_env") and not issue.message.startswith("unknown key"):
            issue = replace(
                issue,
                message="expected the name of an environment variable (letters, digits and _, "
                "not starting with a digit), never the key itself; found a value that is not "
                "one (not shown)",
            )
        out.append(issue)
    return out


def _resolved(spec: ModelsSpec, base_dir: Path | None) -> ModelsSpec:
    if base_dir is None:
        return spec
    sections: dict[str, Any] = {}
    for section, fields in _PATH_FIELDS.items():
        entries = {}
        for name, entry in getattr(spec, section).items():
            updates = {
                f: str((base_dir / value).resolve())
                for f in fields
                if isinstance(value := getattr(entry, f), str) and not Path(value).is_absolute()
            }
            entries[name] = entry.model_copy(update=updates) if updates else entry
        sections[section] = entries
    return spec.model_copy(update=sections)


def models_json_schema() -> dict[str, Any]:
    """Return the draft-07 JSON Schema of models files (for yaml-language-server)."""
    schema = ModelsSpec.model_json_schema(ref_template="#/definitions/{model}")
    definitions = schema.pop("$defs", {})
    document = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        **schema,
        "title": "Arbiter models file",
        "definitions": definitions,
    }
    return _draft7(document)  # type: ignore[no-any-return]


class DeclaredModels:
    """The models of one models file, as the graders of one process hold them.

    Each model is built once, on the graders' warm-up or first use; its
    :class:`~arbiter.reward_models.usage.ModelUsage` counters exist from the start, so
    metrics list every declared model, loaded or not.
    """

    def __init__(self, spec: ModelsSpec, *, ray_address: str | None = None) -> None:
        """Declare ``spec``'s models; ``ray_address`` is where declared replicas run."""
        self.spec = spec
        self.usage: dict[tuple[str, str], ModelUsage] = {}
        rm_usage = {n: ModelUsage(n, "reward_model") for n in spec.reward_models}
        judge_usage = {n: ModelUsage(n, "judge") for n in spec.judges}
        self.usage.update({("reward_model", n): u for n, u in rm_usage.items()})
        self.usage.update({("judge", n): u for n, u in judge_usage.items()})
        self.reward_models: ModelSet[RewardModelClient] = ModelSet(
            "reward model",
            {
                name: partial(
                    _build_reward_model, rm, name, rm_usage[name], ray_address=ray_address
                )
                for name, rm in spec.reward_models.items()
            },
            usage=rm_usage,
            closer=close_client,
        )
        self.judges: ModelSet[JudgeClient] = ModelSet(
            "judge",
            {
                name: partial(_build_judge, judge, name, judge_usage[name])
                for name, judge in spec.judges.items()
            },
            usage=judge_usage,
        )

    def install(self, registry: GraderRegistry) -> None:
        """Give ``registry`` the reward-model and judge graders that serve these models."""
        registry.add_instance(RewardModelGrader(self.reward_models))
        registry.add_instance(LLMJudgeGrader(self.judges))

    def states(self) -> dict[str, str]:
        """Return ``reward_model:NAME`` / ``judge:NAME`` → its state (for ``/readyz``)."""
        return {
            **{f"reward_model:{n}": s for n, s in self.reward_models.states().items()},
            **{f"judge:{n}": s for n, s in self.judges.states().items()},
        }


def _build_reward_model(
    spec: RewardModelSpec, name: str, usage: ModelUsage, *, ray_address: str | None
) -> RewardModelClient:
    return build_reward_model(spec, name=name, usage=usage, ray_address=ray_address)


def _build_judge(spec: JudgeSpec, name: str, usage: ModelUsage) -> JudgeClient:
    client: JudgeClient = build_judge(spec, name=name, usage=usage)
    return client


def load_plugins(registry: GraderRegistry, modules: Iterable[str]) -> None:
    """Import each plugin module and call its ``register(registry)``.

    Raises:
        PluginError: a module that cannot be imported or has no ``register``.
    """
    for module in modules:
        try:
            # A plugin is trusted code chosen by the operator, like a rubric folder.
            loaded = importlib.import_module(module)
        except ImportError as e:
            raise PluginError(f"grader plugin {module!r} cannot be imported: {e}") from e
        register = getattr(loaded, "register", None)
        if not callable(register):
            raise PluginError(f"grader plugin {module!r} has no register(registry) function")
        register(registry)


def prepare_registry(
    registry: GraderRegistry,
    *,
    models: ModelsFile | ModelsSpec | None = None,
    plugins: Sequence[str] = (),
    ray_address: str | None = None,
) -> DeclaredModels | None:
    """Install declared models, then plugin modules, into ``registry``; return the models.

    A plugin that registers its own ``reward_model`` or ``llm_judge`` grader
    replaces the declared ones (it is logged).

    Raises:
        PluginError: a plugin module that cannot be used.
    """
    declared = None
    if models is not None:
        spec = models.spec if isinstance(models, ModelsFile) else models
        declared = DeclaredModels(spec, ray_address=ray_address)
        declared.install(registry)
        installed = {n: registry.instance(n) for n in ("reward_model", "llm_judge")}
    load_plugins(registry, plugins)
    if declared is not None:
        for name, grader in installed.items():
            if registry.instance(name) is not grader:
                logger.warning("a grader plugin replaced the declared models' %r grader", name)
    return declared


def registry_setup(
    models: ModelsFile | ModelsSpec | None, plugins: Sequence[str] = ()
) -> Callable[[GraderRegistry], object] | None:
    """Return what a Ray grader actor runs on its registry to match this process's.

    The function travels to the actors by reference with the declarations as
    JSON, so an actor holds the same declared models (loaded only if it grades
    with them) and the same plugins. ``None`` when there is nothing to set up.
    """
    if models is None and not plugins:
        return None
    spec = models.spec if isinstance(models, ModelsFile) else models
    text = spec.model_dump_json() if spec is not None else None
    return partial(_setup_from_json, text, tuple(plugins))


def _setup_from_json(
    models_json: str | None, plugins: tuple[str, ...], registry: GraderRegistry
) -> DeclaredModels | None:
    spec = ModelsSpec.model_validate_json(models_json) if models_json is not None else None
    return prepare_registry(registry, models=spec, plugins=plugins)


def check_rubric_models(
    rubric: Rubric, models: ModelsFile, *, text: str | None = None
) -> list[RubricIssue]:
    """Return an issue for every model or judge ``rubric`` names that ``models`` lacks.

    A name declared in the other section is "of the wrong kind". ``text`` is the
    rubric's YAML, for line numbers.
    """
    positions = Positions()
    if text is not None:
        # The rubric parsed already; without positions an issue just has none.
        with contextlib.suppress(RubricError):
            positions = _read_yaml(text, rubric.source)[1]
    issues = []
    for name, component in rubric.components.items():
        named = _NAMED_BY.get(component.grader)
        if named is None:
            continue
        key, section = named
        wanted = getattr(component.config, key)
        declared = getattr(models.spec, section)
        if wanted in declared:
            continue
        other = "judges" if section == "reward_models" else "reward_models"
        if wanted in getattr(models.spec, other):
            what = (
                f"{wanted!r} is declared under {other} in {models.source}, but a "
                f"{component.grader} component needs one under {section}"
            )
        else:
            listed = ", ".join(sorted(declared)) or "none"
            what = (
                f"no {section[:-1].replace('_', ' ')} named {wanted!r} in {models.source} "
                f"(declared: {listed})"
            )
        path = ("components", name, "config", key)
        line, col = positions.locate(path)
        issues.append(RubricIssue(rubric.source, line, col, ".".join(path), what))
    return issues
