"""A reward model for test servers: a tiny transformers model built from a config, never downloaded.

Loaded through ``ARBITER_GRADER_PLUGINS``; the model's weights are random, which
is what a reviewer checking a judge must be ready for.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from arbiter.graders.registry import GraderRegistry
from arbiter.graders.reward_model import RewardModelGrader
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.hf import HFRewardModel, HFRewardModelSpec
from tests.reward_models.tiny import llama_config, save_reward_model


def register(registry: GraderRegistry) -> None:
    directory = Path(tempfile.mkdtemp(prefix="arbiter-tiny-rm-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    save_reward_model(directory, llama_config())
    model = HFRewardModel.load(HFRewardModelSpec(path=str(directory)))
    registry.add_instance(RewardModelGrader(models={"default": RewardModelClient(model)}))
