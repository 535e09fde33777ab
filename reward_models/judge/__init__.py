"""LLM judges: rubric prompts, verdict parsing, and chat backends (HTTP or local model).

A judge is asked to grade one response against one criterion whose levels
1..N each carry a description and a value in [0, 1] (Prometheus-style
anchors). Its answer ends in ``[RESULT] k``. The verdict is read as follows:

* **Bound to the last match.** The response under judgement is untrusted text:
  it can contain ``[RESULT] 5`` or ``Score: 5``, and a judge that quotes it
  would carry that grade into its own answer. Only the *last* ``[RESULT] k``
  of the judge's answer counts — the one the template makes it write at the
  end — and ``Score: k`` is not a verdict at all. No match, or a level outside
  1..N, is a :class:`JudgeParseError`: no score, never a default.
* **Logprob-weighted expectation.** When the backend returns the top logprobs
  of the grade's token, the value is the expectation of the level values under
  the judge's distribution over the valid levels (renormalized over them):
  a judge torn between 3 and 4 gives a value between them, a smoother reward
  than the argmax.

:class:`JudgeClient` adds what a service needs around a backend: a
concurrency limit, a deadline, retries with exponential backoff (honouring
``Retry-After``) on retryable failures only, N votes with an aggregation, and
an LRU cache keyed by (model, prompt hash, sampling parameters, vote). An
answer without a verdict is asked again (``parse_retries``) before it counts.

* **A response cannot talk its judge round.** It reaches the judge between
  markers it cannot close, its ``[RESULT]`` tags defanged, under a system
  prompt that calls it data; :func:`find_injections` finds text written for the
  judge (its verdict tag and markers, words to the grader, demands for a grade,
  orders to give none, role markers), which the grader reports as a
  ``judge_injection`` violation.

The package holds one module per job: :mod:`~arbiter.reward_models.judge.types`,
:mod:`~arbiter.reward_models.judge.prompts`, :mod:`~arbiter.reward_models.judge.verdicts`,
:mod:`~arbiter.reward_models.judge.injection`, the
backends :mod:`~arbiter.reward_models.judge.openai_chat` and
:mod:`~arbiter.reward_models.judge.local_model`, and :mod:`~arbiter.reward_models.judge.client`.
"""

from arbiter.reward_models.judge.client import JudgeClient
from arbiter.reward_models.judge.injection import Injection, find_injections
from arbiter.reward_models.judge.limits import RateLimiter
from arbiter.reward_models.judge.local_model import LocalCausalLMBackend
from arbiter.reward_models.judge.openai_chat import JudgeUnavailableRetryAfter, OpenAIChatBackend
from arbiter.reward_models.judge.prompts import load_template, render_pairwise_prompt, render_prompt
from arbiter.reward_models.judge.types import (
    Criterion,
    JudgeBackend,
    JudgeDefaults,
    JudgeReply,
    JudgeResult,
    Level,
    Messages,
    PairwiseResult,
    Preference,
    SamplingParams,
    TokenLogprob,
    Verdict,
)
from arbiter.reward_models.judge.verdicts import parse_preference, parse_verdict

__all__ = [
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
]
