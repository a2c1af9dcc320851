"""`gradewire serve` as a real subprocess: started on a free port, called, stopped by SIGTERM."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from gradewire.cli._main import main

TESTS = Path(__file__).parents[
    1
]  # the folder of the shared test helpers (support.custom_graders, ...)
SERVE = [sys.executable, "-m", "gradewire", "serve"]


def grader_file(tmp_path: Path, judge_url: str) -> Path:
    path = tmp_path / "graders.toml"
    path.write_text(
        f"""
[judge]
base_url = "{judge_url}"
api_key_env = "JUDGE_KEY"

[[graders]]
type = "custom"
key = "label"
function = "support.custom_graders:label_match"
sample_tables = true

[[graders]]
type = "binary_judge"
key = "helpful"
criteria = "Answers the question"
judge_model = "judge"
"""
    )
    return path


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def read_line(process: subprocess.Popen[str], seconds: float = 30.0) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    assert ready, "the server printed nothing"
    return process.stdout.readline()


def test_serve_runs_answers_and_stops_on_sigterm(tmp_path, judge_server):
    judge_server.handler = lambda request: '{"reasoning": "fine", "verdict": "PASS"}'
    command = [
        sys.executable,
        "-m",
        "gradewire",
        "serve",
        str(grader_file(tmp_path, judge_server.base_url)),
    ]
    process = subprocess.Popen(
        [*command, "--port", "0", "--max-batch", "8", "--max-log-records", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(JUDGE_KEY="judge-key", GRADEWIRE_SERVE_TOKEN="tok"),
    )
    try:
        line = read_line(process)
        match = re.search(
            r"listening on (http://127\.0\.0\.1:\d+) \(bearer token required; "
            r"graders: label, helpful\)",
            line,
        )
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        url = match.group(1)
        headers = {"Authorization": "Bearer tok"}
        thread = {
            "turns": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}],
            "metadata": {"label": "x"},
        }
        with httpx.Client(base_url=url, headers=headers) as client:
            assert client.get("/health").json() == {"status": "ok"}
            graded = client.post("/v1/grade", json={"grader": "helpful", "thread": thread}).json()
            assert graded["grade"]["value"] == 1.0
            rewards = client.post(
                "/get_reward?grader=label",
                json={"query": ["Q x", "Q y"], "prompts": ["Q ", "Q "], "labels": ["x", "x"]},
            ).json()
            assert rewards["rewards"] == [1.0, 0.0]
            for _ in range(3):
                client.post("/v1/grade", json={"grader": "label", "thread": thread})
            # --max-log-records 4: five samples, exact figures, recent rows in the table only.
            logs = client.get("/v1/logs").json()["graders"]["label"]
            assert logs["score/count"] == 5
            assert 0 < len(logs["score/scored_samples"]["data"]) <= 4
            cleared = client.post("/v1/logs/clear", json={}).json()["graders"]["label"]
            assert cleared["score/count"] == 5
            assert client.get("/v1/logs").json()["graders"]["label"] == {}
            assert client.post("/v1/grade", json={"thread": thread}).status_code == 422
            assert httpx.get(f"{url}/v1/graders").status_code == 401
            too_many = client.post(
                "/v1/grade_batch", json={"grader": "label", "threads": [thread] * 9}
            )
            assert too_many.status_code == 413
        assert judge_server.chat_requests[0].headers["authorization"] == "Bearer judge-key"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "gradewire serve: stopped" in out
    assert "Traceback" not in err


def test_serve_without_a_token_answers_this_machine_and_listed_names(tmp_path):
    env = environment(JUDGE_KEY="judge-key")
    env.pop("GRADEWIRE_SERVE_TOKEN", None)
    path = grader_file(tmp_path, "http://127.0.0.1:9/v1")
    process = subprocess.Popen(
        [*SERVE, str(path), "--port", "0", "--allow-host", "rm-node-1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = read_line(process)
        match = re.search(
            r"(http://127\.0\.0\.1:\d+) \(no token: only requests to localhost, 127\.0\.0\.1, "
            r"\[::1\], rm-node-1;",
            line,
        )
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        with httpx.Client(base_url=match.group(1)) as client:
            assert client.get("/v1/graders").status_code == 200
            assert client.get("/v1/graders", headers={"Host": "rm-node-1:8000"}).status_code == 200
            refused = client.get("/v1/graders", headers={"Host": "evil.example"})
            assert refused.status_code == 403
            assert "to serve other hosts" in refused.json()["error"]
            form = client.post(
                "/v1/logs/clear", content=b"{}", headers={"Content-Type": "text/plain"}
            )
            assert form.status_code == 415
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_serve_refuses_a_public_host_without_a_token(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GRADEWIRE_SERVE_TOKEN", raising=False)
    path = grader_file(tmp_path, "http://127.0.0.1:9/v1")
    assert main(["serve", str(path), "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to bind 0.0.0.0 without a token" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--max-log-records", "1"], "max_log_records must be an int >= 2"),
        (["--allow-host", "http://rm-node"], "allowed_hosts takes host names"),
        (["--label-key", " "], "label_key must not be empty"),
    ],
)
def test_serve_refuses_bad_settings(tmp_path, capsys, monkeypatch, options, message):
    monkeypatch.setenv("JUDGE_KEY", "k")
    path = grader_file(tmp_path, "http://127.0.0.1:9/v1")
    assert main(["serve", str(path), "--port", "0", *options]) == 2
    assert message in capsys.readouterr().err


def test_serve_reports_a_bad_grader_file(tmp_path, capsys):
    path = tmp_path / "graders.json"
    path.write_text(json.dumps({"graders": [{"type": "command", "key": "b", "comand": "true"}]}))
    assert main(["serve", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "unknown field 'comand' in the command spec at graders[0]" in err
    assert "did you mean 'command'?" in err


def test_serve_reports_a_port_in_use(tmp_path, capsys, judge_server):
    path = tmp_path / "graders.json"
    path.write_text(
        json.dumps(
            {
                "graders": [
                    {
                        "type": "custom",
                        "key": "l",
                        "function": "support.custom_graders:length_score",
                    }
                ]
            }
        )
    )
    assert main(["serve", str(path), "--port", str(judge_server.port)]) == 1
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


def test_serve_help_lists_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    for option in ["--host", "--port", "--token", "--insecure", "--max-batch", "--max-body-bytes"]:
        assert option in out
    assert "--max-log-records" in out
    assert "--allow-host" in out
    out = " ".join(out.split())  # argparse wraps lines anywhere
    assert "default: 10000" in out
    assert "Content-Type: application/json" in out
    assert "set a token to serve other hosts" in out
    assert "/v1/logs/clear" in out
