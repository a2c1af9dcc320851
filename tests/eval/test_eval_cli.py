"""`gradewire eval` and `gradewire compare` through the real entry point, as subprocesses."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.eval_cli import GRADEWIRE, env, grader_file, lines, run
from support.judge_scripts import verdict
from support.judge_server import JudgeServer, chat


def data_file(tmp_path: Path, n: int, *, wrong_every: int = 3) -> Path:
    path = tmp_path / "data.jsonl"
    rows = []
    for i in range(n):
        answer = i * 2
        completion = str(answer + (1 if i % wrong_every == 0 else 0))
        rows.append(
            {
                "id": f"q{i}",
                "prompt": f"What is {i} + {i}?",
                "completion": completion,
                "answer": answer,
                "topic": f"t{i % 4}",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_run_writes_results_config_summary_and_report(tmp_path):
    data = data_file(tmp_path, 12)
    out = tmp_path / "run"
    done = run(
        "eval",
        str(data),
        "--graders",
        str(grader_file(tmp_path)),
        "--out",
        str(out),
        "--cluster-key",
        "topic",
        "--sink",
        "jsonl",
    )
    assert done.returncode == 0, done.stderr
    assert "correct" in done.stdout
    assert "clustered by 'topic' (4 clusters)" in done.stdout
    assert len(lines(out)) == 12
    summary = json.loads((out / "summary.json").read_text())
    (grader,) = summary["graders"]
    assert grader["n"] == 12
    assert grader["mean"] == pytest.approx(8 / 12)
    assert grader["n_clusters"] == 4
    assert summary["metrics"]["correct/score/mean"] == pytest.approx(8 / 12)
    config = json.loads((out / "config.json").read_text())
    assert config["graders"][0]["type"] == "custom"
    assert len(config["data"]["sha256"]) == 64
    assert config["sample_ids"] == [f"q{i}" for i in range(12)]
    assert (out / "report.html").stat().st_size > 1000
    logged = [json.loads(line) for line in (out / "logs.jsonl").read_text().splitlines()]
    assert any("correct/score/mean" in json.dumps(entry) for entry in logged)
    again = run("eval", str(data), "--graders", str(grader_file(tmp_path)), "--out", str(out))
    assert again.returncode == 0
    assert len(lines(out)) == 12


def test_interrupted_run_resumes_and_grades_each_sample_once(tmp_path):
    answers = {"calls": 0}

    def handler(request):
        answers["calls"] += 1
        return chat(verdict("PASS"), delay=0.15)

    with JudgeServer(handler) as server:
        data = data_file(tmp_path, 40)
        graders = grader_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        args = [
            *GRADEWIRE,
            "eval",
            str(data),
            "--graders",
            str(graders),
            "--out",
            str(out),
            "--concurrency",
            "4",
            "--no-progress",
        ]
        process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()
        )
        deadline = time.monotonic() + 60
        while not (out / "results.jsonl").exists() or len(lines(out)) < 6:
            assert time.monotonic() < deadline
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _stdout, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "interrupted" in stderr
        first = len(lines(out))
        assert 6 <= first < 40
        assert answers["calls"] == first  # in-flight samples finished and were kept
        summary = json.loads((out / "summary.json").read_text())
        assert summary["complete"] is False
        done = run("eval", str(data), "--graders", str(graders), "--out", str(out), "--no-progress")
        assert done.returncode == 0, done.stderr
        ids = [line["id"] for line in lines(out)]
        assert sorted(ids) == sorted(f"q{i}" for i in range(40))  # each graded exactly once
        assert answers["calls"] == 40
        assert len(server.chat_requests) == 40


def test_retry_errors_regrades_only_the_failures(tmp_path):
    state = {"fail": True}

    def handler(request):
        if state["fail"] and "What is 3 + 3" in json.dumps(request.json):
            return chat("not json at all")  # a parse failure after the one repair attempt
        return chat(verdict("PASS"))

    with JudgeServer(handler) as server:
        data = data_file(tmp_path, 6)
        graders = grader_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        first = run(
            "eval",
            str(data),
            "--graders",
            str(graders),
            "--out",
            str(out),
            "--no-progress",
            "--fail-on-error",
            "0",
        )
        assert first.returncode == 1, first.stderr
        assert "1 of 6 sample(s) had a grader error" in first.stderr
        errors = [line for line in lines(out) if line["grades"]["helpful"]["status"] == "error"]
        assert [line["id"] for line in errors] == ["q3"]
        scored = [line for line in lines(out) if line["grades"]["helpful"]["status"] == "ok"]
        usage = scored[0]["grades"]["helpful"]["usage"]
        assert usage["prompt_tokens"] > 0
        assert usage["judge_calls"] == 1
        assert (
            run(
                "eval",
                str(data),
                "--graders",
                str(graders),
                "--out",
                str(out),
                "--no-progress",
                "--fail-on-error",
                "1",
            ).returncode
            == 0
        )
        state["fail"] = False
        server.requests.clear()
        again = run(
            "eval",
            str(data),
            "--graders",
            str(graders),
            "--out",
            str(out),
            "--no-progress",
            "--retry-errors",
            "--fail-on-error",
            "0",
        )
        assert again.returncode == 0, again.stderr
        assert len(server.chat_requests) == 1  # only q3 went back to the judge
        tail = lines(out)[-1]
        assert tail["id"] == "q3"
        assert list(tail["grades"]) == ["helpful"]
        summary = json.loads((out / "summary.json").read_text())
        assert {g["grader"]: g["errors"] for g in summary["graders"]} == {
            "correct": 0,
            "helpful": 0,
        }


def test_a_changed_spec_regrades_that_grader_only(tmp_path):
    data = data_file(tmp_path, 5)
    out = tmp_path / "run"
    graders = grader_file(tmp_path)
    assert (
        run(
            "eval", str(data), "--graders", str(graders), "--out", str(out), "--no-progress"
        ).returncode
        == 0
    )
    graders.write_text(
        graders.read_text() + '\n[[graders]]\ntype = "custom"\nkey = "length"\n'
        'function = "support.eval_graders:brevity"\n'
    )
    assert (
        run(
            "eval", str(data), "--graders", str(graders), "--out", str(out), "--no-progress"
        ).returncode
        == 0
    )
    added = lines(out)[5:]
    assert len(added) == 5
    assert all(list(line["grades"]) == ["length"] for line in added)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "d.jsonl",
            '{"prompt": "q", "completion": "a"}\n{"prompt": 3, "completion": "a"}\n',
            "d.jsonl:2: field 'prompt' must be a string or a list of messages",
        ),
        ("d.csv", "text,label\nx,y\n", "d.csv:1: no 'messages' or 'prompt' column"),
    ],
)
def test_bad_data_fails_before_grading(tmp_path, name, content, message):
    data = tmp_path / name
    data.write_text(content, encoding="utf-8")
    done = run(
        "eval", str(data), "--graders", str(grader_file(tmp_path)), "--out", str(tmp_path / "o")
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_bad_fail_on_error_value():
    done = run("eval", "x.jsonl", "--graders", "g.toml", "--fail-on-error", "1.5")
    assert done.returncode == 2
    assert "a fraction is between 0 and 1" in done.stderr


def test_compare_json_and_html(tmp_path):
    graders = grader_file(tmp_path)
    data_a = data_file(tmp_path, 40, wrong_every=2)
    run_a = tmp_path / "a"
    assert (
        run(
            "eval", str(data_a), "--graders", str(graders), "--out", str(run_a), "--no-progress"
        ).returncode
        == 0
    )
    data_b = tmp_path / "b.jsonl"
    rows = [json.loads(line) for line in data_a.read_text().splitlines()]
    for row in rows:
        row["completion"] = str(row["answer"])  # model B gets them all right
    rows.append({"id": "extra", "prompt": "new", "completion": "1", "answer": 1})
    data_b.write_text("".join(json.dumps(r) + "\n" for r in rows[1:]), encoding="utf-8")
    run_b = tmp_path / "b"
    assert (
        run(
            "eval", str(data_b), "--graders", str(graders), "--out", str(run_b), "--no-progress"
        ).returncode
        == 0
    )
    html = tmp_path / "cmp.html"
    done = run("compare", str(run_a), str(run_b), "--json", "--html", str(html))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    (g,) = result["graders"]
    assert g["n_pairs"] == 39
    assert g["mean_b"] == 1.0
    assert g["ci_low"] > 0
    assert g["diff"] == pytest.approx(g["mean_b"] - g["mean_a"])
    assert (g["wins"], g["ties"], g["losses"]) == (19, 20, 0)  # q0 (wrong in A) is unpaired
    assert result["unpaired"] == {
        "only_a": ["q0"],
        "only_b": ["extra"],
        "count_only_a": 1,
        "count_only_b": 1,
    }
    from gradewire.eval.reporting._page import asset

    # the page's own scripts (the report's, the filters' and their JSON data, in which no
    # "<" is left as it is), and none from the data
    page = html.read_text()
    own = [f"<script>{asset(name)}</script>" for name in ("report.js", "compare.js")]
    for script in own:
        page = page.replace(script, "")
    data = re.search(r'<script type="application/json" id="gw-data">(.*?)</script>', page, re.S)
    assert data is not None
    assert "<" not in data.group(1)
    assert page.replace(data.group(0), "").count("<script") == 0
    table = run("compare", str(run_a), str(run_b))
    assert "unpaired: 1 sample(s) only in A, 1 only in B" in table.stdout
    assert "McNemar test, Tango score interval" in table.stdout
    missing = run("compare", str(run_a), str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "is no file or folder, and no run an installed tracker knows" in missing.stderr
    assert "pass a gradewire run folder" in missing.stderr


# Everything is checked before the first grade.

WITHOUT = [
    sys.executable,
    "-c",
    "import sys; [sys.modules.__setitem__(name, None) for name in sys.argv[1].split(',')]; "
    "from gradewire.cli._main import main; sys.exit(main(sys.argv[2:]))",
]


def counted_graders(tmp_path: Path) -> Path:
    path = tmp_path / "counted.toml"
    path.write_text(
        '[[graders]]\ntype = "custom"\nkey = "n"\nfunction = "support.eval_graders:counted"\n'
    )
    return path


def run_without(modules: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    environment = env()
    environment["GRADEWIRE_TEST_CALLS"] = str(tmp_path / "calls.txt")
    return subprocess.run(
        [*WITHOUT, modules, *args], capture_output=True, text=True, env=environment, timeout=180
    )


def parquet_data(tmp_path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"prompt": "q", "completion": "a"}]), path)
    return path


def hf_data(tmp_path: Path) -> Path:
    import datasets

    folder = tmp_path / "ds"
    datasets.Dataset.from_list([{"prompt": "q", "completion": "a"}]).save_to_disk(str(folder))
    return folder


@pytest.mark.parametrize(
    ("modules", "data", "options", "extra"),
    [
        ("scipy,scipy.stats", data_file, ["--no-progress"], "eval"),
        ("rich,rich.console", data_file, [], "eval"),
        ("pyarrow,pyarrow.parquet", parquet_data, ["--no-progress"], "parquet"),
        ("datasets", hf_data, ["--no-progress"], "datasets"),
        ("mlflow", data_file, ["--no-progress", "--sink", "mlflow"], "mlflow"),
        ("wandb", data_file, ["--no-progress", "--sink", "wandb"], "wandb"),
        ("ray,ray.data", data_file, ["--no-progress", "--engine", "ray"], "ray"),
    ],
)
def test_a_missing_extra_is_reported_before_anything_is_graded(
    tmp_path, modules, data, options, extra
):
    source = data(tmp_path, 3) if data is data_file else data(tmp_path)
    out = tmp_path / "run"
    done = run_without(
        modules,
        "eval",
        str(source),
        "--graders",
        str(counted_graders(tmp_path)),
        "--out",
        str(out),
        *options,
        tmp_path=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert f"pip install 'gradewire[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "calls.txt").exists()  # no grader ran
    assert not (out / "results.jsonl").exists()


def test_the_extras_check_lets_a_run_through_when_they_are_there(tmp_path):
    done = run_without(
        "nothing_missing",
        "eval",
        str(data_file(tmp_path, 3)),
        "--graders",
        str(counted_graders(tmp_path)),
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "calls.txt").read_text().count("graded") == 3


def test_out_pointing_at_a_file_is_refused_before_grading(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    for out in (taken, taken / "run"):
        done = run_without(
            "nothing_missing",
            "eval",
            str(data_file(tmp_path, 3)),
            "--graders",
            str(counted_graders(tmp_path)),
            "--out",
            str(out),
            "--no-progress",
            tmp_path=tmp_path,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "is a file" in done.stderr
        assert not (tmp_path / "calls.txt").exists()
    assert taken.read_text() == "not a folder"


def test_out_that_cannot_be_written_is_refused_before_grading(tmp_path):
    done = run_without(
        "nothing_missing",
        "eval",
        str(data_file(tmp_path, 3)),
        "--graders",
        str(counted_graders(tmp_path)),
        "--out",
        "/proc/gradewire-run",  # no one, root included, makes a folder there
        "--no-progress",
        tmp_path=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "gradewire-run" in done.stderr
    assert not (tmp_path / "calls.txt").exists()


# The data options, on the command line as in Python.


def test_a_completion_in_another_column_fails_before_grading_and_the_option_maps_it(tmp_path):
    data = tmp_path / "d.jsonl"
    rows = [{"id": f"q{i}", "question": f"{i}+{i}?", "response": str(2 * i)} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    graders = counted_graders(tmp_path)
    out = tmp_path / "run"
    refused = run_without(
        "nothing_missing",
        "eval",
        str(data),
        "--graders",
        str(graders),
        "--out",
        str(out),
        "--no-progress",
        "--prompt-key",
        "question",
        tmp_path=tmp_path,
    )
    assert refused.returncode == 2
    assert "4 row(s) have no completion" in refused.stderr
    assert "--completion-key response" in refused.stderr
    assert not (tmp_path / "calls.txt").exists()
    done = run_without(
        "nothing_missing",
        "eval",
        str(data),
        "--graders",
        str(graders),
        "--out",
        str(out),
        "--no-progress",
        "--prompt-key",
        "question",
        "--completion-key",
        "response",
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    # Lines are written as samples finish (sync graders run in worker threads): find q0.
    first = next(line for line in lines(out) if line["id"] == "q0")["input"]["turns"]
    assert first == [
        {"role": "user", "content": "0+0?"},
        {"role": "assistant", "content": "0"},
    ]


def test_prompt_only_rows_on_the_command_line(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "q1"}\n{"prompt": "q2"}\n', encoding="utf-8")
    args = ["eval", str(data), "--graders", str(counted_graders(tmp_path)), "--no-progress"]
    refused = run_without("nothing_missing", *args, "--out", str(tmp_path / "a"), tmp_path=tmp_path)
    assert refused.returncode == 2
    assert "--allow-prompt-only" in refused.stderr
    done = run_without(
        "nothing_missing",
        *args,
        "--out",
        str(tmp_path / "b"),
        "--allow-prompt-only",
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert len(lines(tmp_path / "b")) == 2


def test_every_data_option_is_on_the_command_line():
    import argparse
    import typing

    from gradewire.cli._eval_cli import add_eval_parser
    from gradewire.eval import DataOptions

    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers())
    flags = {
        action.dest
        for sub in parser._subparsers._group_actions[0].choices.values()
        for action in sub._actions
    }
    assert set(typing.get_type_hints(DataOptions)) <= flags


def test_a_grader_key_with_markup_leaves_a_summary_and_report(tmp_path):
    graders = tmp_path / "g.toml"
    graders.write_text(
        '[[graders]]\ntype = "custom"\nkey = "judge [/v2]"'
        '\nfunction = "support.eval_graders:counted"\n'
        '[[graders]]\ntype = "custom"\nkey = "f1[macro]"'
        '\nfunction = "support.eval_graders:brevity"\n'
    )
    out = tmp_path / "run"
    done = run_without(
        "nothing_missing",
        "eval",
        str(data_file(tmp_path, 3)),
        "--graders",
        str(graders),
        "--out",
        str(out),
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "f1[macro]" in done.stderr  # the live display, as typed
    assert (out / "summary.json").exists()
    assert (out / "report.html").exists()


def test_compare_sink_jsonl_writes_beside_the_report_never_in_the_current_folder(tmp_path):
    graders = grader_file(tmp_path)
    data = data_file(tmp_path, 6)
    for name in ("a", "b"):
        assert (
            run(
                "eval",
                str(data),
                "--graders",
                str(graders),
                "--out",
                str(tmp_path / name),
                "--no-progress",
            ).returncode
            == 0
        )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    without = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--sink", "jsonl", cwd=cwd)
    assert without.returncode == 2
    assert "--html" in without.stderr
    html = tmp_path / "reports" / "cmp.html"
    html.parent.mkdir()
    done = run(
        "compare",
        str(tmp_path / "a"),
        str(tmp_path / "b"),
        "--sink",
        "jsonl",
        "--html",
        str(html),
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    assert list(cwd.iterdir()) == []
    logged = (tmp_path / "reports" / "cmp.jsonl").read_text().splitlines()
    assert any("compare/correct/diff" in line for line in logged)
    assert str(tmp_path / "reports" / "cmp.jsonl") in done.stdout
