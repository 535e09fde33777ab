"""One GRPO batch of code, math and instructions through TRL's GRPOTrainer and the adapter.

HumanEvalPack's code (canonical and buggy solutions), math answers (right, written
otherwise, wrong, hedged) and IFEval instructions (followed, half followed, not)
go through TRL's released reward path in one batch, graded by ``mixed-rl``'s
routes. Each kind gets its route's reward, equal to ``arbiter score`` on the same
rows, and the live server keeps a drift stream per route.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset
from transformers import Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from arbiter.adapters import trl as trl_adapter
from arbiter.client import ArbiterClient
from tests.trainers.conftest import REPO, LiveServer, server_run
from tests.trainers.test_trl import _tokenizer

GENERATIONS = 4
HUMANEVALPACK = REPO.parent / "shared" / "data" / "humanevalpack_python.jsonl"


def _code_prompt() -> tuple[str, dict[str, Any], list[str]]:
    if not HUMANEVALPACK.exists():
        pytest.skip(f"{HUMANEVALPACK} is absent (the shared reference data)")
    row = json.loads(HUMANEVALPACK.read_text().splitlines()[0])
    task = {"kind": "python_function", "tests": row["test"], "entry_point": row["entry_point"]}
    right, buggy = row["canonical_solution"], row["buggy_solution"]
    return row["prompt"], task, [right, buggy, right, buggy]


MATH_PROMPT = r"What is 1/2 + 1/4? Put the final answer in \boxed{}."
MATH_TASK = {"kind": "answer", "answer": r"\frac{3}{4}", "format": "math"}
MATH_COMPLETIONS = [
    r"1/2 + 1/4 = 3/4, so \boxed{\frac{3}{4}}",
    r"That is \boxed{0.75}",
    r"\boxed{\frac{1}{2}}",
    r"\boxed{3} \boxed{4}",
]
IFEVAL_PROMPT = "Write a title in double angular brackets, and use no commas."
IFEVAL_TASK = {
    "kind": "instructions",
    "instruction_id_list": ["detectable_format:title", "punctuation:no_comma"],
    "kwargs": [{}, {}],
}
IFEVAL_COMPLETIONS = ["<<Joy>>\nno commas here", "<<Joy>>\na, b", "plain, text", "<<T>> fine"]


@pytest.mark.slow
def test_a_mixed_batch_through_grpo(live: LiveServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    code_prompt, code_task, code_completions = _code_prompt()
    prompts = {code_prompt: code_task, MATH_PROMPT: MATH_TASK, IFEVAL_PROMPT: IFEVAL_TASK}
    scripted = {
        code_prompt: code_completions,
        MATH_PROMPT: MATH_COMPLETIONS,
        IFEVAL_PROMPT: IFEVAL_COMPLETIONS,
    }
    sources = {code_prompt: "humanevalpack", MATH_PROMPT: "math", IFEVAL_PROMPT: "ifeval"}
    tokenizer = _tokenizer([*prompts, *(c for cs in scripted.values() for c in cs)])
    turns = {p: itertools.cycle(scripted[p]) for p in scripted}

    def rollout(batch_prompts: list[str], trainer: Any) -> dict[str, Any]:
        prompt_ids, completion_ids, logprobs = [], [], []
        for prompt in batch_prompts:
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            completion = tokenizer(next(turns[prompt]), add_special_tokens=False)["input_ids"]
            prompt_ids.append(ids)
            completion_ids.append(completion)
            logprobs.append([0.0] * len(completion))
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs}

    calls: list[dict[str, Any]] = []
    with ArbiterClient(live.url, live.keys["trainer"]) as client:
        funcs, weights = trl_adapter.reward_functions(client, "mixed-rl", composite=True)
        reward = funcs[0]

        def spied(prompts, completions, **kwargs):
            out = reward(prompts, completions, **kwargs)
            calls.append({"prompts": list(prompts), "completions": list(completions), "out": out})
            return out

        spied.__name__ = reward.__name__
        model = Qwen2ForCausalLM(
            Qwen2Config(
                vocab_size=len(tokenizer),
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                max_position_embeddings=2048,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
        )
        args = GRPOConfig(
            output_dir=str(tmp_path / "grpo"),
            per_device_train_batch_size=3 * GENERATIONS,
            num_generations=GENERATIONS,
            max_steps=1,
            max_completion_length=1024,
            logging_steps=1,
            report_to="none",
            use_cpu=True,
            save_strategy="no",
            reward_weights=weights,
            seed=0,
        )
        # One task column for three kinds: Arrow makes it one struct, each row's
        # other kinds' fields null (the adapter drops them).
        dataset = Dataset.from_list(
            [{"prompt": p, "task": t, "data_source": sources[p]} for p, t in prompts.items()]
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[spied],
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            rollout_func=rollout,
        )
        trainer.train()
        streams = client.request("GET", "/v1/drift/streams").json()
    assert trainer.state.global_step == 1
    assert len(calls) == 1 and len(calls[0]["out"]) == 3 * GENERATIONS
    got: dict[tuple[str, str], float] = {}
    for prompt, completion, value in zip(
        calls[0]["prompts"], calls[0]["completions"], calls[0]["out"], strict=True
    ):
        got[(prompt, completion)] = value
    # Each kind got its route's reward.
    assert got[(MATH_PROMPT, MATH_COMPLETIONS[0])] == pytest.approx(1.0)
    assert got[(MATH_PROMPT, MATH_COMPLETIONS[1])] == pytest.approx(1.0)
    assert got[(MATH_PROMPT, MATH_COMPLETIONS[2])] == pytest.approx(0.1)  # wrong, well formed
    assert got[(MATH_PROMPT, MATH_COMPLETIONS[3])] == pytest.approx(-0.5)  # hedged, penalised
    assert got[(IFEVAL_PROMPT, IFEVAL_COMPLETIONS[0])] == pytest.approx(1.0)
    assert got[(IFEVAL_PROMPT, IFEVAL_COMPLETIONS[1])] == pytest.approx(0.5)
    assert got[(IFEVAL_PROMPT, IFEVAL_COMPLETIONS[2])] == pytest.approx(0.0)
    assert got[(code_prompt, code_completions[0])] == pytest.approx(1.0)
    assert got[(code_prompt, code_completions[1])] < 1.0  # the buggy solution fails tests
    # The same rows through `arbiter score` give the same rewards.
    rows = [
        {
            "id": f"row{i}",
            "prompt": prompt,
            "response": completion,
            "task": prompts[prompt],
            "data_source": sources[prompt],
        }
        for i, (prompt, completion) in enumerate(got)
    ]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "rewards.jsonl"
    rubric = REPO / "rubrics" / "library" / "mixed-rl.yaml"
    server_run("score", "--rubric", str(rubric), str(source), "-o", str(out))
    expected = [json.loads(line) for line in out.read_text().splitlines()]
    assert list(got.values()) == pytest.approx([e["reward"] for e in expected])
    assert {e["route"] for e in expected} == {None, "answers", "instructions"}
    # The live server keeps a drift stream per route.
    names = {s["rubric"] for s in streams}
    assert {"mixed-rl", "mixed-rl.answers", "mixed-rl.instructions"} <= names
