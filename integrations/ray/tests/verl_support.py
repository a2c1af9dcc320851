"""veRL's reward loop on CPU: its config, its batches, what its reward manager decodes, and
the figures a step must log (recomputed in one process).

The batches are what veRL's rollout hands the reward loop: token tensors of prompts and
responses with their attention mask, and per sample ``data_source``, ``reward_model``
(``ground_truth``) and ``extra_info``. The tokenizer is transformers' byte tokenizer,
saved to a folder so veRL loads it by path as it loads a model's (no download).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDict
from transformers import ByT5Tokenizer

import verl_reward
from gradewire import Grade
from gradewire.train import RewardLogger
from gradewire_ray import verl_compute_score

HERE = Path(__file__).resolve().parent


def tokenizer_folder(folder: Path) -> Path:
    ByT5Tokenizer().save_pretrained(str(folder))
    return folder


def reward_config(tokenizer: Path, *, workers: int, name: str = "compute_score") -> DictConfig:
    """The parts of veRL's trainer config its reward loop reads (reward model off)."""
    return OmegaConf.create(
        {
            "actor_rollout_ref": {"model": {"path": str(tokenizer), "tokenizer_path": None}},
            "reward": {
                "num_workers": workers,
                "reward_model": {"enable": False, "enable_resource_pool": False},
                "custom_reward_function": {
                    "path": str(HERE / "verl_reward.py"),
                    "name": name,
                    "reward_kwargs": {},
                },
                "reward_manager": {
                    "source": "register",
                    "name": "naive",
                    "module": {"path": None, "name": None},
                },
            },
        }
    )


def sample(index: int, split: str = "train") -> dict[str, Any]:
    """One rollout: four completions per prompt (a GRPO group), every third one wrong."""
    prompt_index = index // 4
    answer = str(prompt_index * 7)
    response = answer if index % 3 else answer + "0"
    return {
        "prompt": f"What is 7 times {prompt_index}?",
        "response": response,
        "data_source": "arith",
        "ground_truth": answer,
        "extra_info": {"index": prompt_index, "split": split, "question": f"7 x {prompt_index}"},
    }


def batch(samples: Sequence[dict[str, Any]]) -> Any:
    """A veRL DataProto of the samples, left-padded prompts and right-padded responses."""
    from verl import DataProto

    tok = ByT5Tokenizer()
    prompts = [tok(s["prompt"], add_special_tokens=False)["input_ids"] for s in samples]
    responses = [tok(s["response"], add_special_tokens=False)["input_ids"] for s in samples]
    p_len, r_len, n = max(map(len, prompts)), max(map(len, responses)), len(samples)
    p = torch.zeros(n, p_len, dtype=torch.long)
    r = torch.zeros(n, r_len, dtype=torch.long)
    mask = torch.zeros(n, p_len + r_len, dtype=torch.long)
    for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        p[i, p_len - len(prompt) :] = torch.tensor(prompt)
        mask[i, p_len - len(prompt) : p_len] = 1
        r[i, : len(response)] = torch.tensor(response)
        mask[i, p_len : p_len + len(response)] = 1
    non_tensor = {
        "data_source": np.array([s["data_source"] for s in samples], dtype=object),
        "reward_model": np.array(
            [{"ground_truth": s["ground_truth"]} for s in samples], dtype=object
        ),
        "extra_info": np.array([dict(s["extra_info"]) for s in samples], dtype=object),
    }
    tensors = TensorDict({"prompts": p, "responses": r, "attention_mask": mask}, batch_size=n)
    return DataProto(batch=tensors, non_tensor_batch=non_tensor)


def expected_logs(samples: Sequence[dict[str, Any]], section: str = "rewards") -> dict[str, Any]:
    """The step's figures recomputed in this process, one grader, no Ray."""
    grader = verl_reward.grader()
    # The figures of the window alone: drain_reward_stats runs no RewardMonitor.
    logger = RewardLogger(grader, prefix=section, monitor=False)
    reward = verl_compute_score(grader, channel=None).reward  # type: ignore[attr-defined]
    threads = [
        reward.thread(s["data_source"], s["response"], s["ground_truth"], s["extra_info"])
        for s in samples
    ]

    async def grade() -> list[Grade | None]:
        return [await grader(t) for t in threads]

    grades = asyncio.run(grade())
    groups = [f"{s['data_source']}/{s['extra_info']['index']}" for s in samples]
    logger.record(grader, threads, grades, groups=groups)
    return logger.step(0)


def assert_numbers_equal(expected: dict[str, Any], got: dict[str, float]) -> None:
    numbers = {k: v for k, v in expected.items() if isinstance(v, int | float)}
    assert set(got) == set(numbers)
    for key, value in numbers.items():
        if key.endswith(("count", "groups")):
            assert got[key] == value, key
        else:
            assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-15), (
                key,
                got[key],
                value,
            )
