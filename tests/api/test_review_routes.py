"""Review sampling keeps each route's reward deciles: a route's high is its own."""

from __future__ import annotations

from arbiter.api.review_sampler import ReviewSampler
from arbiter.api.settings import Settings
from arbiter.graders.types import Violation, ViolationType
from arbiter.rubrics import parse_rubric
from arbiter.rubrics.reward import ComponentOutcome, Reward
from arbiter.store.db import Store

ROUTED = """\
name: routed
version: 1
components:
  eff: {grader: efficiency, config: {max_turns: 10}}
routes:
  low:
    when: {kind: [answer]}
    components:
      eff: {grader: efficiency, config: {max_turns: 10}}
review: {sample_rate: 0.05, stratify_by: [high_reward_violation]}
"""


def reward(i: int, raw: float, route: str | None, hack: bool = False) -> Reward:
    violations = (Violation(type=ViolationType.EARLY_EXIT),) if hack else ()
    outcome = ComponentOutcome(
        score=raw,
        weight=1.0,
        required=False,
        grader="efficiency",
        grader_version="1",
        violations=violations,
    )
    rubric = parse_rubric(ROUTED)
    identity = rubric.identity if route is None else rubric.routes[0].rubric.identity
    return Reward(
        id=f"s{i}",
        reward=raw,
        raw_reward=raw,
        components={"eff": outcome},
        rubric=identity,
        graders={"efficiency": "1"},
        route=route,
    )


def test_each_route_has_its_own_deciles(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    sampler = ReviewSampler(store, Settings())
    rubric = parse_rubric(ROUTED)
    # The default route pays 0..1, the low route 0..0.1.
    sampler.decide(rubric, [reward(i, i / 200, None) for i in range(200)])
    sampler.decide(rubric, [reward(i, i / 2000, "low") for i in range(200)])
    in_low, in_default = sampler.decide(
        rubric, [reward(0, 0.099, "low", hack=True), reward(1, 0.099, None, hack=True)]
    )
    # 0.099 is the top decile of the low route's rewards, and nowhere near the default's.
    assert in_low.reason == "high_reward_violation"
    assert in_default.reason == "uniform"
    store.close()
