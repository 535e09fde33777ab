"""Rubrics: which graders run, and how their results become one reward."""

from arbiter.rubrics.compose import compose, normalize_rewards, normalize_values
from arbiter.rubrics.errors import RubricError, RubricIssue, RubricNotFoundError
from arbiter.rubrics.formula import Formula, FormulaError, FormulaEvalError, compile_formula
from arbiter.rubrics.loader import build_rubric, load_rubric, parse_rubric
from arbiter.rubrics.reward import AppliedGate, AppliedPenalty, ComponentOutcome, Reward
from arbiter.rubrics.rubric import Component, Gate, Rubric, RubricIdentity
from arbiter.rubrics.schema import ComponentSpec, GateSpec, PenaltySpec, RubricSpec
from arbiter.rubrics.score import prompt_key, score_samples

__all__ = [
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
]
