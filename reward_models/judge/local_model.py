"""The judge backend for a local transformers causal LM, run on its own thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from arbiter.reward_models.errors import ConfigurationError
from arbiter.reward_models.judge.types import JudgeReply, Messages, SamplingParams, TokenLogprob

__all__ = ["LocalCausalLMBackend"]


class LocalCausalLMBackend:
    """A transformers causal LM as judge, run on its own thread.

    With ``prefill`` set (say ``"[RESULT] "``), the judge does not write
    feedback: the assistant turn is started with the prefill and one forward
    pass gives the distribution of the next token — the grade — whose logprobs
    feed the expectation. Without it, the model generates its answer greedily
    (or by sampling when ``temperature > 0``) with per-token top logprobs.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str = "local", prefill: str | None = None
    ) -> None:
        """Wrap a loaded causal LM and its tokenizer (which needs a chat template)."""
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigurationError("the judge's tokenizer has no chat_template")
        self._model_obj = model.eval()
        self._tokenizer = tokenizer
        self._name = name
        self._prefill = prefill
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="judge-lm")

    @property
    def model(self) -> str:
        """Name the model."""
        return self._name

    async def complete(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Answer on the backend's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.complete_sync, messages, params)

    def _encode(self, messages: Messages) -> list[int]:
        text = self._tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        if self._prefill:
            text += self._prefill
        # The template renders BOS itself; the tokenizer must not add a second.
        ids: list[int] = self._tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    def _top(self, logprobs: Any, k: int) -> tuple[tuple[str, float], ...]:
        values, indices = logprobs.topk(max(1, k))
        return tuple(
            (self._tokenizer.decode([int(i)]), float(v))
            for v, i in zip(values.tolist(), indices.tolist(), strict=True)
        )

    def complete_sync(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Answer on the calling thread (what a local server or a test calls)."""
        import torch

        ids = torch.tensor([self._encode(messages)], device=self._model_obj.device)
        with torch.inference_mode():
            if self._prefill:
                logits = self._model_obj(input_ids=ids).logits[0, -1].float()
                logprobs = torch.log_softmax(logits, -1)
                best = int(logprobs.argmax())
                top = list(self._top(logprobs, params.top_logprobs))
                if params.max_level is not None:
                    vocab = self._tokenizer.get_vocab()
                    levels = [
                        vocab[str(k)] for k in range(1, params.max_level + 1) if str(k) in vocab
                    ]
                    if levels:
                        # The grade must be a level: the likeliest of "1".."max_level"; and
                        # every level's logprob is reported, in the top-k or not, so the
                        # expectation sees the whole distribution over levels.
                        best = max(levels, key=lambda i: float(logprobs[i]))
                        listed = {t for t, _ in top}
                        for i in levels:
                            name = self._tokenizer.decode([i])
                            if name not in listed:
                                top.append((name, float(logprobs[i])))
                token = self._tokenizer.decode([best])
                return JudgeReply(
                    self._prefill + token,
                    (
                        TokenLogprob(self._prefill, 0.0),
                        TokenLogprob(token, float(logprobs[best]), tuple(top)),
                    ),
                    prompt_tokens=int(ids.shape[1]),
                    completion_tokens=1,
                )
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self._model_obj.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=params.max_tokens,
                do_sample=params.temperature > 0,
                temperature=params.temperature if params.temperature > 0 else None,
                top_p=params.top_p if params.temperature > 0 else None,
                top_k=None,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=self._tokenizer.eos_token_id,
            )
        generated = out.sequences[0, ids.shape[1] :].tolist()
        tokens = []
        for position, token_id in enumerate(generated):
            logprobs = torch.log_softmax(out.scores[position][0].float(), -1)
            tokens.append(
                TokenLogprob(
                    self._tokenizer.decode([token_id]),
                    float(logprobs[token_id]),
                    self._top(logprobs, params.top_logprobs),
                )
            )
        return JudgeReply(
            "".join(t.token for t in tokens),
            tuple(tokens),
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=len(generated),
        )
