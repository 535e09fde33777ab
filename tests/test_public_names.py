"""Each package of the namespace lists its public names in ``__all__``, pinned here.

A change to what a package exports is a change to this file too, made on
purpose. A package that re-exports nothing lists its public modules, and every
public module on disk is listed. The Alembic migrations are scripts Alembic
loads by path, not an API, and are left out.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

PINNED: dict[str, list[str]] = {
    "arbiter": [
        "__version__",
    ],
    "arbiter.adapters": [
        "coalescer",
        "openrlhf",
        "trl",
        "verl",
        "verl_manager",
    ],
    "arbiter.api": [
        "admission",
        "app",
        "auth",
        "body",
        "deps",
        "drift_watch",
        "errors",
        "grading",
        "idempotency",
        "logs",
        "metrics",
        "middleware",
        "openrlhf",
        "regressions",
        "review_sampler",
        "review_view",
        "routes",
        "rubric_registration",
        "rubric_sync",
        "runs",
        "schemas",
        "service",
        "settings",
    ],
    "arbiter.api.routes": [
        "drift",
        "health",
        "keys",
        "regressions",
        "repositories",
        "review",
        "rewards",
        "rubrics",
        "runs",
    ],
    "arbiter.eval_sets": [
        "EVAL_SETS_DIR",
        "eval_set_path",
    ],
    "arbiter.graders": [
        "AnswerTask",
        "Failure",
        "FailureKind",
        "GradeResult",
        "Grader",
        "GraderConfig",
        "GraderJob",
        "GraderRegistry",
        "IOCase",
        "InstructionsTask",
        "Message",
        "Metrics",
        "ReasoningGymTask",
        "RepositoryTask",
        "Sample",
        "Task",
        "TaskSpec",
        "ToolCall",
        "UnknownGraderError",
        "Violation",
        "ViolationType",
        "default_registry",
        "run_job",
        "run_jobs",
    ],
    "arbiter.graders.answers": ["check", "equivalence", "extraction", "grader", "pool"],
    "arbiter.graders.detectors": [
        "Case",
        "NameRule",
        "RULES",
        "SUPPRESSIONS",
        "cases_from_task",
        "detect_response",
        "detect_static",
    ],
    "arbiter.graders.languages": ["LANGUAGES", "language"],
    "arbiter.graders.repository": [
        "Outcome",
        "PatchError",
        "RepositoryGrading",
        "RepositorySettings",
        "Snapshot",
        "SnapshotError",
        "SnapshotStore",
        "WorkspaceHost",
        "WorkspaceLimits",
        "parse_patch",
    ],
    "arbiter.graders.sandbox": [
        "CandidateError",
        "CandidateFunction",
        "Channel",
        "ChannelBroken",
        "CheckPlan",
        "CheckPlanError",
        "DEFAULT_PRELOAD",
        "FunctionRun",
        "LAYERS",
        "Limits",
        "MissingLayersError",
        "PoolConfig",
        "RunReport",
        "SandboxError",
        "SandboxPool",
        "UnitOutcome",
        "check_layers",
        "plan_function_tests",
        "require_layers",
        "run_plan",
    ],
    "arbiter.monitoring": [
        "agreement",
        "drift",
        "drift_alerts",
        "drift_config",
        "drift_incidents",
        "drift_input",
        "drift_statistics",
        "hack_rates",
        "regressions",
        "sampling",
    ],
    "arbiter.reward_models": [
        "AffineNormalizer",
        "BackendError",
        "BackendUnavailableError",
        "BatchStats",
        "BatcherClosedError",
        "BatcherConfig",
        "BatcherError",
        "ChatEncoder",
        "ConfigurationError",
        "DeadlineExceededError",
        "DynamicBatcher",
        "EncodedInput",
        "GroupZScorer",
        "JudgeError",
        "JudgeParseError",
        "JudgeTimeoutError",
        "JudgeUnavailableError",
        "NormalizationError",
        "QueueFullError",
        "RewardModelClient",
        "RewardModelError",
        "RewardOutput",
        "RunningZNormalizer",
        "ScoringBackend",
        "ScoringContractError",
    ],
    "arbiter.reward_models.judge": [
        "Criterion",
        "Injection",
        "JudgeBackend",
        "JudgeClient",
        "JudgeDefaults",
        "JudgeReply",
        "JudgeResult",
        "JudgeUnavailableRetryAfter",
        "Level",
        "LocalCausalLMBackend",
        "Messages",
        "OpenAIChatBackend",
        "PairwiseResult",
        "Preference",
        "RateLimiter",
        "SamplingParams",
        "TokenLogprob",
        "Verdict",
        "find_injections",
        "load_template",
        "parse_preference",
        "parse_verdict",
        "render_pairwise_prompt",
        "render_prompt",
    ],
    "arbiter.rubrics": [
        "AppliedGate",
        "AppliedPenalty",
        "Component",
        "ComponentOutcome",
        "ComponentSpec",
        "Formula",
        "FormulaError",
        "FormulaEvalError",
        "Gate",
        "GateSpec",
        "PenaltySpec",
        "Reward",
        "Rubric",
        "RubricError",
        "RubricIdentity",
        "RubricIssue",
        "RubricNotFoundError",
        "RubricSpec",
        "build_rubric",
        "compile_formula",
        "compose",
        "load_rubric",
        "normalize_rewards",
        "normalize_values",
        "parse_rubric",
        "prompt_key",
        "score_samples",
    ],
    "arbiter.store": [
        "db",
        "drift_log",
        "idempotency",
        "migrations",
        "regressions",
        "review",
        "reward_reads",
        "tables",
    ],
}


def public_modules(package: str) -> set[str]:
    """Return the public modules and sub-packages in a package's folder."""
    folder = Path(importlib.import_module(package).__file__ or "").parent
    return {
        path.stem if path.suffix == ".py" else path.name
        for path in folder.iterdir()
        if not path.name.startswith("_")
        and (path.suffix == ".py" or (path / "__init__.py").is_file())
    }


def test_every_package_is_pinned():
    root = Path(importlib.import_module("arbiter").__file__ or "").parent
    found = {"arbiter"}
    for init in root.rglob("__init__.py"):
        found.add(".".join(["arbiter", *init.parent.relative_to(root).parts]))
    for link in root.iterdir():  # the sub-packages are links to the repository's folders
        if link.is_symlink():
            for init in link.resolve().rglob("__init__.py"):
                parts = init.parent.relative_to(link.resolve()).parts
                found.add(".".join(["arbiter", link.name, *parts]))
    found = {p for p in found if "migrations" not in p.split(".")}
    assert found == set(PINNED)


@pytest.mark.parametrize("package", sorted(PINNED))
def test_public_names_are_pinned(package):
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)), f"{package}.__all__ repeats a name"
    assert sorted(names) == PINNED[package]
    modules = public_modules(package)
    for name in names:
        if name in modules:
            importlib.import_module(f"{package}.{name}")
        else:
            assert hasattr(module, name), f"{package}.{name} is listed but not defined"
    # A package of modules lists every one of them.
    if set(names) <= modules and package != "arbiter":
        assert set(names) == modules, sorted(modules - set(names))
