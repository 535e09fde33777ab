"""Reward-model replicas as Ray actors, behind the same client and token-budget batcher.

Each :class:`RewardModelActor` loads the transformers reward model once, on the
device Ray gave it (``num_gpus`` in production, CPU in tests).
:class:`RayRewardModelReplicas` is a scoring backend like the local model: it
encodes here (a tokenizer is cheap; the batcher needs each request's length)
and sends each batch to the least-busy replica. Its client keeps one batch in
flight per replica, so the replicas work in parallel while the batcher still
cuts batches to the token budget. A replica that dies fails over: its batch
goes to another, and only with none left do the batch's requests fail typed
(:class:`~arbiter.reward_models.errors.BackendUnavailableError`).
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from arbiter.reward_models.batcher import BatcherConfig
from arbiter.reward_models.chat import ChatEncoder, EncodedInput
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.errors import BackendUnavailableError, ScoringContractError
from arbiter.reward_models.hf import HFRewardModelSpec, load_tokenizer
from arbiter.reward_models.usage import ModelUsage

__all__ = ["RayRewardModelReplicas", "RewardModelActor"]

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # after the usage-stats switch, which Ray reads on import
from ray.exceptions import RayActorError


class RewardModelActor:
    """One replica: the reward model loaded on this actor's device."""

    def __init__(self, spec_json: str) -> None:
        from arbiter.reward_models.hf import HFRewardModel

        self.model = HFRewardModel.load(HFRewardModelSpec.model_validate_json(spec_json))
        self.node = str(ray.get_runtime_context().get_node_id())

    def pad_id(self) -> int:
        """Return the pad token id the model settled on (encodings must not end in it)."""
        return int(self.model.pad_id)

    def score_batch(self, inputs: list[EncodedInput]) -> list[tuple[float, ...]]:
        """Score one padded batch."""
        return self.model.score_batch(inputs)


class RayRewardModelReplicas:
    """A scoring backend whose batches run on ``replicas`` Ray actors.

    Args:
        spec: the model (its ``path`` must be readable on every node).
        replicas: how many actors.
        num_gpus: GPUs per replica (0 on CPU-only clusters).
        num_cpus: CPUs per replica.
        address: the cluster (``ray://`` or ``host:port``), joined unless this
            process is connected already. ``None`` lets Ray pick, and Ray then
            joins the cluster most recently started on this host, whichever that is.
    """

    def __init__(
        self,
        spec: HFRewardModelSpec,
        *,
        replicas: int = 1,
        num_gpus: float = 0.0,
        num_cpus: float = 1.0,
        address: str | None = None,
    ) -> None:
        if replicas < 1:
            raise ValueError("replicas must be at least 1")
        if not ray.is_initialized():
            ray.init(address=address, namespace="arbiter", log_to_driver=False)
        remote: Any = ray.remote(RewardModelActor).options(
            num_gpus=num_gpus, num_cpus=num_cpus, scheduling_strategy="SPREAD"
        )
        self._handles: list[Any] = [remote.remote(spec.model_dump_json()) for _ in range(replicas)]
        pad_ids = ray.get([h.pad_id.remote() for h in self._handles])
        self.pad_id = int(pad_ids[0])
        self.objectives = spec.objectives
        self.encoder = ChatEncoder(
            load_tokenizer(spec),
            max_length=spec.max_length,
            prompt_head_tokens=spec.prompt_head_tokens,
            prompt_tail_tokens=spec.prompt_tail_tokens,
            truncate=spec.truncation == "keep_end",
        )
        self._lock = threading.Lock()
        self._busy = [0] * replicas
        self._alive = [True] * replicas
        #: Batches answered per replica, and failovers (for operators and tests).
        self.batches: collections.Counter[int] = collections.Counter()
        self.failovers = 0

    @property
    def replicas(self) -> int:
        """Return how many replicas were started."""
        return len(self._handles)

    def encode(self, messages: Sequence[Mapping[str, Any]]) -> EncodedInput:
        """Encode a conversation here, exactly as a replica's own model would."""
        encoded = self.encoder.encode(messages)
        if encoded.ids and encoded.ids[-1] == self.pad_id:
            raise ScoringContractError(
                f"the encoded conversation ends in the pad token (id {self.pad_id})"
            )
        return encoded

    def _pick(self) -> int | None:
        with self._lock:
            live = [i for i, alive in enumerate(self._alive) if alive]
            if not live:
                return None
            index = min(live, key=lambda i: self._busy[i])
            self._busy[index] += 1
            return index

    def score_batch(self, inputs: Sequence[EncodedInput]) -> list[tuple[float, ...]]:
        """Score a batch on the least-busy live replica (called on a batcher thread)."""
        while (index := self._pick()) is not None:
            try:
                scores = ray.get(self._handles[index].score_batch.remote(list(inputs)))
            except RayActorError:
                with self._lock:
                    self._alive[index] = False
                    self.failovers += 1
                continue
            finally:
                with self._lock:
                    self._busy[index] -= 1
            with self._lock:
                self.batches[index] += 1
            return [tuple(float(v) for v in row) for row in scores]
        raise BackendUnavailableError("no reward-model replica is alive on the Ray cluster")

    def client(
        self,
        batching: BatcherConfig | None = None,
        *,
        name: str = "reward-model",
        usage: ModelUsage | None = None,
    ) -> RewardModelClient:
        """Return a client with one batch in flight per replica."""
        return RewardModelClient(self, batching, name=name, concurrency=self.replicas, usage=usage)

    def close(self) -> None:
        """Stop the replicas."""
        for handle in self._handles:
            ray.kill(handle)

    def kill_replica(self, index: int) -> None:
        """Kill one replica (what a lost node does; operators and tests use it)."""
        ray.kill(self._handles[index], no_restart=True)
