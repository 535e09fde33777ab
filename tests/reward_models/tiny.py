"""Tiny, seeded, random-weight models and a character-level tokenizer built locally.

No downloads: the tokenizer is a ``tokenizers`` WordLevel model over printable
ASCII characters (every text encodes, one token per character), wrapped in
``PreTrainedTokenizerFast`` with a chat template, and it adds a BOS itself — so
a template that also renders ``{{ bos_token }}`` exercises the doubled-BOS path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    LlamaConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
)

SPECIALS = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]
CHARS = [chr(i) for i in range(32, 127)] + ["\n", "\t"]

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
# A template that ends every turn in eos: with pad == eos the score is misread.
EOS_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
)


def build_tokenizer(template: str = TEMPLATE, *, pad: str | None = None) -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(SPECIALS + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.add_special_tokens(SPECIALS)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", vocab["<s>"])]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    if pad is not None:
        fast.pad_token = pad
    fast.chat_template = template
    return fast


def llama_config(
    num_labels: int = 1, hidden: int = 32, layers: int = 2, **extra: Any
) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(SPECIALS) + len(CHARS),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        num_labels=num_labels,  # type: ignore[call-arg]  # a PreTrainedConfig kwarg
        bos_token_id=1,
        eos_token_id=2,
        **extra,
    )


def qwen2_config(num_labels: int = 1) -> Qwen2Config:
    return Qwen2Config(
        vocab_size=len(SPECIALS) + len(CHARS),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        num_labels=num_labels,  # type: ignore[call-arg]  # a PreTrainedConfig kwarg
        bos_token_id=1,
        eos_token_id=2,
    )


def build_reward_model(config: Any, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():
        # The default init gives scores near 0, where any tolerance passes; unit
        # weights give scores of order 1, so a misread position shows.
        model.score.weight.normal_(0.0, 1.0)
    return model.eval()


def save_reward_model(
    directory: Path, config: Any, *, template: str = TEMPLATE, pad: str | None = None
) -> Path:
    build_reward_model(config).save_pretrained(directory)
    build_tokenizer(template, pad=pad).save_pretrained(directory)
    return directory


def build_causal_lm(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(llama_config(hidden=32, layers=2)).eval()


def text(n_chars: int, seed: int) -> str:
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, 26, (n_chars,), generator=gen).tolist()
    return "".join(chr(ord("a") + i) if i < 24 else " " for i in idx)
