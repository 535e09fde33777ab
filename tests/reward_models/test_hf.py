"""The transformers reward model on tiny random Llama and Qwen2 shapes, built locally."""

from __future__ import annotations

import asyncio
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.reward_models.batcher import BatcherConfig
from arbiter.reward_models.chat import ChatEncoder, truncate_keeping_end
from arbiter.reward_models.client import RewardModelClient
from arbiter.reward_models.errors import ConfigurationError, ScoringContractError
from arbiter.reward_models.hf import CardExample, CardPair, HFRewardModel, HFRewardModelSpec
from tests.reward_models.tiny import (
    EOS_TEMPLATE,
    build_tokenizer,
    llama_config,
    qwen2_config,
    save_reward_model,
    text,
)

ATOL, RTOL = 1e-5, 1e-4


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("reward_models")
    return {
        "llama": save_reward_model(root / "llama", llama_config()),
        "qwen2": save_reward_model(root / "qwen2", qwen2_config()),
        "multi": save_reward_model(root / "multi", llama_config(num_labels=3)),
        "eos": save_reward_model(root / "eos", llama_config(), template=EOS_TEMPLATE),
    }


def conversation(prompt_chars: int, response_chars: int, seed: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": text(prompt_chars, seed)},
        {"role": "assistant", "content": text(response_chars, seed + 1000)},
    ]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * abs(a)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_batched_scores_equal_single_scores(model_dirs, arch, side):
    rm = HFRewardModel.load(
        HFRewardModelSpec(path=str(model_dirs[arch]), padding_side=side, max_length=512)
    )
    convs = [conversation(5 + 17 * i, 3 + 29 * i, seed=i) for i in range(8)]
    encoded = [rm.encode(c) for c in convs]
    assert len({e.length for e in encoded}) == len(encoded)  # real padding in the batch
    single = [rm.score_batch([e])[0][0] for e in encoded]
    batched = [s[0] for s in rm.score_batch(encoded)]
    assert all(close(a, b) for a, b in zip(single, batched, strict=True)), (single, batched)
    # Scores of order 1, so the tolerance is not trivially met by values near 0.
    assert max(abs(s) for s in single) > 0.05
    assert len({round(s, 4) for s in single}) == len(single)


def test_right_and_left_padding_agree(model_dirs):
    right = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"])))
    left = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"]), padding_side="left"))
    convs = [conversation(10 + 40 * i, 20 + 11 * i, seed=50 + i) for i in range(5)]
    a = right.score_batch([right.encode(c) for c in convs])
    b = left.score_batch([left.encode(c) for c in convs])
    assert all(close(x[0], y[0]) for x, y in zip(a, b, strict=True))


def test_client_batches_concurrent_requests_and_matches_single(model_dirs):
    rm = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["qwen2"]), max_length=512))
    client = RewardModelClient(rm, BatcherConfig(max_batch_tokens=2048, max_wait_ms=20))
    convs = [conversation(8 + 13 * i, 5 + 31 * i, seed=200 + i) for i in range(12)]

    async def go():
        return await asyncio.gather(*(client.score(c) for c in convs))

    outputs = asyncio.run(go())
    single = [rm.score(c)[0] for c in convs]
    assert all(close(s, o.values[0]) for s, o in zip(single, outputs, strict=True))
    assert client.stats.batches < len(convs)  # they really were batched
    assert client.stats.padding_efficiency > 0.5


def test_one_bos_whether_the_template_renders_it_or_not(model_dirs):
    rm = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"])))
    bos = rm.tokenizer.bos_token_id
    ids = rm.encode(conversation(10, 10, seed=1)).ids
    # The template renders "<s>" and the tokenizer's post-processor adds another.
    assert ids[0] == bos and ids[1] != bos
    no_bos = build_tokenizer(
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    )
    ids = ChatEncoder(no_bos, max_length=100).encode(conversation(10, 10, seed=1)).ids
    assert ids[0] == bos and ids[1] != bos


def test_truncation_keeps_the_end_of_a_long_response(model_dirs):
    rm = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"]), max_length=128))
    prompt, response = "what is the answer", text(400, 7) + " THE END"
    encoded = rm.encode(
        [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
    )
    assert encoded.length == 128 and encoded.response_tokens_cut > 0
    decoded = rm.tokenizer.decode(encoded.ids).replace(" ", "")
    assert decoded.endswith("THEEND<|end|>")
    # The prompt's head (BOS, role) and tail (the question, assistant header) survive.
    assert decoded.startswith("<s><|user|>whatistheanswer<|end|><|assistant|>")


def test_truncation_cuts_the_prompt_middle_before_the_response(model_dirs):
    rm = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"]), max_length=128))
    prompt = "START" + text(300, 3) + "QUESTION"
    encoded = rm.encode(
        [{"role": "user", "content": prompt}, {"role": "assistant", "content": "short reply"}]
    )
    decoded = rm.tokenizer.decode(encoded.ids).replace(" ", "")
    assert encoded.response_tokens_cut == 0 and encoded.prompt_tokens_cut > 0
    assert decoded.endswith("QUESTION<|end|><|assistant|>shortreply<|end|>")
    assert decoded.startswith("<s><|user|>START")


@pytest.mark.parametrize(
    ("p", "r", "s", "max_length"),
    [(50, 10, 2, 40), (5, 100, 2, 40), (100, 100, 3, 60), (3, 3, 1, 100)],
)
def test_truncate_keeping_end_table(p, r, s, max_length):
    prompt, response, suffix = list(range(p)), list(range(1000, 1000 + r)), [-1] * s
    out = truncate_keeping_end(prompt, response, suffix, max_length, head=4, tail=8).ids
    assert len(out) == min(max_length, p + r + s)
    assert list(out[-s:]) == suffix
    assert out[len(out) - s - 1] == response[-1]  # the response's last token is kept
    assert out[0] == 0  # the prompt's first token (BOS, header) is kept


def test_truncation_that_cannot_fit_is_a_configuration_error():
    with pytest.raises(ConfigurationError):
        truncate_keeping_end(list(range(50)), [1, 2], [9] * 30, 40, head=16, tail=16)


def test_contract_fails_loudly_when_pad_is_eos_and_the_template_ends_in_eos(model_dirs):
    with pytest.raises(ScoringContractError, match="pad token"):
        HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["eos"]), pad_token="</s>"))


def test_a_dedicated_pad_token_fixes_the_same_model(model_dirs):
    rm = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["eos"])))
    assert rm.pad_id != rm.tokenizer.eos_token_id
    assert rm.model.get_input_embeddings().num_embeddings > rm.pad_id


def test_contract_checks_the_model_card_example_and_pair(model_dirs):
    spec = HFRewardModelSpec(path=str(model_dirs["llama"]))
    rm = HFRewardModel.load(spec)
    conv = conversation(20, 20, seed=9)
    actual = rm.score(conv)[0]
    good = spec.model_copy(
        update={"card_examples": [CardExample(messages=conv, expected=[actual], atol=1e-4)]}
    )
    HFRewardModel.load(good)
    bad = spec.model_copy(
        update={"card_examples": [CardExample(messages=conv, expected=[actual + 1.0])]}
    )
    with pytest.raises(ScoringContractError, match="model card example"):
        HFRewardModel.load(bad)
    a, b = text(30, 1), text(30, 2)
    sa = rm.score([*conv[:1], {"role": "assistant", "content": a}])[0]
    sb = rm.score([*conv[:1], {"role": "assistant", "content": b}])[0]
    chosen, rejected = (a, b) if sa > sb else (b, a)
    HFRewardModel.load(
        spec.model_copy(
            update={"card_pairs": [CardPair(prompt=conv[:1], chosen=chosen, rejected=rejected)]}
        )
    )
    with pytest.raises(ScoringContractError, match="pair"):
        HFRewardModel.load(
            spec.model_copy(
                update={"card_pairs": [CardPair(prompt=conv[:1], chosen=rejected, rejected=chosen)]}
            )
        )


def test_raw_logits_by_default_sigmoid_only_when_configured(model_dirs):
    raw = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"])))
    sig = HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["llama"]), activation="sigmoid"))
    conv = conversation(30, 30, seed=3)
    r, s = raw.score(conv)[0], sig.score(conv)[0]
    assert math.isclose(s, 1 / (1 + math.exp(-r)), rel_tol=1e-5)
    # The raw score is the head's logit at the last real token, not a squashed value.
    with torch.no_grad():
        ids = torch.tensor([raw.encode(conv).ids])
        hidden = raw.model.model(input_ids=ids).last_hidden_state[0, -1]
        head = float(raw.model.score(hidden)[0])
    assert math.isclose(r, head, rel_tol=1e-4, abs_tol=1e-5)


def test_multi_objective_heads(model_dirs):
    spec = HFRewardModelSpec(
        path=str(model_dirs["multi"]), objectives=("helpful", "correct", "safe")
    )
    rm = HFRewardModel.load(spec)
    convs = [conversation(10 + 20 * i, 10 + 9 * i, seed=i) for i in range(4)]
    batched = rm.score_batch([rm.encode(c) for c in convs])
    for conv, row in zip(convs, batched, strict=True):
        assert len(row) == 3
        assert all(close(a, b) for a, b in zip(rm.score(conv), row, strict=True))
    with pytest.raises(ConfigurationError, match="3 outputs"):
        HFRewardModel.load(HFRewardModelSpec(path=str(model_dirs["multi"])))


def test_only_local_paths_load(tmp_path):
    with pytest.raises(ConfigurationError, match="not a local model directory"):
        HFRewardModel.load(HFRewardModelSpec(path="meta-llama/Llama-3.1-8B"))
    with pytest.raises(ConfigurationError):
        HFRewardModel.load(HFRewardModelSpec(path=str(tmp_path)))


@given(
    p=st.integers(0, 300),
    r=st.integers(1, 300),
    s=st.integers(0, 5),
    head=st.integers(0, 20),
    tail=st.integers(0, 40),
    max_length=st.integers(8, 700),
)
@settings(max_examples=300, deadline=None)
def test_truncation_properties(p, r, s, head, tail, max_length):
    prompt, response, suffix = list(range(p)), list(range(1000, 1000 + r)), [-1] * s
    try:
        out = truncate_keeping_end(prompt, response, suffix, max_length, head=head, tail=tail)
    except ConfigurationError:
        assert min(p, head + tail) + s + 1 > max_length
        return
    ids = list(out.ids)
    assert len(ids) == min(max_length, p + r + s)
    assert ids[len(ids) - s :] == suffix if s else True
    kept_response = [t for t in ids if t >= 1000]
    # The response survives as a suffix of itself: its end is never cut.
    assert kept_response == response[len(response) - len(kept_response) :]
    assert out.response_tokens_cut == r - len(kept_response)
    kept_prompt = [t for t in ids if 0 <= t < 1000]
    assert out.prompt_tokens_cut == p - len(kept_prompt)
    # The prompt is cut before the response is.
    if out.response_tokens_cut:
        assert len(kept_prompt) == min(p, head + tail)
    assert kept_prompt[: min(head, len(kept_prompt))] == prompt[: min(head, len(kept_prompt))]


def test_a_template_that_rewrites_the_response_still_keeps_the_end():
    # The response cannot be found in the rendered text (the template upper-cases
    # it), so the encoder keeps the head and the end of the whole conversation.
    tok = build_tokenizer(
        "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] | upper }}"
        "<|end|>{% endfor %}"
    )
    encoder = ChatEncoder(tok, max_length=40, prompt_head_tokens=4, prompt_tail_tokens=4)
    encoded = encoder.encode(
        [
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": text(200, 4) + "zz"},
        ]
    )
    decoded = str(tok.decode(list(encoded.ids))).replace(" ", "")
    assert encoded.length == 40 and decoded.startswith("<s><|user|>")
    assert decoded.endswith("ZZ<|end|>")
