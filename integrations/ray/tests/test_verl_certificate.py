"""verl_compute_score checks a judge's certificate when it is built (no Ray needed).

A judge required to hold a certificate (`require_certificate`) that no longer matches it is
refused (or warned about) before veRL calls the function once; the judge is a real model
client on the loopback judge server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest

from gradewire import StringThread
from gradewire.eval import CertificateError, JudgeCertificate, certify_judge, require_certificate
from gradewire.http import forget_endpoint_facts
from gradewire.judges import BinaryJudgeGrader
from gradewire.models import OpenAIChatModel
from gradewire.train import FailurePolicy
from gradewire_ray import verl_compute_score
from support.judge_scripts import last_user
from support.judge_server import JudgeServer, Reply, chat_body

TRUTH = {f"s{i}": float(i % 3 != 0) for i in range(20)}


def reading_judge(request: object) -> Reply:
    """Passes an answer marked ZGOOD, fails one marked ZBAD, wrong on s1, s3 and s5."""
    text = last_user(request)  # type: ignore[arg-type]
    passed = ("ZGOOD" in text) != any(f"[{k}]" in text for k in ("s1", "s3", "s5"))
    answer = json.dumps({"reasoning": "read", "verdict": "PASS" if passed else "FAIL"})
    return Reply(json=chat_body(answer))


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer(reading_judge) as judge_server:
        yield judge_server
    forget_endpoint_facts()


def judge(server: JudgeServer, criteria: str = "Is marked good") -> BinaryJudgeGrader:
    model = OpenAIChatModel("judge", base_url=server.base_url, api_key="k")
    return BinaryJudgeGrader("good", model, criteria)


@pytest.fixture
def certificate(server: JudgeServer) -> JudgeCertificate:
    samples = {
        key: StringThread(
            [("user", f"Question {key}?"), ("assistant", f"[{key}] {'ZGOOD' if ok else 'ZBAD'}")]
        )
        for key, ok in TRUTH.items()
    }
    cert = asyncio.run(certify_judge(judge(server), samples, TRUTH, repeats=2, length=False))
    server.requests.clear()
    return cert


def build(grader: BinaryJudgeGrader) -> object:
    return verl_compute_score(
        grader, sync=True, channel=None, failure=FailurePolicy(failure_value=0.0)
    )


def test_a_judge_that_is_no_longer_the_certified_one_is_refused(
    server: JudgeServer, certificate: JudgeCertificate
) -> None:
    reworded = require_certificate(
        judge(server, "Reworded criteria"), certificate, on_failure="refuse"
    )
    with pytest.raises(CertificateError, match="verl_compute_score graded nothing"):
        build(reworded)
    bound = (certificate.ci_low + certificate.value) / 2
    certified = require_certificate(
        judge(server), certificate, min_agreement=bound, on_failure="refuse"
    )
    with pytest.raises(CertificateError, match="below min_agreement"):
        build(certified)
    assert server.requests == []


def test_warn_logs_at_build_and_scores(
    server: JudgeServer, certificate: JudgeCertificate, caplog: pytest.LogCaptureFixture
) -> None:
    reworded = require_certificate(judge(server, "Reworded criteria"), certificate)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        compute_score = build(reworded)
        warned = [r.getMessage() for r in caplog.records if "certify it again" in r.getMessage()]
        result = compute_score(  # type: ignore[operator]
            data_source="d", solution_str="[s2] ZGOOD", ground_truth="x", extra_info={}
        )
    assert len(warned) == 1
    assert warned[0].startswith("gradewire verl_compute_score: judge 'good'")
    assert result["score"] == 1.0
