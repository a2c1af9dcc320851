"""What trl_reward costs inside a TRL step, and how close a judge batch gets to the ideal.

1. Per-completion cost, 512 completions a step: `trl_reward` around a `from_function`
   grader (attached to a `GradewireCallback`, so each batch is also recorded, and the
   window drained once per step as at a logging step) beside a hand-written TRL reward
   function doing the same check (the answer in the completion). Both are called the way
   GRPOTrainer calls them: the sync one directly, the async one on a background event
   loop through ``run_coroutine_threadsafe``. Their difference is then set against a GRPO
   step of the tiny CPU model of the tests at the same 512 completions a step (64 prompts x
   8 generations of 8 tokens; timed here, median of a few steps).
   Target: the adapter adds under 1% to the step.
2. A judge batch: `BinaryJudgeGrader` through `trl_reward` against a loopback judge that
   answers after 50 ms (``tests/support/judge_server.py`` in its own process), 256 distinct
   completions at concurrency 64, beside the ideal 256 / 64 x 50 ms = 200 ms.
   Target: within 1.15x the ideal. Beside it, the same batch through the client as it was
   before its per-schema memos (``schema_memo.py``: every judge call rebuilding the
   response model's JSON schema, its prompt instruction and the strict schema), and the
   floor: raw aiohttp sending 256 requests of the same size to the same server, 64 at a
   time, reading each answer's JSON and nothing more. The ideal counts no client work and
   no machine load; on a loaded 2-core machine the server shares the cores and every
   request's send can cost the client its core, so the floor shows what this machine
   allowed any client in the same run. Each way runs ``--repeats`` times, the ways taking
   turns (a different one first each round); the medians are the figures (best beside
   them), with the load average.
3. Memory when nothing drains the logs (``trl_reward`` without `GradewireCallback`): 40,000
   completions whose grader logs what a judge does (prompt, completion, reasoning and
   usage: about 2.7 KB a sample), through ``trl_reward`` at its default bound beside the
   same grader set to keep everything (``max_log_records = None``, as before the bound);
   memory still held afterwards (tracemalloc), and the figures of both, which must agree.

Run: ``python bench/trl_reward.py [--rounds 20] [--steps 4] [--judge-only]``. Figures move
on a loaded machine; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gradewire import BaseGrader, BinaryJudgeGrader, Grade, OpenAIChatModel, StringThread
from gradewire.judges._binary_judge import BinaryVerdict
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_prompts import binary_prompt
from gradewire.models._dialects import apply_dialect
from gradewire.models._openai_wire import build_payload, encode_payload
from gradewire.models._response_format import json_schema_response_format
from gradewire.models._structured_call import DEFAULT_MAX_TOKENS
from gradewire_transformers import GradewireCallback, trl_reward
from schema_memo import without_schema_memo

BATCH = 512
LATENCY = 0.05
JUDGE_BATCH = 256
CONCURRENCY = 64
SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "judge_server.py"
TESTS = Path(__file__).resolve().parent.parent / "integrations" / "transformers" / "tests"


def batch(step: int) -> dict[str, Any]:
    prompts = [f"What is {i} + {i}?" for i in range(BATCH)]
    completions = [f"The answer is {2 * i + (step + i) % 2}." for i in range(BATCH)]
    return {
        "prompts": prompts,
        "completions": completions,
        "completion_ids": [[0] * (10 + i % 7) for i in range(BATCH)],
        "answer": [str(2 * i) for i in range(BATCH)],
        "trainer_state": None,
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }


def handwritten(
    prompts: list[str], completions: list[str], answer: list[str], **kwargs: Any
) -> list[float]:
    return [float(a in c) for c, a in zip(completions, answer, strict=True)]


def check(sample: StringThread) -> float:
    return float(sample.metadata["answer"] in (sample.completion() or ""))


class Loop:
    """A background event loop, as GRPOTrainer runs its async reward functions."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


def per_completion(rounds: int) -> tuple[float, float]:
    """Microseconds per completion: the hand-written function, and trl_reward."""
    loop = Loop()
    reward = trl_reward(BaseGrader.from_function("exact", check))
    callback = GradewireCallback(reward)
    batches = [batch(step) for step in range(rounds)]
    expected = [handwritten(**b) for b in batches]
    for b, want in zip(batches, expected, strict=True):  # warm-up, and the same answers
        assert loop.run(reward(**b)) == want
    callback.logs_at(0, main=True)
    plain: list[float] = []
    adapter: list[float] = []
    for step, b in enumerate(batches, start=1):
        start = time.perf_counter()
        handwritten(**b)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        loop.run(reward(**b))
        callback.logs_at(step, main=True)  # the logging step's drain, every step here
        adapter.append(time.perf_counter() - start)
    loop.close()
    return (
        statistics.median(plain) / BATCH * 1e6,
        statistics.median(adapter) / BATCH * 1e6,
    )


def grpo_step_seconds(steps: int) -> float:
    """Median seconds of a GRPO step of the tests' tiny model (plain reward function)."""
    sys.path.insert(0, str(TESTS))
    import tempfile

    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from trl_support import standard_dataset, tiny_model

    class Clock(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.starts: list[float] = []
            self.durations: list[float] = []

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.starts.append(time.perf_counter())

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.durations.append(time.perf_counter() - self.starts[-1])

    model, tokenizer = tiny_model()
    clock = Clock()
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[handwritten],
            args=GRPOConfig(
                output_dir=out,
                use_cpu=True,
                per_device_train_batch_size=BATCH,
                num_generations=8,
                max_completion_length=8,
                max_steps=steps + 1,
                report_to=[],
                save_strategy="no",
                disable_tqdm=True,
            ),
            train_dataset=standard_dataset(BATCH),
            callbacks=[clock],
        )
        trainer.train()
    return statistics.median(clock.durations[1:])  # the first step warms up


@contextlib.contextmanager
def judge_server() -> Iterator[str]:
    answer = json.dumps({"reasoning": "checked", "verdict": "PASS"})
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(LATENCY), "--text", answer],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/v1"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


def judge_kwargs(tag: str, round_: int) -> dict[str, Any]:
    kwargs = batch(round_)
    # Distinct completions: identical ones would share one judge call.
    kwargs["completions"] = [f"{c} ({tag} {round_})" for c in kwargs["completions"][:JUDGE_BATCH]]
    for name in ("prompts", "completion_ids", "answer"):
        kwargs[name] = kwargs[name][:JUDGE_BATCH]
    return kwargs


async def floor_batch(session: Any, url: str, bodies: list[bytes]) -> None:
    """The floor: raw aiohttp, CONCURRENCY workers over the batch, as `grade_many` runs."""
    pending = iter(bodies)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}

    async def work() -> None:
        for body in pending:
            async with session.post(url, data=body, headers=headers) as response:
                answer = await response.json()
            assert json.loads(answer["choices"][0]["message"]["content"])["verdict"] == "PASS"

    await asyncio.gather(*(work() for _ in range(CONCURRENCY)))


def floor_bodies(
    grader: BinaryJudgeGrader, threads: list[StringThread], model: OpenAIChatModel
) -> list[bytes]:
    """The bodies the judge sends for ``threads``, made before the clock starts."""
    response_format = json_schema_response_format(BinaryVerdict)
    assert response_format is not None
    bodies = []
    for thread in threads:
        content = binary_prompt(JudgedSample.of(thread), grader.criteria)
        payload = build_payload(
            model.model,
            grader.messages(content),
            temperature=0.0,
            max_tokens=DEFAULT_MAX_TOKENS,
            response_format=None,
            logprobs=None,
            extra_body=None,
        )
        apply_dialect(payload, "json_schema", response_format)
        bodies.append(encode_payload(payload))
    return bodies


WAYS = ("direct", "trl", "trl, no memo", "floor")


def judge_batches(repeats: int, floor: bool) -> dict[str, list[float]]:
    """Seconds per round for JUDGE_BATCH distinct completions, each way: grade_many,
    trl_reward, trl_reward without the schema memos, and the raw aiohttp floor."""
    times: dict[str, list[float]] = {way: [] for way in WAYS if floor or way != "floor"}
    with judge_server() as base_url:
        loop = Loop()
        model = OpenAIChatModel("bench", base_url=base_url, api_key="bench")
        grader = BinaryJudgeGrader("judge", model, "The answer is correct.", sample_tables=False)
        reward = trl_reward(grader, max_concurrency=CONCURRENCY)
        session = loop.run(open_session()) if floor else None
        ways = list(times)
        for round_ in range(repeats + 1):
            # A different way first each round: none always runs after the costliest one
            # (the scheduler favours a process by the CPU it used just before).
            shift = round_ % len(ways)
            for tag in ways[shift:] + ways[:shift]:
                kwargs = judge_kwargs(tag, round_)
                samples = reward.threads(
                    kwargs["prompts"], kwargs["completions"], {"answer": kwargs["answer"]}
                )
                if tag == "floor":
                    bodies = floor_bodies(grader, samples, model)
                    call = floor_batch(session, f"{base_url}/chat/completions", bodies)
                elif tag == "direct":
                    call = grader.grade_many(samples, max_concurrency=CONCURRENCY)
                else:
                    call = reward(**kwargs)
                memo = without_schema_memo() if tag == "trl, no memo" else contextlib.nullcontext()
                with memo:
                    start = time.perf_counter()
                    values = loop.run(call)
                    elapsed = time.perf_counter() - start
                if tag != "floor":
                    assert len(values) == JUDGE_BATCH
                    assert all(v is not None for v in values)
                if round_:  # round 0 warms up the connections
                    times[tag].append(elapsed)
        if session is not None:
            loop.run(session.close())
        loop.close()
    return times


async def open_session() -> Any:
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY))


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def report_judge_batch(repeats: int) -> None:
    ideal = JUDGE_BATCH / CONCURRENCY * LATENCY
    try:
        import aiohttp  # noqa: F401

        floor = True
    except ImportError:
        floor = False
    before = load()
    times = judge_batches(repeats, floor)
    print(
        f"judge batch: {JUDGE_BATCH} completions, {CONCURRENCY} at once, "
        f"{LATENCY * 1e3:.0f} ms judge (median [best] of {repeats}; load {before} -> {load()})"
    )
    print(f"  ideal                       {ideal * 1e3:8.1f} ms")
    labels = {
        "direct": "grader.grade_many",
        "trl": "trl_reward(BinaryJudge)",
        "trl, no memo": "trl_reward, no schema memo",
        "floor": "raw aiohttp, same batch",
    }
    notes = {
        "trl": "   (target <= 1.15x)",
        "trl, no memo": "   (the client before its per-schema memos)",
        "floor": "   (the floor: any client, this machine, this run)",
    }
    medians = {tag: statistics.median(values) for tag, values in times.items()}
    for tag, values in times.items():
        median = medians[tag]
        print(
            f"  {labels[tag]:<27} {median * 1e3:8.1f} ms  = {median / ideal:.3f}x ideal "
            f"[{min(values) / ideal:.3f}x]{notes.get(tag, '')}"
        )
    if floor:
        print(f"  trl_reward / floor          {medians['trl'] / medians['floor']:8.3f}x")
    else:
        print("note: aiohttp is not installed: the floor row is missing")


class JudgeLike(BaseGrader):
    """Logs per sample what a judge logs: the texts, its reasoning and its usage."""

    async def grade(self, sample: StringThread) -> Grade:
        reasoning = f"The answer restates the question ({sample.completion()[:40]}). " * 9
        self.add_log(
            {
                "score": 1.0,
                "prompt": sample.last_user_content() or "",
                "completion": sample.completion() or "",
                "reasoning": reasoning,
                "prompt_tokens": 412,
                "completion_tokens": 96,
                "judge_calls": 1,
            }
        )
        return Grade(1.0, self.grader_key, reasoning)


def undrained_memory(samples: int) -> dict[str, tuple[float, dict[str, Any]]]:
    """Per run: MB still held after ``samples`` completions, and the grader's figures."""
    results: dict[str, tuple[float, dict[str, Any]]] = {}
    for label in ("default bound", "keeps everything"):
        gc.collect()
        tracemalloc.start()
        grader = JudgeLike("judge")
        reward = trl_reward(grader)
        if label == "keeps everything":
            grader.max_log_records = None
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            for start in range(0, samples, BATCH):
                n = min(BATCH, samples - start)
                b = {
                    "prompts": [f"Question {start + i}: " + "x" * 1000 for i in range(n)],
                    "completions": [f"Answer {start + i}: " + "y" * 1000 for i in range(n)],
                    "completion_ids": [[0] * 8] * n,
                    "trainer_state": None,
                    "log_extra": lambda column, values: None,
                    "log_metric": lambda name, value: None,
                }
                asyncio.run(reward(**b))
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        logs = grader.get_logs()
        figures = {k: v for k, v in logs.items() if isinstance(v, int | float)}
        results[label] = (held / 1e6, figures)
        del grader, reward
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-samples", type=int, default=40_000)
    parser.add_argument(
        "--only-memory", action="store_true", help="run section 3 only (no judge server)"
    )
    parser.add_argument(
        "--judge-only", action="store_true", help="only the judge batch (no TRL step timing)"
    )
    args = parser.parse_args()
    if args.only_memory:
        memory(args.memory_samples)
        return
    if args.judge_only:
        report_judge_batch(args.repeats)
        return

    plain_us, adapter_us = per_completion(args.rounds)
    step = grpo_step_seconds(args.steps)
    added = (adapter_us - plain_us) * BATCH / 1e6
    print(f"reward function, {BATCH} completions a step (median of {args.rounds} steps):")
    print(f"  hand-written TRL function   {plain_us:8.2f} us/completion")
    print(f"  trl_reward + callback       {adapter_us:8.2f} us/completion")
    print(f"  added per step              {added * 1e3:8.2f} ms")
    print(f"GRPO step of the tiny model   {step * 1e3:8.1f} ms (median of {args.steps})")
    print(f"  adapter's share of a step   {added / step:8.2%}   (target < 1%)")

    report_judge_batch(args.repeats)
    memory(args.memory_samples)


def memory(samples: int) -> None:
    results = undrained_memory(samples)
    print(f"memory held after {samples:,} judge-like completions, no GradewireCallback:")
    for label, (mb, _) in results.items():
        print(f"  {label:<18}          {mb:8.1f} MB  = {mb * 1e6 / samples:7.0f} B/completion")
    bounded, unbounded = results["default bound"][1], results["keeps everything"][1]
    same = all(
        abs(bounded[k] - unbounded[k]) <= 1e-9 * max(1.0, abs(unbounded[k])) for k in unbounded
    )
    print(f"  figures agree (every key of get_logs)        {same}")


if __name__ == "__main__":
    main()
