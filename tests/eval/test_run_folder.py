"""The run folder: gradewire writes only into its own runs, one eval at a time, and reads
back what it wrote or says clearly why it cannot."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gradewire as gw
from gradewire.core import InvalidInputError
from gradewire.eval import RunFolderError, load_run, run_eval
from support.eval_cli import GRADEWIRE, env, grader_file, lines, run
from support.eval_helpers import write_rows
from support.judge_scripts import verdict
from support.judge_server import JudgeServer, chat

HF_CONFIG = '{"architectures": ["LlamaForCausalLM"], "hidden_size": 576}\n'


def correct(sample: gw.StringThread) -> float:
    return gw.numeric_match(sample.completion() or "", sample.metadata["answer"])


def data(tmp_path: Path, n: int = 5) -> Path:
    return write_rows(
        tmp_path / "data.jsonl",
        [
            {"id": f"q{i}", "prompt": f"{i}+{i}?", "completion": str(2 * i), "answer": 2 * i}
            for i in range(n)
        ],
    )


def evaluate(folder: Path, source: Path, **options) -> gw.EvalResult:
    grader = gw.BaseGrader.from_function("correct", correct)
    return asyncio.run(run_eval(source, [grader], folder, **options))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# Item 6: a folder that is not a run is never overwritten.


def test_a_model_folder_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(HF_CONFIG)
    (ckpt / "summary.json").write_text('{"mine": true}\n')
    before = snapshot(ckpt)
    with pytest.raises(RunFolderError) as caught:
        evaluate(ckpt, data(tmp_path))
    assert "not a gradewire run" in str(caught.value)
    assert "--force" in str(caught.value)
    assert snapshot(ckpt) == before
    # --force never writes over a file gradewire did not create.
    with pytest.raises(RunFolderError) as forced:
        evaluate(ckpt, data(tmp_path), force=True)
    assert "config.json" in str(forced.value)
    assert "summary.json" in str(forced.value)
    assert snapshot(ckpt) == before


def test_a_project_folder_takes_a_run_only_with_force_and_keeps_its_files(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# my project\n")
    (project / "data.jsonl").write_bytes(data(tmp_path).read_bytes())
    done = run(
        "eval",
        "data.jsonl",
        "--graders",
        str(grader_file(tmp_path)),
        "--out",
        ".",
        "--no-progress",
        cwd=project,
    )
    assert done.returncode == 2
    assert "not a gradewire run" in done.stderr
    assert "--force" in done.stderr
    assert sorted(p.name for p in project.iterdir()) == ["README.md", "data.jsonl"]
    forced = run(
        "eval",
        "data.jsonl",
        "--graders",
        str(grader_file(tmp_path)),
        "--out",
        ".",
        "--no-progress",
        "--force",
        cwd=project,
    )
    assert forced.returncode == 0, forced.stderr
    assert (project / "README.md").read_text() == "# my project\n"
    assert len(load_run(project).records) == 5
    again = run(
        "eval",
        "data.jsonl",
        "--graders",
        str(grader_file(tmp_path)),
        "--out",
        ".",
        "--no-progress",
        cwd=project,
    )
    assert again.returncode == 0, again.stderr  # now a run: resumes without --force


def test_an_empty_or_new_folder_and_an_existing_run_need_no_force(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert len(evaluate(tmp_path / "empty", data(tmp_path)).run.records) == 5
    assert len(evaluate(tmp_path / "new" / "nested", data(tmp_path)).run.records) == 5
    assert evaluate(tmp_path / "empty", data(tmp_path)).outcome.skipped == 5


# Item 7: one eval at a time in a folder; atomic writes never share a temporary file.


def test_a_second_eval_into_a_busy_folder_is_refused_and_nothing_is_graded_twice(
    tmp_path: Path,
) -> None:
    calls = {"n": 0}
    # The first eval's calls after its fourth wait here until the second has been
    # refused: the first is still writing the folder then, however slow the machine.
    second_done = threading.Event()

    async def handler(request):
        calls["n"] += 1
        if calls["n"] > 4:
            while not second_done.is_set():
                await asyncio.sleep(0.02)
        return chat(verdict("PASS"), delay=0.1)

    with JudgeServer(handler) as server:
        source = data(tmp_path, 30)
        graders = grader_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        args = [
            *GRADEWIRE,
            "eval",
            str(source),
            "--graders",
            str(graders),
            "--out",
            str(out),
            "--concurrency",
            "2",
            "--no-progress",
        ]
        first = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()
        )
        deadline = time.monotonic() + 60
        while not (out / "results.jsonl").exists() or len(lines(out)) < 2:
            assert time.monotonic() < deadline
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        second = run(
            "eval", str(source), "--graders", str(graders), "--out", str(out), "--no-progress"
        )
        second_done.set()
        assert second.returncode == 2
        assert "another eval is writing this folder" in second.stderr
        assert f"pid {first.pid}" in second.stderr
        assert "started" in second.stderr
        # SIGKILL: the lock dies with the process; a third run resumes.
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
        third = run(
            "eval", str(source), "--graders", str(graders), "--out", str(out), "--no-progress"
        )
        assert third.returncode == 0, third.stderr
        ids = [line["id"] for line in lines(out)]
        assert sorted(ids) == sorted(f"q{i}" for i in range(30))  # each written once
        assert not (out / ".gradewire.lock").exists()  # removed when released
        # Only samples in flight at the kill can have been asked twice (at most 2).
        assert calls["n"] <= 32


def test_the_lock_in_one_process_and_after_a_kill(tmp_path: Path) -> None:
    from gradewire.eval.runs._folder import LOCK, claim_run_folder

    folder = tmp_path / "run"
    with claim_run_folder(folder):
        stamp = json.loads((folder / LOCK).read_text())
        assert stamp["pid"] == os.getpid()
        busy = f"another eval is writing this folder \\(pid {os.getpid()}"
        with pytest.raises(RunFolderError, match=busy), claim_run_folder(folder):
            pass
    assert not (folder / LOCK).exists()
    (folder / LOCK).write_text('{"pid": 1, "host": "x", "started": "then"}\n')  # a killed one's
    assert len(evaluate(folder, data(tmp_path)).run.records) == 5
    assert not (folder / LOCK).exists()


def test_atomic_writes_from_two_processes_never_collide(tmp_path: Path) -> None:
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from gradewire.eval.runs._folder import write_json\n"
        "for i in range(400):\n"
        "    write_json(Path(sys.argv[1]) / 'config.json', {'writer': sys.argv[2], 'i': i})\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path), name],
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
        )
        for name in ("a", "b")
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    assert json.loads((tmp_path / "config.json").read_text())["i"] == 399
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]  # no temporary left


# Item 14: a results file is read back or refused with its file and line.


def test_blank_lines_in_results_are_skipped(tmp_path: Path) -> None:
    out = tmp_path / "run"
    evaluate(out, data(tmp_path))
    results = out / "results.jsonl"
    text = results.read_text().splitlines(keepends=True)
    results.write_text(text[0] + "\n" + "   \n" + "".join(text[1:]) + "\n")
    assert len(load_run(out).records) == 5
    assert evaluate(out, data(tmp_path)).outcome.skipped == 5


@pytest.mark.parametrize(
    ("value", "why"),
    [('"abc"', "not a number"), ("null", "not a number"), ("NaN", "not a finite number")],
)
def test_a_bad_value_in_results_names_the_file_and_line(
    tmp_path: Path, value: str, why: str
) -> None:
    out = tmp_path / "run"
    evaluate(out, data(tmp_path))
    results = out / "results.jsonl"
    text = results.read_text().splitlines(keepends=True)
    text[2] = text[2].replace('"value": 1.0', f'"value": {value}')
    assert value in text[2]
    results.write_text("".join(text))
    with pytest.raises(InvalidInputError) as caught:
        load_run(out)
    assert "results.jsonl:3" in str(caught.value)
    assert why in str(caught.value)
    done = run("compare", str(out), str(out))
    assert done.returncode == 2
    assert "results.jsonl:3" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "line",
    [
        "[1, 2]",
        '{"id": 3, "input": {"turns": []}, "grades": {}}',
        '{"id": "x", "input_hash": "h", "input": "text", "grades": {}}',
        '{"id": "x", "input_hash": "h", "input": {"turns": []}, "grades": {"g": {"status": "ok",'
        ' "spec_hash": "s", "grade": {"value": 1, "children": [{"value": "x"}]}}}}',
        '{"id": "x", "input_hash": "h", "input": {"turns": []}, "grades": {"g": {"status": "ok",'
        ' "spec_hash": "s", "grade": {"value": 1}, "seconds": "slow"}}}',
    ],
)
def test_malformed_results_lines_are_refused_with_their_line(tmp_path: Path, line: str) -> None:
    out = tmp_path / "run"
    evaluate(out, data(tmp_path, 2))
    with (out / "results.jsonl").open("a") as handle:
        handle.write(line + "\n")
    with pytest.raises(InvalidInputError, match=r"results\.jsonl:3"):
        load_run(out)


def test_load_run_on_a_folder_that_is_not_a_run_says_so(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(HF_CONFIG)
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(InvalidInputError, match="not a gradewire eval run"):
        load_run(tmp_path)
    with pytest.raises(InvalidInputError, match="not a gradewire eval run"):
        load_run(tmp_path / "missing")


def test_a_folder_that_cannot_be_written_is_refused_before_grading(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunFolderError, match="is a file, not a folder"):
        evaluate(tmp_path / "file", data(tmp_path))
    # Inside a file: no folder can be made there, whoever runs it (root too).
    with pytest.raises(RunFolderError, match=r"cannot make the run folder .*file is a file"):
        evaluate(tmp_path / "file" / "run", data(tmp_path))
    assert (tmp_path / "file").read_text() == "x"
