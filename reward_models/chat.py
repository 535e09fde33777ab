"""Turn a conversation into the token ids a reward model reads, server-side.

Two mistakes this module exists to avoid:

* **A doubled BOS.** Chat templates usually render ``{{ bos_token }}`` as text,
  and the tokenizer then adds its own BOS when that text is encoded: the model
  sees two, which it never saw in training, and its scores shift. The rendered
  text is encoded with ``add_special_tokens=False``; a BOS is prepended only
  when the tokenizer would add one and the template did not render it, and a
  run of leading BOS tokens is collapsed to one.
* **Cutting the end.** A reward model reads its score at the last token, and the
  end of the response is where "did it finish, is the answer right" lives.
  Peers that truncate from the right throw exactly that away. Here the end of
  the response and whatever the template puts after it (end-of-turn markers)
  are always kept. Length is cut from the middle of the prompt first (its
  first ``prompt_head_tokens`` and last ``prompt_tail_tokens`` — the system
  header and the question with the assistant header — are kept longest), then
  from the *start* of the response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from arbiter.reward_models.errors import ConfigurationError, InputTooLongError

__all__ = ["ChatEncoder", "EncodedInput", "Tokenizer", "truncate_keeping_end"]

Message = Mapping[str, Any]


class Tokenizer(Protocol):
    """The slice of a transformers tokenizer this module uses."""

    bos_token_id: int | None
    chat_template: str | None

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        """Render a conversation (transformers signature)."""

    def __call__(self, text: Any, **kwargs: Any) -> Any:
        """Encode text (transformers signature)."""


@dataclass(frozen=True, slots=True)
class EncodedInput:
    """One conversation as token ids, with what truncation removed."""

    ids: tuple[int, ...]
    prompt_tokens_cut: int = 0
    response_tokens_cut: int = 0

    @property
    def length(self) -> int:
        """Return the number of tokens."""
        return len(self.ids)

    @property
    def truncated(self) -> bool:
        """Return whether anything was cut."""
        return bool(self.prompt_tokens_cut or self.response_tokens_cut)


def truncate_keeping_end(
    prompt: Sequence[int],
    response: Sequence[int],
    suffix: Sequence[int],
    max_length: int,
    *,
    head: int,
    tail: int,
) -> EncodedInput:
    """Fit prompt + response + suffix in ``max_length``, cutting the prompt's middle first (pure).

    Args:
        prompt: tokens before the response (template header, system, user turns,
            assistant header).
        response: the response's tokens.
        suffix: tokens the template puts after the response; always kept.
        max_length: the most tokens the result may have.
        head: prompt tokens kept from its start for as long as possible.
        tail: prompt tokens kept from its end for as long as possible.

    Raises:
        ConfigurationError: ``max_length`` cannot hold the kept head, tail and
            suffix plus one response token.
    """
    total = len(prompt) + len(response) + len(suffix)
    if total <= max_length:
        return EncodedInput(tuple(prompt) + tuple(response) + tuple(suffix))
    kept_prompt_min = min(len(prompt), head + tail)
    if kept_prompt_min + len(suffix) + min(1, len(response)) > max_length:
        raise ConfigurationError(
            f"max_length {max_length} cannot hold the kept prompt head and tail "
            f"({kept_prompt_min}), the template's suffix ({len(suffix)}) and a response"
        )
    room_for_prompt = max_length - len(suffix) - len(response)
    if room_for_prompt >= kept_prompt_min:
        # Only the prompt's middle goes; the response is whole.
        h = min(head, room_for_prompt)
        t = room_for_prompt - h
        kept = list(prompt[:h]) + (list(prompt[len(prompt) - t :]) if t else [])
        return EncodedInput(
            tuple(kept) + tuple(response) + tuple(suffix),
            prompt_tokens_cut=len(prompt) - len(kept),
        )
    if len(prompt) <= head + tail:
        kept_prompt = list(prompt)
    else:
        kept_prompt = list(prompt[:head]) + (list(prompt[len(prompt) - tail :]) if tail else [])
    room_for_response = max_length - len(suffix) - len(kept_prompt)
    kept_response = list(response[len(response) - room_for_response :])
    return EncodedInput(
        tuple(kept_prompt) + tuple(kept_response) + tuple(suffix),
        prompt_tokens_cut=len(prompt) - len(kept_prompt),
        response_tokens_cut=len(response) - len(kept_response),
    )


class ChatEncoder:
    """Apply a tokenizer's chat template and truncate, keeping the response's end."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        max_length: int,
        prompt_head_tokens: int = 16,
        prompt_tail_tokens: int = 32,
        truncate: bool = True,
    ) -> None:
        """Wrap a tokenizer.

        ``truncate=False`` refuses an input over ``max_length`` with
        :class:`InputTooLongError` instead of cutting it.

        Raises:
            ConfigurationError: the tokenizer has no chat template, or is not a fast one.
        """
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigurationError(
                "the tokenizer has no chat_template; a reward model must see the format "
                "it was trained on"
            )
        if getattr(tokenizer, "is_fast", True) is False:
            # Offsets locate the response inside the rendered text; only fast
            # (Rust) tokenizers return them.
            raise ConfigurationError("a fast tokenizer is needed (offsets locate the response)")
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.head = prompt_head_tokens
        self.tail = prompt_tail_tokens
        self.truncate = truncate
        bos = tokenizer.bos_token_id
        probe = tokenizer("a", add_special_tokens=True)["input_ids"]
        self.bos_id = bos
        # Whether the tokenizer itself would start a sequence with BOS.
        self.adds_bos = bos is not None and len(probe) > 0 and probe[0] == bos

    def render(self, messages: Sequence[Message]) -> str:
        """Return the conversation rendered by the chat template."""
        text = self.tokenizer.apply_chat_template(list(messages), tokenize=False)
        if not isinstance(text, str):
            raise ConfigurationError("the chat template did not render to text")
        return text

    def encode(self, messages: Sequence[Message]) -> EncodedInput:
        """Encode a conversation whose last message is the response to score.

        Raises:
            InputTooLongError: the input is over ``max_length`` and truncation is off.
        """
        encoded = self._encode(messages)
        if encoded.truncated and not self.truncate:
            total = encoded.length + encoded.prompt_tokens_cut + encoded.response_tokens_cut
            raise InputTooLongError(
                f"the conversation is {total} tokens, over max_length {self.max_length} "
                "(truncation: error)"
            )
        return encoded

    def _encode(self, messages: Sequence[Message]) -> EncodedInput:
        if not messages:
            raise ValueError("a conversation to score needs at least one message")
        text = self.render(messages)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids: list[int] = list(enc["input_ids"])
        offsets: list[tuple[int, int]] = [tuple(o) for o in enc["offset_mapping"]]
        if self.bos_id is not None:
            lead = 0
            while lead < len(ids) and ids[lead] == self.bos_id:
                lead += 1
            if lead > 1:
                ids, offsets = ids[lead - 1 :], offsets[lead - 1 :]
            elif lead == 0 and self.adds_bos:
                ids, offsets = [self.bos_id, *ids], [(0, 0), *offsets]
        content = messages[-1].get("content")
        start = text.rfind(content) if isinstance(content, str) and content else -1
        if start < 0:
            # The template rewrote the response (or it is empty): without its span,
            # keep the end of everything after the prompt's head.
            head = min(self.head, len(ids))
            return truncate_keeping_end(
                ids[:head], ids[head:], [], self.max_length, head=head, tail=0
            )
        end = start + len(content)  # type: ignore[arg-type]
        # A token that straddles the boundary (a merged leading space) counts as response.
        first = next((i for i, (_, b) in enumerate(offsets) if b > start), len(ids))
        last = first
        while last < len(ids) and offsets[last][0] < end:
            last += 1
        return truncate_keeping_end(
            ids[:first],
            ids[first:last],
            ids[last:],
            self.max_length,
            head=self.head,
            tail=self.tail,
        )
