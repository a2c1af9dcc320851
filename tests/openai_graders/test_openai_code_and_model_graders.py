"""The python grader (a process of its own, a timeout, no survivors) and the model graders
against the loopback judge server (the templated messages reach the model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gradewire as gw
from gradewire.http import RetryPolicy
from gradewire.openai import PythonGraderRuntimeError, UnresponsiveRewardError, openai_grader
from support.judge_server import chat, error

PYTHON_RUNNER = str(Path(gw.__file__).parent / "openai" / "_python_runner.py")


def thread(completion: str, **item: object) -> gw.StringThread:
    return gw.StringThread([("user", "question"), ("assistant", completion)], metadata=item)


def python(source: str, **extra: object) -> dict[str, object]:
    return {"type": "python", "name": "py", "source": source, **extra}


async def test_python_grader_gets_sample_and_item_and_prints_do_not_count():
    source = (
        "import json\n"
        "def grade(sample, item):\n"
        "    print('noise on stdout')\n"
        "    data = sample['output_json']\n"
        "    return float(data['n'] == item['want']['n']) + len(sample['output_text']) / 100\n"
    )
    grader = openai_grader(python(source, pass_threshold=1.0))
    grade = await grader.grade(thread('{"n": 3}', want={"n": 3}))
    assert grade.value == 1.0 + len('{"n": 3}') / 100
    assert grade.info["passed"] is True
    assert "noise on stdout" in grade.info["stderr"]


async def test_python_grader_sees_no_secrets_of_this_process(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    source = (
        "import os\ndef grade(sample, item):\n    return float('OPENAI_API_KEY' in os.environ)\n"
    )
    assert (await openai_grader(python(source)).grade(thread("x"))).value == 0.0


# A python grader that reads what it can of every other process: the environ and cmdline
# of its ancestors (the supervisor's worker, the supervisor, the grading process) and of
# its siblings (the other samples' graders). It returns 1.0 when it found the secret.
SNOOP = """
import os, time
def grade(sample, item):
    time.sleep(0.5)  # the other sample's grader runs meanwhile
    me = os.getpid()
    seen = []
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) == me:
            continue
        for part in ('environ', 'cmdline'):
            try:
                with open(f'/proc/{name}/{part}', 'rb') as file:
                    seen.append(file.read())
            except OSError:
                pass
    secret = item['secret'].encode()
    return float(any(secret in data for data in seen))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_a_python_grader_reads_no_secret_of_any_other_process(tmp_path):
    # The grading process holds the secret in its environment (where an API key lives)
    # and on its command line, from its start, as /proc shows them.
    secret = "gw-secret-" + os.urandom(8).hex()
    script = tmp_path / "grade.py"
    script.write_text(
        "import asyncio, json, sys\n"
        "import gradewire as gw\n"
        "from gradewire.openai import openai_grader\n"
        f"source = {SNOOP!r}\n"
        "grader = openai_grader({'type': 'python', 'name': 'py', 'source': source})\n"
        "secret = sys.argv[1]\n"
        "threads = [gw.StringThread([('user', 'q'), ('assistant', 'a')], "
        "metadata={'secret': secret}) for _ in range(2)]\n"
        "grades = asyncio.run(grader.grade_many(threads))\n"
        "print(json.dumps([g.value if g else None for g in grades]))\n"
    )
    env = {**os.environ, "GW_TEST_API_KEY": secret}
    done = subprocess.run(
        [sys.executable, str(script), secret],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [0.0, 0.0], done.stderr


async def test_a_raising_python_grader_is_a_python_runtime_error():
    grader = openai_grader(python("def grade(sample, item):\n    raise ValueError('bad item')\n"))
    with pytest.raises(PythonGraderRuntimeError, match="ValueError: bad item"):
        await grader.grade(thread("x"))
    assert await grader(thread("x")) is None
    logs = grader.get_logs()
    assert logs["score/python_grader_runtime_error_count"] == 1
    assert logs["score/error_count"] == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return 'high'", "returned str, not a number"),
        ("return float('nan')", "not a finite number"),
        ("import os; os._exit(3)", "exit code 3"),
    ],
)
async def test_a_python_grader_without_a_number_is_a_runtime_error(body, message):
    grader = openai_grader(python(f"def grade(sample, item):\n    {body}\n"))
    with pytest.raises(PythonGraderRuntimeError, match=message):
        await grader.grade(thread("x"))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _processes_below(root: int) -> dict[int, bytes]:
    """Every process below ``root`` and its command line, as the host's /proc shows them."""
    parents: dict[int, int] = {}
    lines: dict[int, bytes] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
            with open(f"/proc/{name}/cmdline", "rb") as file:
                lines[int(name)] = file.read()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X"):
            parents[int(name)] = int(stat[stat.rfind(b")") + 2 :].split()[1])
    below: dict[int, bytes] = {}
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor not in (root, 0, 1):
            ancestor = parents.get(ancestor)
        if ancestor == root:
            below[pid] = lines.get(pid, b"")
    return below


async def test_a_looping_python_grader_is_timed_out_and_leaves_no_process():
    # The grader's pids are its namespace's own where it is isolated: its processes are
    # found by a marker on their command lines instead, below this process (the grading
    # process: the supervisor is its child).
    marker = "gw-marker-" + os.urandom(6).hex()
    source = (
        "import subprocess, sys\n"
        "def grade(sample, item):\n"
        f"    sleeper = 'import time\\nwhile True: time.sleep(1)  # {marker}'\n"
        "    subprocess.Popen([sys.executable, '-c', sleeper], start_new_session=True)\n"
        f"    subprocess.Popen([sys.executable, '-c', 'while True: pass  # {marker}'])\n"
        "    while True:\n"
        "        pass\n"
    )
    grader = openai_grader(python(source), python_timeout=2.0)
    with pytest.raises(UnresponsiveRewardError, match="did not return within 2 s"):
        await grader.grade(thread("x"))

    def left() -> dict[int, bytes]:
        below = _processes_below(os.getpid())
        runner = os.fsencode(PYTHON_RUNNER)
        return {p: c for p, c in below.items() if marker.encode() in c or runner in c}

    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left(), "a process of the grader survived"
    assert await grader(thread("x")) is None
    logs = grader.get_logs()
    assert logs["score/unresponsive_reward_error_count"] == 1
    assert logs["score/timeout_count"] == 1  # a timeout outcome, as on every grader


MESSAGES = [
    {"role": "developer", "content": "You grade answers against {{item.reference.text}}."},
    {"role": "user", "content": [{"type": "input_text", "text": "Answer: {{sample.output_text}}"}]},
]


def score_model(**extra: object) -> dict[str, object]:
    return {
        "type": "score_model",
        "name": "judge",
        "model": "gpt-4o-2024-08-06",
        "input": MESSAGES,
        "range": [0, 10],
        "sampling_params": {
            "temperature": 0.2,
            "max_completions_tokens": 300,
            "seed": 7,
            "top_p": 0.9,
        },
        **extra,
    }


async def test_score_model_sends_the_templated_messages(judge_server):
    judge_server.script(
        chat(json.dumps({"steps": [{"description": "d", "conclusion": "c"}], "result": 7.5}))
    )
    grader = openai_grader(
        score_model(pass_threshold=7),
        base_url=judge_server.base_url,
        api_key="k",
        served_models={"gpt-4o-2024-08-06": "served-judge"},
    )
    grade = await grader.grade(thread("Paris", reference={"text": "Paris is the capital"}))
    assert grade.value == 7.5
    assert grade.info["passed"] is True
    sent = judge_server.chat_requests[0].json
    assert sent["model"] == "served-judge"
    assert sent["messages"][0] == {
        "role": "system",
        "content": "You grade answers against Paris is the capital.",
    }
    assert sent["messages"][1]["role"] == "user"
    assert sent["messages"][1]["content"].startswith("Answer: Paris")
    assert sent["temperature"] == 0.2
    assert sent["seed"] == 7
    assert sent["top_p"] == 0.9
    assert sent.get("max_tokens", sent.get("max_completion_tokens")) == 300
    logs = grader.get_logs()
    assert logs["passed/mean"] == 1.0
    assert logs["judge_calls/mean"] == 1.0


async def test_score_model_out_of_range_is_a_parse_error(judge_server, sleeps):
    judge_server.handler = lambda request: json.dumps({"result": 11})
    model = gw.OpenAIChatModel("m", base_url=judge_server.base_url, api_key="k")
    grader = openai_grader({**score_model(), "sampling_params": None}, model=model)
    assert await grader(thread("x", reference={"text": "y"})) is None
    logs = grader.get_logs()
    assert logs["score/model_grader_parse_error_count"] == 1
    assert len(judge_server.chat_requests) == 2  # the answer and one repair request


async def test_model_grader_errors_by_kind(judge_server, sleeps):
    retry = RetryPolicy(max_attempts=2, sleep=sleeps, random=lambda: 0.0)
    model = gw.OpenAIChatModel("m", base_url=judge_server.base_url, api_key="k", retry=retry)
    grader = openai_grader({**score_model(), "sampling_params": None}, model=model)
    judge_server.handler = lambda request: error(500)
    assert await grader(thread("x", reference={"text": "y"})) is None
    judge_server.handler = lambda request: {
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": "I will not"},
            }
        ],
    }
    assert await grader(thread("x", reference={"text": "y"})) is None
    judge_server.handler = lambda request: {
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {"role": "assistant", "content": '{"result": 0.'},
            }
        ],
    }
    assert await grader(thread("x", reference={"text": "y"})) is None
    assert await grader(thread("x")) is None  # {{item.reference.text}} is missing
    logs = grader.get_logs()
    kinds = [r["error_kind"] for r in grader._logs if "error" in r]
    assert kinds == [
        "model_grader_server_error",
        "model_grader_refusal_error",
        "truncated_observation_error",
        "invalid_variable_error",
    ]
    assert logs["score/model_grader_server_error_count"] == 1
    assert logs["score/model_grader_refusal_error_count"] == 1
    assert logs["score/truncated_observation_error_count"] == 1
    assert logs["score/invalid_variable_error_count"] == 1
    assert logs["score/error_count"] == 4


async def test_label_model_passes_on_passing_labels(judge_server):
    replies = iter(["correct", "incorrect"])
    judge_server.handler = lambda request: json.dumps({"steps": [], "result": next(replies)})
    config = {
        "type": "label_model",
        "name": "labeler",
        "model": "gpt-4o-mini",
        "input": [{"role": "user", "content": "Is {{sample.output_text}} right for {{item.q}}?"}],
        "labels": ["correct", "incorrect"],
        "passing_labels": ["correct"],
    }
    grader = openai_grader(config, base_url=judge_server.base_url, api_key="k")
    yes = await grader.grade(thread("4", q="2+2"))
    no = await grader.grade(thread("5", q="2+2"))
    assert (yes.value, yes.info["label"], yes.info["passed"]) == (1.0, "correct", True)
    assert (no.value, no.info["label"], no.info["passed"]) == (0.0, "incorrect", False)
    sent = judge_server.chat_requests[0].json
    assert sent["messages"][0]["content"].startswith("Is 4 right for 2+2?")
    schema = json.dumps(sent.get("response_format", {}))
    assert "incorrect" in schema or "incorrect" in sent["messages"][-1]["content"]
    assert grader.get_logs()["passed/mean"] == 0.5


def test_sampling_params_the_given_model_cannot_send_are_refused():
    model = gw.OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(gw.InvalidInputError, match="sampling_params sets seed, top_p"):
        openai_grader(score_model(), model=model)
    assert os.name == "posix"
