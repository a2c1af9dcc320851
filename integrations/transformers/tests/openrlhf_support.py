"""OpenRLHF 0.11.2's own reward code, loaded from its release wheel.

`SingleTurnAgentExecutor` (``openrlhf/utils/agent.py``) is what calls a ``--reward.remote_url``
reward: it loads a ``.py`` file's ``reward_func`` or posts to URLs. The wheel's
``openrlhf/utils/__init__.py`` imports its training stack (DeepSpeed and more), which this
code path does not use, so the two modules it needs are unpacked beside an empty package
``__init__`` and imported from there, unchanged. The Makefile puts the wheel in
``.venv/openrlhf/``.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["FakeEngine", "load_agent", "sampling_params"]

WHEEL_FOLDER = Path(sys.prefix) / "openrlhf"
MODULES = ("openrlhf/utils/agent.py", "openrlhf/utils/logging_utils.py")


def load_agent(scratch: Path) -> ModuleType:
    """``openrlhf.utils.agent`` from the 0.11.2 wheel."""
    wheels = sorted(WHEEL_FOLDER.glob("openrlhf-0.11.2-*.whl"))
    if not wheels:
        raise RuntimeError(
            f"no openrlhf 0.11.2 wheel in {WHEEL_FOLDER}; run `make test` (or "
            f"pip download --no-deps --dest {WHEEL_FOLDER} openrlhf==0.11.2)"
        )
    root = scratch / "openrlhf-src"
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = {Path(n).as_posix().split(".data/purelib/")[-1]: n for n in wheel.namelist()}
        for module in MODULES:
            target = root / module
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wheel.read(names[module]))
    for package in ("openrlhf", "openrlhf/utils"):
        (root / package / "__init__.py").touch()
    for name in [n for n in sys.modules if n == "openrlhf" or n.startswith("openrlhf.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        import openrlhf.utils.agent as agent
    finally:
        sys.path.remove(str(root))
    return agent


class _Output:
    def __init__(self, token_ids: list[int]) -> None:
        self.token_ids = token_ids
        self.finish_reason = "stop"
        self.logprobs = None


class _RequestOutput:
    def __init__(self, token_ids: list[int]) -> None:
        self.outputs = [_Output(token_ids)]


class FakeEngine:
    """Stands in for vLLM (which needs a GPU): "generates" a fixed response per prompt."""

    def __init__(self, tokenizer: Any, responses: dict[str, str]) -> None:
        self.tokenizer = tokenizer
        self.responses = responses

    async def generate(self, prompt_token_ids: list[int], params: Any, **kw: Any) -> Any:
        prompt = self.tokenizer.decode(prompt_token_ids, skip_special_tokens=True)
        text = self.responses[prompt]
        ids = self.tokenizer(text=text, add_special_tokens=False)["input_ids"]
        return _RequestOutput([*ids, self.tokenizer.eos_token_id])


class _SamplingParams:
    max_tokens = 32
    logprobs = None


def sampling_params() -> Any:
    return _SamplingParams()
