"""The certificate gate of the reward adapters: checked once, when the reward is built.

A judge required to hold a certificate (`require_certificate`) is checked by
`gate_certificates` wherever a reward is built from it: `RewardLogger`,
``openrlhf_reward_func``, the reward server (and TRL's and veRL's adapters, tested with
their integrations). It warns or refuses, as the requirement's ``on_failure`` says, before
the judge is asked anything. The judge is a real model client talking to the loopback
judge server; the certificate comes from `certify_judge` on that server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re

import pytest

from gradewire.core import BaseGrader, CombinedGrader, StringThread
from gradewire.eval import JudgeCertificate, certify_judge
from gradewire.judges import BinaryJudgeGrader
from gradewire.judges._certificate import (
    CertificateError,
    gate_certificates,
    require_certificate,
)
from gradewire.models import OpenAIChatModel
from gradewire.train import RewardLogger, openrlhf_reward_func
from support.judge_scripts import last_user
from support.judge_server import JudgeServer, Reply, chat_body

N = 20
TRUTH = {f"s{i}": float(i % 3 != 0) for i in range(N)}  # 13 pass, 7 fail
WRONG = {"[s1]", "[s3]", "[s5]"}  # where the judge errs (a finite agreement interval)


def reading_judge(request: object) -> Reply:
    """Passes an answer marked ZGOOD, fails one marked ZBAD, wrong on WRONG."""
    text = last_user(request)  # type: ignore[arg-type]
    passed = ("ZGOOD" in text) != any(key in text for key in WRONG)
    answer = json.dumps({"reasoning": "read", "verdict": "PASS" if passed else "FAIL"})
    return Reply(json=chat_body(answer, model="judge-2026-01-15"))


def samples() -> dict[str, StringThread]:
    return {
        key: StringThread(
            [("user", f"Question {key}?"), ("assistant", f"[{key}] {'ZGOOD' if good else 'ZBAD'}")]
        )
        for key, good in TRUTH.items()
    }


def judge(server: JudgeServer, criteria: str = "Is marked good") -> BinaryJudgeGrader:
    model = OpenAIChatModel("judge", base_url=server.base_url, api_key="k")
    return BinaryJudgeGrader("good", model, criteria)


@pytest.fixture
def certificate(judge_server: JudgeServer) -> JudgeCertificate:
    judge_server.handler = reading_judge
    cert = asyncio.run(
        certify_judge(judge(judge_server), samples(), TRUTH, repeats=2, length=False, seed=1)
    )
    judge_server.requests.clear()
    return cert


def asked(server: JudgeServer) -> int:
    return len(server.requests)


def test_a_reworded_judge_is_refused_before_it_is_asked_anything(
    judge_server: JudgeServer, certificate: JudgeCertificate
) -> None:
    reworded = require_certificate(
        judge(judge_server, "Reworded criteria"), certificate, on_failure="refuse"
    )
    with pytest.raises(CertificateError, match=r"changed: .*criteria.*certify it again"):
        RewardLogger(reworded)
    with pytest.raises(CertificateError, match="openrlhf_reward_func graded nothing"):
        openrlhf_reward_func(reworded)
    assert asked(judge_server) == 0


def test_the_certified_judge_builds_a_reward_with_no_warning(
    judge_server: JudgeServer, certificate: JudgeCertificate, caplog: pytest.LogCaptureFixture
) -> None:
    certified = require_certificate(
        judge(judge_server), certificate, min_agreement=certificate.ci_low, on_failure="refuse"
    )
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        reward_logger = RewardLogger(certified)
        grades = asyncio.run(reward_logger.grade(list(samples().values())[:3]))
    assert [g.value for g in grades if g is not None] == [0.0, 0.0, 1.0]  # s1 is judged wrong
    assert not [r for r in caplog.records if "certif" in r.getMessage()]


def test_warn_logs_each_problem_once_at_build_and_grades(
    judge_server: JudgeServer, certificate: JudgeCertificate, caplog: pytest.LogCaptureFixture
) -> None:
    reworded = require_certificate(judge(judge_server, "Reworded criteria"), certificate)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        reward_logger = RewardLogger(reworded)
        built = [r.getMessage() for r in caplog.records]
        for step in range(3):  # steps: not checked again
            asyncio.run(reward_logger.grade([samples()["s2"]]))
            reward_logger.step(step)
    assert len([m for m in built if "certify it again" in m]) == 1
    assert built[0].startswith("gradewire RewardLogger: judge 'good' is BinaryJudgeGrader-")
    later = [r.getMessage() for r in caplog.records][len(built) :]
    assert not [m for m in later if "certif" in m]
    assert asked(judge_server) == 3


def test_min_agreement_is_read_on_the_lower_end_of_the_interval(
    judge_server: JudgeServer, certificate: JudgeCertificate
) -> None:
    assert certificate.ci_low < certificate.value
    # A bound the point estimate reaches and the interval's lower end does not: refused.
    bound = (certificate.ci_low + certificate.value) / 2
    certified = require_certificate(
        judge(judge_server), certificate, min_agreement=bound, on_failure="refuse"
    )
    with pytest.raises(CertificateError, match=f"below min_agreement={bound:g}"):
        RewardLogger(certified)
    require_certificate(
        certified, certificate, min_agreement=certificate.ci_low - 1e-9, on_failure="refuse"
    )
    RewardLogger(certified)


def test_a_judge_inside_a_combined_grader_or_the_gold_is_checked(
    judge_server: JudgeServer, certificate: JudgeCertificate
) -> None:
    reworded = require_certificate(
        judge(judge_server, "Reworded criteria"), certificate, on_failure="refuse"
    )
    length = BaseGrader.from_function("short", lambda s: float(len(s.completion() or "") < 40))
    with pytest.raises(CertificateError, match="judge 'good'"):
        RewardLogger(CombinedGrader("total", [length, reworded]))
    with pytest.raises(CertificateError, match="judge 'good'"):
        RewardLogger(length, gold=reworded)
    with pytest.raises(CertificateError, match="judge 'good'"):
        openrlhf_reward_func(length, gold=reworded)


def test_the_reward_server_refuses_before_it_serves(
    judge_server: JudgeServer, certificate: JudgeCertificate
) -> None:
    pytest.importorskip("aiohttp")
    from gradewire.server import create_app

    reworded = require_certificate(
        judge(judge_server, "Reworded criteria"), certificate, on_failure="refuse"
    )
    cap = reworded.max_log_records
    with pytest.raises(CertificateError, match="the reward server graded nothing"):
        create_app([reworded])
    assert reworded.max_log_records == cap  # a refused configuration changes no grader
    certified = require_certificate(judge(judge_server), certificate, on_failure="refuse")
    create_app([certified])


def test_a_certificate_of_another_agreement_file_is_read_back_and_gates_the_same(
    judge_server: JudgeServer, certificate: JudgeCertificate, tmp_path: object
) -> None:
    # A certificate whose identity is a judge's of another model: the judge is not it.
    other = dataclasses.replace(certificate, identity="BinaryJudgeGrader-0000000000000000")
    path = other.save(tmp_path / "cert.json")  # type: ignore[operator]
    judged = require_certificate(judge(judge_server), path, on_failure="refuse")
    with pytest.raises(CertificateError) as raised:
        gate_certificates([judged], where="a test")
    message = str(raised.value)
    assert "not the BinaryJudgeGrader-0000000000000000" in message
    assert re.search(r"a test graded nothing", message)


def _grader_file(tmp_path, server: JudgeServer, certificate: str) -> object:
    path = tmp_path / "graders.toml"
    path.write_text(
        "[[graders]]\n"
        'type = "binary_judge"\n'
        'key = "good"\n'
        'criteria = "Is marked good"\n'
        f'judge_model = {{model = "judge", base_url = "{server.base_url}", '
        'api_key_env = "GW_TEST_KEY"}\n'
        f"certificate = {certificate}\n",
        encoding="utf-8",
    )
    return path


def test_a_grader_file_names_the_certificate_and_eval_refuses_before_asking(
    judge_server: JudgeServer, certificate: JudgeCertificate, tmp_path, monkeypatch, capsys
) -> None:
    from gradewire.cli._main import main
    from gradewire.specs import load_graders

    monkeypatch.setenv("GW_TEST_KEY", "k")
    certificate.save(tmp_path / "cert.json")
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"id": key, "messages": [{"role": t.role, "content": t.content} for t in s.turns]}
            )
            + "\n"
            for key, s in samples().items()
        ),
        encoding="utf-8",
    )
    # The path is the grader file's folder's; a bare path or a table.
    ok = _grader_file(tmp_path, judge_server, '"cert.json"')
    (built,) = load_graders(ok)
    requirement = built.certificate_requirement  # type: ignore[attr-defined]
    assert requirement.certificate.identity == certificate.identity
    assert requirement.on_failure == "warn"
    # A bound above the certificate's lower end, refused: nothing is asked.
    strict = _grader_file(
        tmp_path, judge_server, '{path = "cert.json", min_agreement = 0.99, on_failure = "refuse"}'
    )
    argv = ["eval", str(data), "--graders", str(strict), "--out", str(tmp_path / "run")]
    assert main([*argv, "--no-progress"]) == 2
    assert "min_agreement" in capsys.readouterr().err
    assert asked(judge_server) == 0
    # The same file with a bound the certificate meets grades.
    meets = _grader_file(
        tmp_path, judge_server, '{path = "cert.json", min_agreement = -1, on_failure = "refuse"}'
    )
    argv = ["eval", str(data), "--graders", str(meets), "--out", str(tmp_path / "run2")]
    assert main([*argv, "--no-progress"]) == 0
    assert asked(judge_server) == N
