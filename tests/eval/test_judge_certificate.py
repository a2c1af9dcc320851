"""Judge certificates: agreement with people bound to the judge's identity, and the gate.

The loopback judge reads its prompt: it passes an answer marked ZGOOD and fails one marked
ZBAD, except where a test makes it err, so every figure is known in advance and is also
checked against a reference implementation (scikit-learn, statsmodels, krippendorff).
"""

from __future__ import annotations

import collections
import json
import logging
import math
import re
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from gradewire.core import BaseGrader, InvalidInputError, InvalidTypeError, StringThread
from gradewire.eval import (
    CertificateError,
    JudgeCertificate,
    certify_judge,
    check_certificate,
    require_certificate,
    run_eval,
)
from gradewire.judges import BinaryJudgeGrader, PairwiseJudgeGrader, pair
from gradewire.models import OpenAIChatModel
from support.judge_scripts import last_user
from support.judge_server import JudgeServer, Reply, Request, chat_body

N = 20
TRUTH = {f"s{i}": float(i % 3 != 0) for i in range(N)}  # 13 pass, 7 fail
# Where the judge errs: a false pass (s3), misses (s1, s2).
WRONG = {"s3", "s1", "s2"}


def samples() -> dict[str, StringThread]:
    return {
        key: StringThread(
            [("user", f"Question {key}?"), ("assistant", f"[{key}] {'ZGOOD' if good else 'ZBAD'}")]
        )
        for key, good in TRUTH.items()
    }


class ReadingJudge:
    """Passes ZGOOD and fails ZBAD, wrong on WRONG; flips on the listed calls of a sample."""

    def __init__(self, flips: dict[str, set[int]] | None = None, model: str = "judge-2026-01-15"):
        self.calls: collections.Counter[str] = collections.Counter()
        self.flips = flips or {}
        self.model = model

    def __call__(self, request: Request) -> Reply:
        text = last_user(request)
        found = re.search(r"\[(s\d+)\]", text)
        key = found.group(1) if found else "?"
        self.calls[key] += 1
        passed = "ZGOOD" in text
        if key in WRONG:
            passed = not passed
        if self.calls[key] in self.flips.get(key, set()):
            passed = not passed
        answer = json.dumps({"reasoning": "read", "verdict": "PASS" if passed else "FAIL"})
        return Reply(json=chat_body(answer, model=self.model, system_fingerprint="fp_9"))


def binary(
    server: JudgeServer, criteria: str = "Is marked good", **model: Any
) -> BinaryJudgeGrader:
    return BinaryJudgeGrader(
        "good", OpenAIChatModel("judge", base_url=server.base_url, api_key="k", **model), criteria
    )


def judged_values() -> dict[str, float]:
    return {k: (1.0 - v if k in WRONG else v) for k, v in TRUTH.items()}


async def test_the_certificate_measures_agreement_as_the_references_do(
    judge_server: JudgeServer,
) -> None:
    judge_server.handler = ReadingJudge()
    judge = binary(judge_server)
    cert = await certify_judge(judge, samples(), TRUTH, repeats=2, length=False, n_resamples=500)
    people = [TRUTH[k] for k in TRUTH]
    judged = [judged_values()[k] for k in TRUTH]
    assert cert.identity == judge.identity
    assert cert.statistic == "cohen_kappa"
    assert cert.value == pytest.approx(cohen_kappa_score(people, judged))
    assert cert.ci_low <= cert.value <= cert.ci_high
    assert cert.n == N
    # Rows people, columns the judge: [[fail/fail, fail/pass], [pass/fail, pass/pass]].
    assert cert.confusion == {
        "categories": [0.0, 1.0],
        "rows": "people",
        "columns": "judge",
        "matrix": [[6, 1], [2, 11]],
    }
    rates = cert.rates
    assert rates is not None
    assert rates["base_rate"]["rate"] == pytest.approx(13 / 20)
    assert rates["true_pass_rate"]["rate"] == pytest.approx(11 / 13)
    assert rates["false_pass_rate"]["rate"] == pytest.approx(1 / 7)
    low, high = proportion_confint(11, 13, alpha=0.05, method="wilson")
    assert rates["true_pass_rate"]["ci_low"] == pytest.approx(low)
    assert rates["true_pass_rate"]["ci_high"] == pytest.approx(high)
    assert cert.retest["flip_rate"] == 0.0
    assert cert.served == [{"model": "judge-2026-01-15", "fingerprint": "fp_9", "answers": 2 * N}]
    assert "Cohen's κ" in str(cert)


async def test_the_retest_counts_flips_over_k_passes_with_the_cache_bypassed(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    script = ReadingJudge(flips={"s4": {2}, "s7": {3}})
    judge_server.handler = script
    judge = binary(judge_server, cache=tmp_path / "cache.sqlite")
    # The judge's cache is warm: every sample answered once already.
    await judge.grade_many(list(samples().values()))
    before = sum(script.calls.values())
    cert = await certify_judge(judge, samples(), TRUTH, repeats=3, length=False, n_resamples=0)
    assert sum(script.calls.values()) - before == 3 * N  # no pass came from the cache
    assert cert.retest["repeats"] == 3
    assert sorted(cert.retest["flips"]) == ["s4", "s7"]
    assert cert.retest["flip_rate"] == pytest.approx(2 / N)
    low, high = proportion_confint(2, N, alpha=0.05, method="wilson")
    assert (cert.retest["ci_low"], cert.retest["ci_high"]) == pytest.approx((low, high))
    values = judged_values()
    passes = []
    for call in (1, 2, 3):
        row = dict(values)
        if call == 2:
            row["s4"] = 1.0 - row["s4"]
        if call == 3:
            row["s7"] = 1.0 - row["s7"]
        passes.append([row[k] for k in TRUTH])
    expected = krippendorff.alpha(np.array(passes), level_of_measurement="nominal")
    assert cert.retest["krippendorff_alpha"] == pytest.approx(expected)
    # The judge's own logs were left alone: only the warm-up pass is in them.
    assert judge.get_logs()["score/count"] == N


async def test_a_certificate_round_trips_and_binds_to_the_identity(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    judge_server.handler = ReadingJudge()
    judge = binary(judge_server)
    cert = await certify_judge(judge, samples(), TRUTH, repeats=2, length=False, n_resamples=300)
    path = cert.save(tmp_path / "good.cert.json")
    loaded = JudgeCertificate.load(path)
    assert loaded.identity == cert.identity
    assert loaded.value == pytest.approx(cert.value)
    assert check_certificate(judge.identity, loaded) == []
    changed = binary(judge_server, "Is marked good, strictly")
    (problem,) = check_certificate(changed.identity, loaded, facts=_facts(changed))
    assert "certify it again" in problem
    assert "config.criteria" in problem
    assert check_certificate(judge.identity, loaded, min_agreement=loaded.ci_low - 0.01) == []
    (low,) = check_certificate(judge.identity, loaded, min_agreement=min(1.0, loaded.ci_low + 0.01))
    assert "below min_agreement" in low


def _facts(judge: Any) -> dict[str, Any]:
    from gradewire.judges import identity_facts

    return identity_facts(judge)


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    rows = [{"id": k, "prompt": f"Question {k}?", "completion": f"[{k}] ZGOOD"} for k in TRUTH]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def certificate(judge_server: JudgeServer) -> JudgeCertificate:
    import asyncio

    judge_server.handler = ReadingJudge()
    return asyncio.run(
        certify_judge(
            binary(judge_server), samples(), TRUTH, repeats=2, length=False, n_resamples=300
        )
    )


async def test_eval_refuses_a_judge_that_no_longer_matches_its_certificate(
    judge_server: JudgeServer, tmp_path: Path, certificate: JudgeCertificate
) -> None:
    judge = require_certificate(
        binary(judge_server, "Reworded criteria"), certificate, on_failure="refuse"
    )
    with pytest.raises(CertificateError, match="certify it again"):
        await run_eval(data_file(tmp_path), [judge], tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before anything was graded


async def test_eval_warns_and_grades_when_asked_to_warn(
    judge_server: JudgeServer,
    tmp_path: Path,
    certificate: JudgeCertificate,
    caplog: pytest.LogCaptureFixture,
) -> None:
    judge = require_certificate(binary(judge_server, "Reworded criteria"), certificate)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        result = await run_eval(data_file(tmp_path), [judge], tmp_path / "run")
    assert result.summaries[0].n == N
    assert any("certify it again" in r.getMessage() for r in caplog.records)


async def test_eval_checks_the_lower_end_of_the_interval(
    judge_server: JudgeServer, tmp_path: Path, certificate: JudgeCertificate
) -> None:
    judge = binary(judge_server)  # the certified judge: its identity matches
    assert judge.identity == certificate.identity
    require_certificate(
        judge, certificate, min_agreement=certificate.ci_low - 0.05, on_failure="refuse"
    )
    await run_eval(data_file(tmp_path), [judge], tmp_path / "ok")
    assert math.isfinite(certificate.ci_low)
    # The point estimate passes a bound its interval's lower end does not: refused.
    bound = (certificate.ci_low + certificate.value) / 2
    require_certificate(judge, certificate, min_agreement=bound, on_failure="refuse")
    with pytest.raises(CertificateError, match="below min_agreement"):
        await run_eval(data_file(tmp_path), [judge], tmp_path / "refused")


async def test_a_pairwise_certificate_has_its_position_audit(judge_server: JudgeServer) -> None:
    # A judge that always picks the answer shown first: every pair flips when swapped.
    judge_server.handler = lambda request: Reply(
        json=chat_body(json.dumps({"reasoning": "first", "verdict": "A"}))
    )
    judge = PairwiseJudgeGrader(
        "better", OpenAIChatModel("judge", base_url=judge_server.base_url, api_key="k"), "Better"
    )
    threads = {k: pair(t, "other answer") for k, t in samples().items()}
    cert = await certify_judge(judge, threads, TRUTH, repeats=2, length=False, n_resamples=0)
    assert cert.position is not None
    assert cert.position["consistency"] == 0.0
    assert cert.position["first_position_rate"] == 1.0


async def test_bad_inputs_are_refused(judge_server: JudgeServer) -> None:
    judge = binary(judge_server)
    with pytest.raises(InvalidInputError, match="repeats"):
        await certify_judge(judge, samples(), TRUTH, repeats=1)
    with pytest.raises(InvalidInputError, match="not given"):
        await certify_judge(judge, samples(), {**TRUTH, "nope": 1.0})
    with pytest.raises(InvalidInputError, match="at least 2 labelled"):
        await certify_judge(judge, samples(), {"s1": 1.0})
    function = BaseGrader.from_function("f", lambda t: 1.0)
    with pytest.raises(InvalidTypeError, match="only a judge"):
        require_certificate(function, "x.json")


def judge_files(
    tmp_path: Path, server: JudgeServer, criteria: str = "Is marked good"
) -> tuple[Path, Path, Path]:
    graders = tmp_path / "graders.toml"
    graders.write_text(
        f'[judge]\nbase_url = "{server.base_url}"\n\n'
        f'[[graders]]\ntype = "binary_judge"\nkey = "good"\ncriteria = "{criteria}"\n'
        'judge_model = "judge"\n',
        encoding="utf-8",
    )
    data = tmp_path / "samples.jsonl"
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"id": k, "prompt": f"Question {k}?", "completion": f"[{k}] {'ZGOOD' if v else 'ZBAD'}"}
        for k, v in TRUTH.items()
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    labels.write_text(
        "".join(
            json.dumps({"id": k, "label": "pass" if v else "fail"}) + "\n" for k, v in TRUTH.items()
        ),
        encoding="utf-8",
    )
    return graders, data, labels


def test_the_judge_command_certifies_and_checks(
    judge_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradewire.cli._main import main

    judge_server.handler = ReadingJudge()
    graders, data, labels = judge_files(tmp_path, judge_server)
    cert = tmp_path / "good.cert.json"
    code = main(
        [
            "judge",
            "certify",
            str(data),
            "--labels",
            str(labels),
            "--graders",
            str(graders),
            "--out",
            str(cert),
            "--repeats",
            "2",
            "--no-length",
            "--resamples",
            "300",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "Cohen's κ" in out
    written = json.loads(cert.read_text())
    people = [TRUTH[k] for k in TRUTH]
    assert written["value"] == pytest.approx(
        cohen_kappa_score(people, [judged_values()[k] for k in TRUTH])
    )
    assert main(["judge", "check", str(cert), "--graders", str(graders)]) == 0
    assert (
        main(["judge", "check", str(cert), "--graders", str(graders), "--min-agreement", "0.99"])
        == 1
    )
    assert "below min_agreement" in capsys.readouterr().err
    (tmp_path / "changed").mkdir()
    changed, _, _ = judge_files(tmp_path / "changed", judge_server, "Is marked good, strictly")
    assert main(["judge", "check", str(cert), "--graders", str(changed)]) == 1
    assert "config.criteria" in capsys.readouterr().err
    assert main(["judge", "identity", "--graders", str(graders)]) == 0
    assert capsys.readouterr().out.strip() == written["identity"]


async def test_compare_warns_or_refuses_runs_whose_judge_lost_its_certificate(
    judge_server: JudgeServer,
    tmp_path: Path,
    certificate: JudgeCertificate,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gradewire.cli._main import main

    cert = certificate.save(tmp_path / "cert.json")
    data = data_file(tmp_path)
    await run_eval(data, [binary(judge_server)], tmp_path / "a")
    await run_eval(data, [binary(judge_server, "Reworded criteria")], tmp_path / "b")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    capsys.readouterr()
    assert main(["compare", a, a, "--certificate", str(cert)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["compare", a, b, "--certificate", str(cert), "--allow-changed-graders"]) == 0
    err = capsys.readouterr().err
    assert "the judge of 'good' in run B" in err
    assert "run A" not in err
    refused = ["--certificate", str(cert), "--uncertified", "refuse", "--allow-changed-graders"]
    assert main(["compare", a, b, *refused]) == 2
    assert "nothing was compared" in capsys.readouterr().err
    bound = ["--certificate", str(cert), "--min-agreement", "1.0", "--uncertified", "refuse"]
    assert main(["compare", a, a, *bound]) == 2
