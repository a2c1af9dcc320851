"""Cutting a tokenizer's end-of-turn markers off the end of a decoded response."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["END_TOKENS", "strip_end_tokens"]

END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "</s>", "<eos>")
"""End-of-sequence and end-of-turn markers of common tokenizers (ChatML, Llama 3, T5, Gemma)."""


def strip_end_tokens(text: str, tokens: Sequence[str] = END_TOKENS) -> str:
    """``text`` without the markers (and the whitespace around them) it ends with.

    Trainers such as OpenRLHF decode responses with special tokens kept, so a grader
    comparing the response to an answer would see ``4</s>``, not ``4``.
    """
    cut = False
    while True:
        trimmed = text.rstrip()
        for token in tokens:
            if token and trimmed.endswith(token):
                text = trimmed[: -len(token)]
                cut = True
                break
        else:
            # Whitespace of the response itself is kept when no marker was cut.
            return trimmed if cut else text
