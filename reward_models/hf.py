"""A transformers sequence-classification reward model, loaded from a local path.

What this module pins down, each a way peers' reward servers have gone wrong:

* **Raw scores.** The head's logits are returned as they are; a sigmoid is
  applied only when ``activation: sigmoid`` is configured. Bradley-Terry
  rewards are unbounded logits and squashing them by default hides the
  differences between good answers (vLLM's pooler does so unless told not to).
* **A dedicated pad token.** transformers reads the score at the rightmost token
  that is not ``pad_token_id`` — at batch size 1 too. With pad == eos and a
  template that ends in eos, the score is read one token early, in every row.
  The model gets a pad id of its own (a new special token when the tokenizer
  has none distinct from eos), and every encoded input is checked not to end in
  it.
* **Padding side.** Right padding (default) needs no attention mask in a causal
  model — the pads come after every real token, so they cannot change its
  output — and lets SDPA take its causal fast path. Left padding passes the
  mask and explicit position ids.
* **dtype.** float32 on CPU (batched and single scores then agree to ~1e-6);
  bfloat16 with SDPA attention on CUDA. The CUDA path is present but was not
  run in this project's CPU-only tests.
* **A load-time scoring contract.** Before serving, reference conversations
  are scored one at a time and together in padded batches on both orders; the
  scores must agree within the dtype's tolerance. A model card's own example
  (expected score, or a chosen/rejected pair) can be declared and is checked.
  A model that fails does not serve.

The model runs wherever :meth:`HFRewardModel.score_batch` is called: the
:class:`~arbiter.reward_models.client.RewardModelClient` calls it on its batcher's
dedicated thread, off the event loop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from arbiter.reward_models.chat import ChatEncoder, EncodedInput
from arbiter.reward_models.errors import (
    ConfigurationError,
    LabelCountError,
    ModelNotFoundError,
    ScoringContractError,
)

__all__ = [
    "DEFAULT_REFERENCE_CONVERSATIONS",
    "CardExample",
    "CardPair",
    "HFRewardModel",
    "HFRewardModelSpec",
    "load_tokenizer",
    "tolerance_for",
]

Conversation = Sequence[Mapping[str, Any]]

#: Model types whose forward is causal, so right padding needs no attention mask.
CAUSAL_MODEL_TYPES = frozenset(
    {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "olmo2",
        "granite",
    }
)

#: A pad token added when the tokenizer has none distinct from eos.
ADDED_PAD_TOKEN = "<|arbiter_pad|>"

DEFAULT_REFERENCE_CONVERSATIONS: tuple[tuple[dict[str, str], ...], ...] = (
    ({"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}),
    (
        {"role": "user", "content": "Write a function that returns the square of x."},
        {"role": "assistant", "content": "def square(x):\n    return x * x"},
    ),
    (
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": "Explain in two sentences why the sky is blue. " * 3},
        {
            "role": "assistant",
            "content": "Sunlight scatters off air molecules, and shorter wavelengths "
            "scatter most. So blue light reaches our eyes from every direction. " * 2,
        },
    ),
)


def tolerance_for(dtype: torch.dtype) -> tuple[float, float]:
    """Return (atol, rtol) within which batched and single scores must agree."""
    if dtype == torch.float32:
        return 1e-5, 1e-4
    if dtype == torch.float64:
        return 1e-8, 1e-7
    # 8 bits of mantissa: padding changes the reduction order enough to show.
    return 5e-2, 2e-2


class CardExample(BaseModel):
    """A conversation and the score its model card says it gets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: list[dict[str, str]]
    expected: list[float] = Field(min_length=1, description="One value per objective.")
    atol: float = Field(default=0.05, gt=0)


class CardPair(BaseModel):
    """A chosen and a rejected answer to one prompt; chosen must score higher."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: list[dict[str, str]]
    chosen: str
    rejected: str
    objective: int = Field(default=0, ge=0)


class HFRewardModelSpec(BaseModel):
    """How to load and run a local transformers reward model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="A local directory written by save_pretrained; never a hub id.")
    max_length: int = Field(default=4096, ge=8)
    objectives: tuple[str, ...] = Field(
        default=("reward",), min_length=1, description="Names of the head's outputs, in order."
    )
    activation: Literal["none", "sigmoid"] = "none"
    padding_side: Literal["right", "left"] = "right"
    pad_token: str | None = Field(
        default=None,
        description="Pad token to use; default: the tokenizer's if distinct from eos, else a "
        "new dedicated token.",
    )
    prompt_head_tokens: int = Field(default=16, ge=0)
    prompt_tail_tokens: int = Field(default=32, ge=0)
    truncation: Literal["keep_end", "error"] = Field(
        default="keep_end",
        description="keep_end: cut the prompt's middle, then the response's start, keeping its "
        "end; error: refuse an input over max_length (the component fails typed).",
    )
    tokenizer: str | None = Field(
        default=None, description="A local directory holding the tokenizer (default: path)."
    )
    chat_template: str | None = Field(
        default=None,
        description="A file holding a Jinja chat template to use instead of the tokenizer's.",
    )
    device: str = Field(default="auto", description="'auto': cuda when available, else cpu.")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    reference_conversations: list[list[dict[str, str]]] | None = None
    card_examples: list[CardExample] = Field(default_factory=list)
    card_pairs: list[CardPair] = Field(default_factory=list)


def load_tokenizer(spec: HFRewardModelSpec) -> Any:
    """Load the spec's tokenizer from local files, with its declared chat template if any.

    Raises:
        ConfigurationError: the tokenizer directory or the template file is missing.
    """
    from transformers import AutoTokenizer

    directory = Path(spec.tokenizer or spec.path)
    if not directory.is_dir():
        raise ModelNotFoundError(f"tokenizer directory {str(directory)!r} does not exist")
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    if spec.chat_template is not None:
        try:
            tokenizer.chat_template = Path(spec.chat_template).read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigurationError(
                f"chat_template {spec.chat_template!r} cannot be read: {e.strerror}"
            ) from e
    return tokenizer


def _resolve_device_dtype(spec: HFRewardModelSpec) -> tuple[torch.device, torch.dtype]:
    device_name = spec.device
    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device_name)
    if spec.dtype != "auto":
        return device, getattr(torch, spec.dtype)
    return device, torch.bfloat16 if device.type == "cuda" else torch.float32


class HFRewardModel:
    """Score conversations with an ``AutoModelForSequenceClassification``."""

    def __init__(self, model: Any, tokenizer: Any, spec: HFRewardModelSpec) -> None:
        """Wrap a loaded model and tokenizer; :meth:`load` also runs the contract.

        Raises:
            ConfigurationError: the head's size does not match ``spec.objectives``.
        """
        self.spec = spec
        self.tokenizer = tokenizer
        self.model = model
        num_labels = int(model.config.num_labels)
        if num_labels != len(spec.objectives):
            raise LabelCountError(
                f"the model has {num_labels} outputs but {len(spec.objectives)} objectives are "
                f"named ({', '.join(spec.objectives)})"
            )
        self.objectives = spec.objectives
        self.pad_id = self._set_pad_token()
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        model_type = str(getattr(model.config, "model_type", ""))
        # Without a mask SDPA can use its causal kernel; only safe for causal models.
        self.mask_right_padding = model_type not in CAUSAL_MODEL_TYPES
        self.encoder = ChatEncoder(
            tokenizer,
            max_length=spec.max_length,
            prompt_head_tokens=spec.prompt_head_tokens,
            prompt_tail_tokens=spec.prompt_tail_tokens,
            truncate=spec.truncation == "keep_end",
        )
        model.eval()

    @classmethod
    def load(cls, spec: HFRewardModelSpec, *, check: bool = True) -> HFRewardModel:
        """Load model and tokenizer from ``spec.path`` (local files only) and check the contract.

        Raises:
            ConfigurationError: the path is not a local model directory.
            ScoringContractError: the loaded model fails its scoring contract.
        """
        from transformers import AutoModelForSequenceClassification

        path = Path(spec.path)
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"{spec.path!r} is not a local model directory")
        device, dtype = _resolve_device_dtype(spec)
        kwargs: dict[str, Any] = {"local_files_only": True, "dtype": dtype}
        if device.type == "cuda":
            kwargs["attn_implementation"] = "sdpa"
        model = AutoModelForSequenceClassification.from_pretrained(str(path), **kwargs)
        model.to(device)
        tokenizer = load_tokenizer(spec)
        reward_model = cls(model, tokenizer, spec)
        if check:
            reward_model.check_contract()
        return reward_model

    def _set_pad_token(self) -> int:
        tok = self.tokenizer
        if self.spec.pad_token is not None:
            if self.spec.pad_token not in tok.get_vocab():
                tok.add_special_tokens({"pad_token": self.spec.pad_token})
            else:
                tok.pad_token = self.spec.pad_token
        elif tok.pad_token_id is None or tok.pad_token_id == tok.eos_token_id:
            tok.add_special_tokens({"pad_token": ADDED_PAD_TOKEN})
        pad_id = int(tok.pad_token_id)
        embeddings = self.model.get_input_embeddings()
        if pad_id >= embeddings.num_embeddings:
            # The pad row's values never reach a pooled score: pads come after every
            # real token (right) or are masked out (left).
            self.model.resize_token_embeddings(len(tok), mean_resizing=False)
        tok.padding_side = self.spec.padding_side
        self.model.config.pad_token_id = pad_id
        self.model.config.get_text_config().pad_token_id = pad_id
        return pad_id

    def encode(self, messages: Conversation) -> EncodedInput:
        """Encode a conversation whose last message is the response.

        Raises:
            ScoringContractError: the encoded input ends in the pad token, so the
                score would be read at the wrong position.
        """
        encoded = self.encoder.encode(messages)
        if encoded.ids and encoded.ids[-1] == self.pad_id:
            raise ScoringContractError(
                f"the encoded conversation ends in the pad token (id {self.pad_id}); "
                "transformers would read the score before it. Use a dedicated pad token "
                "that the chat template never emits (not eos)."
            )
        return encoded

    @torch.inference_mode()
    def score_batch(self, inputs: Sequence[EncodedInput]) -> list[tuple[float, ...]]:
        """Score encoded inputs in one padded forward pass; one tuple per input."""
        if not inputs:
            return []
        longest = max(x.length for x in inputs)
        rows = []
        masks = []
        for x in inputs:
            pad = [self.pad_id] * (longest - x.length)
            ones, zeros = [1] * x.length, [0] * len(pad)
            if self.spec.padding_side == "right":
                rows.append([*x.ids, *pad])
                masks.append(ones + zeros)
            else:
                rows.append([*pad, *x.ids])
                masks.append(zeros + ones)
        input_ids = torch.tensor(rows, dtype=torch.long, device=self.device)
        kwargs: dict[str, Any] = {}
        if self.spec.padding_side == "left":
            mask = torch.tensor(masks, dtype=torch.long, device=self.device)
            kwargs["attention_mask"] = mask
            # Positions count real tokens only, so a left-padded row sees the same
            # positions as it would alone.
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        elif self.mask_right_padding:
            kwargs["attention_mask"] = torch.tensor(masks, dtype=torch.long, device=self.device)
        logits = self.model(input_ids=input_ids, **kwargs).logits.float()
        if self.spec.activation == "sigmoid":
            logits = torch.sigmoid(logits)
        return [tuple(float(v) for v in row) for row in logits.cpu().tolist()]

    def score(self, messages: Conversation) -> tuple[float, ...]:
        """Score one conversation synchronously (checks and tools; serving uses the batcher)."""
        return self.score_batch([self.encode(messages)])[0]

    def check_contract(self) -> None:
        """Score reference inputs singly and batched; check the model card's examples.

        Raises:
            ScoringContractError: any disagreement, with the numbers.
        """
        conversations = self.spec.reference_conversations or [
            list(c) for c in DEFAULT_REFERENCE_CONVERSATIONS
        ]
        encoded = [self.encode(c) for c in conversations]
        if len({x.length for x in encoded}) < 2:
            raise ConfigurationError(
                "the reference conversations must have at least two different lengths, "
                "or batching would add no padding to check"
            )
        single = [self.score_batch([x])[0] for x in encoded]
        batched = self.score_batch(encoded)
        reversed_batch = self.score_batch(encoded[::-1])[::-1]
        atol, rtol = tolerance_for(self.dtype)
        for i, (one, many, rev) in enumerate(zip(single, batched, reversed_batch, strict=True)):
            for a, b in ((one, many), (one, rev)):
                if not all(math.isfinite(v) for v in a + b):
                    raise ScoringContractError(f"reference {i}: non-finite score {a} / {b}")
                for u, v in zip(a, b, strict=True):
                    if abs(u - v) > atol + rtol * abs(u):
                        raise ScoringContractError(
                            f"reference {i}: scored alone {u!r} but {v!r} in a padded batch "
                            f"(atol {atol}, rtol {rtol}); check the pad token, padding side "
                            "and attention mask"
                        )
        for j, example in enumerate(self.spec.card_examples):
            got = self.score(example.messages)
            if len(got) != len(example.expected) or any(
                abs(g - e) > example.atol for g, e in zip(got, example.expected, strict=False)
            ):
                raise ScoringContractError(
                    f"model card example {j}: expected {example.expected}, got {list(got)} "
                    f"(atol {example.atol}); wrong template, head or activation?"
                )
        for j, pair in enumerate(self.spec.card_pairs):
            chosen = self.score([*pair.prompt, {"role": "assistant", "content": pair.chosen}])
            rejected = self.score([*pair.prompt, {"role": "assistant", "content": pair.rejected}])
            if not chosen[pair.objective] > rejected[pair.objective]:
                raise ScoringContractError(
                    f"model card pair {j}: chosen scored {chosen[pair.objective]!r}, not above "
                    f"rejected {rejected[pair.objective]!r}"
                )
