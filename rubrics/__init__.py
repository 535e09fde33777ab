"""Rubrics: which graders run, and how their results become one reward."""

from rubrics.compose import compose, normalize_rewards, normalize_values
from rubrics.errors import RubricError, RubricIssue, RubricNotFoundError
from rubrics.formula import Formula, FormulaError, FormulaEvalError, compile_formula
from rubrics.loader import build_rubric, load_rubric, parse_rubric
from rubrics.reward import AppliedGate, AppliedPenalty, ComponentOutcome, Reward
from rubrics.rubric import Component, Gate, Rubric, RubricIdentity
from rubrics.schema import ComponentSpec, GateSpec, PenaltySpec, RubricSpec
from rubrics.score import prompt_key, score_samples

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
