"""A tiny TRL run on CPU: a config-built model, a byte tokenizer, two small datasets.

Nothing is downloaded: the model comes from a `Qwen2Config` with random weights, the
tokenizer is `ByT5Tokenizer` (bytes, no files). Training steps take about a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from datasets import Dataset
from transformers import ByT5Tokenizer, Qwen2Config, Qwen2ForCausalLM

__all__ = ["Completions", "conversational_dataset", "standard_dataset", "tiny_grpo", "tiny_model"]

CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def tiny_model(*, chat: bool = False) -> tuple[Qwen2ForCausalLM, ByT5Tokenizer]:
    tokenizer = ByT5Tokenizer()
    tokenizer.padding_side = "left"
    if chat:
        tokenizer.chat_template = CHAT_TEMPLATE
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    return Qwen2ForCausalLM(config), tokenizer


def standard_dataset(rows: int = 16) -> Dataset:
    return Dataset.from_dict(
        {
            "prompt": [f"What is {i} + {i}?" for i in range(rows)],
            "answer": [str(2 * i) for i in range(rows)],
        }
    )


def conversational_dataset(rows: int = 16) -> Dataset:
    return Dataset.from_dict(
        {
            "prompt": [
                [
                    {"role": "system", "content": "Answer with a number."},
                    {"role": "user", "content": f"What is {i} + {i}?"},
                ]
                for i in range(rows)
            ],
            "answer": [str(2 * i) for i in range(rows)],
        }
    )


@dataclass
class Completions:
    """What TRL itself recorded per completion at each logging step, as data frames.

    GRPOTrainer writes ``output_dir/completions/completions_<step>.parquet``; RLOOTrainer
    (1.16) writes no file, only its W&B table ``completions``, read from the offline run.
    """

    frames: dict[int, pd.DataFrame]

    @classmethod
    def from_parquet(cls, folder: Path) -> Completions:
        return cls(
            {
                int(path.stem.split("_")[1]): pd.read_parquet(path)
                for path in folder.glob("completions_*.parquet")
            }
        )

    @classmethod
    def from_wandb(cls, run: Any) -> Completions:
        frames: dict[int, pd.DataFrame] = {}
        for row in run.history:
            if "completions" in row:
                data = run.table(row["completions"]).to_dict()
                frame = pd.DataFrame(data["data"], columns=data["columns"]).fillna(np.nan)
                frames[int(row["train/global_step"])] = frame
        return cls(frames)

    def steps(self) -> list[int]:
        return sorted(self.frames)

    def at(self, step: int) -> pd.DataFrame:
        return self.frames[step]


def tiny_grpo(
    tmp_path: Path,
    rewards: Sequence[Any],
    callbacks: Sequence[Any] = (),
    *,
    steps: int = 3,
    batch: int = 4,
    completion_length: int = 8,
) -> Any:
    """A `GRPOTrainer` of the tiny model on the standard dataset: 2 generations a prompt,
    a log at every step, nothing reported or saved, seed 0."""
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = tiny_model()
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        per_device_train_batch_size=batch,
        num_generations=2,
        max_completion_length=completion_length,
        max_steps=steps,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    return GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=list(rewards),
        args=args,
        train_dataset=standard_dataset(),
        callbacks=list(callbacks),
    )
