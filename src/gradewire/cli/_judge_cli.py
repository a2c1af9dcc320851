"""``gradewire judge certify|check|align|identity``: a judge against people, over time.

``certify`` grades labelled samples with a judge of a grader file and writes a
`JudgeCertificate` bound to the judge's identity. ``check`` says whether a certificate
still vouches for a judge (of a grader file, or the judge that gave a run's verdicts, as
before a compare), and whether its agreement interval's lower end reaches
``--min-agreement``; it exits 1 when it does not, so a CI step can gate on it.
``align`` calibrates a score-based judge's pass threshold on labels from a run's scores,
with agreement before and after on held-out folds (`calibrate_threshold`); given the
judge's grader file and the samples, it judges them again and also tries few-shot
examples chosen from the judge's disagreements with people and, with a proposer model, a
revised criteria text (`align_judge`), each proven on held-out folds, and writes the
chosen judge as a spec (``--spec-out``). ``identity`` prints a judge's identity and what
it is made of.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from gradewire.core import GradewireError

__all__ = ["add_judge_parser", "run_judge_command"]


def add_judge_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``judge`` subcommand."""
    parser = commands.add_parser(
        "judge",
        help="a judge over time: its identity, a certificate of agreement with people, a gate",
        description="certify: measure a judge against labelled samples (agreement with "
        "intervals, confusion matrix, pass rates, retest flips with the cache bypassed, "
        "position and length audits) and write a certificate bound to its identity. check: "
        "whether a certificate still vouches for a judge or a run's judge (exit 1 if not). "
        "align: adjust a judge to labels (threshold, few-shot examples, criteria), proven on "
        "held-out folds. identity: a judge's identity and its facts.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    certify = actions.add_parser("certify", help="measure a judge against labels")
    certify.add_argument("data", type=Path, help="the samples: .jsonl, .csv, .parquet, folder")
    certify.add_argument(
        "--labels", type=Path, required=True, help="labels (.jsonl/.csv of id, label)"
    )
    _grader_arguments(certify, required=True)
    certify.add_argument("--out", type=Path, default=None, help="the certificate file to write")
    certify.add_argument("--repeats", type=int, default=3, help="retest passes (default: 3)")
    certify.add_argument("--no-length", action="store_true", help="skip the length audit")
    certify.add_argument(
        "--scale", choices=("nominal", "interval"), default=None, help="default: by the labels"
    )
    certify.add_argument("--limit", type=int, default=None, help="only the first N samples")
    certify.add_argument("--concurrency", type=int, default=8, help="samples in flight")
    certify.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    certify.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    certify.add_argument("--json", action="store_true", help="print the certificate as JSON")

    check = actions.add_parser("check", help="does a certificate still vouch for a judge?")
    check.add_argument("certificate", type=Path, help="the certificate file")
    _grader_arguments(check, required=False)
    check.add_argument("--run", default=None, help="a run folder: check the judge of its verdicts")
    check.add_argument(
        "--min-agreement",
        type=float,
        default=None,
        help="the least lower end of the agreement interval",
    )

    align = actions.add_parser(
        "align",
        help="adjust a judge to labels (threshold, few-shot examples, criteria), proven held out",
        description="Without --graders: calibrate the pass threshold of a score-based judge "
        "from the scores in a run folder. With --graders: judge the samples (DATA) with the "
        "file's judge and try, as candidates, the pass threshold (a score-based judge), "
        "few-shot examples chosen from its disagreements with people (--shots), and a "
        "revised criteria text (--propose-criteria or --proposer). Each candidate is made "
        "from the other folds only and judged on the held-out fold; the change in Cohen's "
        "kappa gets a paired bootstrap interval (Bonferroni over the candidates), and no "
        "improvement is claimed whose interval includes 0.",
    )
    align.add_argument(
        "run",
        metavar="RUN_OR_DATA",
        help="a run folder holding the judge's scores; with --graders, the samples to judge "
        "(.jsonl, .csv, .parquet, folder)",
    )
    align.add_argument("--labels", type=Path, required=True, help="pass/fail labels (id, label)")
    align.add_argument(
        "--graders", type=Path, default=None, help="grader file: judge the samples with its judge"
    )
    align.add_argument("--grader", default=None, help="the judge's key (in the run, or the file)")
    align.add_argument(
        "--shots", type=int, default=4, help="most few-shot examples to try (0: none; default 4)"
    )
    align.add_argument(
        "--propose-criteria",
        action="store_true",
        help="ask the judge's own model for a revised criteria text",
    )
    align.add_argument(
        "--proposer",
        default=None,
        help="another model to propose the criteria text: provider/name, or a name served at "
        "--proposer-base-url",
    )
    align.add_argument("--proposer-base-url", default=None, help="the proposer's API root")
    align.add_argument("--concurrency", type=int, default=8, help="samples in flight")
    align.add_argument("--limit", type=int, default=None, help="only the first N samples")
    align.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="the judge's own threshold (default: its pass_threshold in the run, else 0.5)",
    )
    align.add_argument("--folds", type=int, default=5, help="held-out folds (default: 5)")
    align.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    align.add_argument("--seed", type=int, default=0, help="folds and bootstrap seed")
    align.add_argument(
        "--spec-out", type=Path, default=None, help="write the judge's spec with the new threshold"
    )
    align.add_argument("--json", action="store_true", help="print the result as JSON")

    identity = actions.add_parser("identity", help="a judge's identity and its facts")
    _grader_arguments(identity, required=True)
    identity.add_argument("--json", action="store_true", help="print the facts as JSON")


def add_certificate_arguments(parser: argparse.ArgumentParser) -> None:
    """``--certificate``, ``--min-agreement`` and ``--uncertified``, for commands that read runs."""
    parser.add_argument(
        "--certificate",
        type=Path,
        action="append",
        default=[],
        metavar="CERT",
        help="a judge certificate (gradewire judge certify) its judge's verdicts must hold in "
        "every run (repeatable)",
    )
    parser.add_argument(
        "--min-agreement",
        type=float,
        default=None,
        help="with --certificate: the least lower end of its agreement interval",
    )
    parser.add_argument(
        "--uncertified",
        choices=("warn", "refuse"),
        default="warn",
        help="with --certificate: what a run judged by another judge, or a bound not met, "
        "makes (default: warn)",
    )


def check_run_certificates(args: argparse.Namespace, runs: dict[str, Any], command: str) -> None:
    """Check ``--certificate`` against the judges of ``runs``: warn, or refuse (raise)."""
    from gradewire.eval import JudgeCertificate, check_certificate
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.eval.runs._judge_facts import judge_facts

    problems: list[str] = []
    for path in args.certificate:
        certificate = JudgeCertificate.load(path)
        key = certificate.grader
        for name, run in runs.items():
            facts = judge_facts(run).get(key)
            if facts is None:
                problems.append(f"run {name} holds no verdicts of the certified judge {key!r}")
                continue
            for identity in list(facts["identities"]) or [facts["identity"]]:
                problems += check_certificate(
                    identity, certificate, None, what=f"the judge of {key!r} in run {name}"
                )
        problems += check_certificate(
            certificate.identity, certificate, args.min_agreement, what=f"judge {key!r}"
        )
    if problems and args.uncertified == "refuse":
        raise GradewireError("; ".join(problems) + " (--uncertified refuse: nothing was compared)")
    for problem in problems:
        print(f"{command}: warning: {terminal_safe(problem)}", file=sys.stderr)


def _grader_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--graders", type=Path, required=required, default=None, help="grader file (.toml/.json)"
    )
    parser.add_argument("--grader", default=None, help="the judge's key (if several)")


def run_judge_command(args: argparse.Namespace) -> int:
    """Run ``gradewire judge``; returns the exit code."""
    from gradewire.eval.reporting._terminal import terminal_safe

    try:
        if args.action == "certify":
            return _certify(args)
        if args.action == "check":
            return _check(args)
        if args.action == "align":
            return _align(args)
        return _identity(args)
    except GradewireError as exc:
        print(f"gradewire judge: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2


def _judge(args: argparse.Namespace) -> Any:
    from gradewire.cli._audit_cli import _pick
    from gradewire.judges._identity import is_judge
    from gradewire.specs import load_graders

    grader = _pick(load_graders(args.graders), args.grader, args.graders)
    if not is_judge(grader):
        raise GradewireError(
            f"{grader.grader_key!r} is a {type(grader).__name__}, not a judge (a grader that "
            "calls a model): only judges are certified"
        )
    return grader


def _certify(args: argparse.Namespace) -> int:
    from gradewire.eval import certify_judge, load_samples
    from gradewire.eval.auditing._run_agreement import read_labels
    from gradewire.eval.reporting._terminal import terminal_safe

    if args.repeats < 2:
        raise GradewireError(f"--repeats must be 2 or more, not {args.repeats}")
    if args.concurrency < 1:
        raise GradewireError(f"--concurrency must be at least 1, not {args.concurrency}")
    judge = _judge(args)
    samples = {s.id: s.thread for s in load_samples(args.data, limit=args.limit)}
    labels = {k: v for k, v in read_labels(args.labels).items() if k in samples}
    certificate = asyncio.run(
        certify_judge(
            judge,
            samples,
            labels,
            repeats=args.repeats,
            scale=args.scale,
            length=not args.no_length,
            concurrency=args.concurrency,
            n_resamples=args.resamples,
            seed=args.seed,
        )
    )
    if args.out is not None:
        certificate.save(args.out)
    if args.json:
        print(json.dumps(certificate.to_dict(), indent=2, ensure_ascii=True))
    else:
        print(terminal_safe(str(certificate), multiline=True))
        if args.out is not None:
            print(f"certificate: {terminal_safe(args.out.resolve())}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from gradewire.eval import JudgeCertificate, check_certificate
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.judges import identity_facts

    certificate = JudgeCertificate.load(args.certificate)
    if (args.graders is None) == (args.run is None):
        raise GradewireError("give the judge to check: --graders FILE, or --run RUN_FOLDER")
    problems: list[str] = []
    if args.graders is not None:
        judge = _judge(args)
        problems = check_certificate(
            judge.identity,
            certificate,
            args.min_agreement,
            facts=identity_facts(judge),
            what=f"judge {judge.grader_key!r}",
        )
    else:
        from gradewire.eval import load_run
        from gradewire.eval.runs._judge_facts import judge_facts

        run = load_run(args.run)
        key = args.grader or certificate.grader
        facts = judge_facts(run).get(key)
        if facts is None:
            raise GradewireError(f"{args.run} holds no verdicts of a judge {key!r}")
        identities = list(facts["identities"]) or [facts["identity"]]
        for identity in identities:
            problems += check_certificate(
                identity, certificate, None, what=f"the judge of {key!r} in {args.run}"
            )
        problems += check_certificate(
            certificate.identity, certificate, args.min_agreement, what=f"judge {key!r}"
        )
    for problem in problems:
        print(f"gradewire judge check: {terminal_safe(problem)}", file=sys.stderr)
    if not problems:
        print(f"the certificate of {certificate.created} vouches for {certificate.identity}")
    return 1 if problems else 0


def _align(args: argparse.Namespace) -> int:
    from gradewire.eval import load_run
    from gradewire.eval.auditing._calibration import calibrate_threshold
    from gradewire.eval.auditing._run_agreement import read_labels
    from gradewire.eval.reporting._terminal import terminal_safe

    if args.graders is not None:
        return _align_judge(args)
    if args.propose_criteria or args.proposer is not None:
        raise GradewireError(
            "a revised criteria text is judged on the samples again: give the judge's grader "
            "file (--graders FILE) and the samples instead of a run folder"
        )
    if args.grader is None:
        raise GradewireError("give the judge's key in the run: --grader KEY")
    run = load_run(args.run)
    if args.grader not in run.graders:
        raise GradewireError(f"{args.run} has no grader {args.grader!r}: {', '.join(run.graders)}")
    spec = next(
        (
            s
            for s in run.config.get("graders") or []
            if isinstance(s, dict) and s.get("key") == args.grader
        ),
        None,
    )
    threshold = args.threshold
    if threshold is None:
        declared = (spec or {}).get("pass_threshold")
        threshold = float(declared) if isinstance(declared, (int, float)) else 0.5
    result = calibrate_threshold(
        run.scores(args.grader),
        read_labels(args.labels),
        threshold=threshold,
        folds=args.folds,
        n_resamples=args.resamples,
        seed=args.seed,
    )
    # The judge as a spec, diffable against the old: only a proven threshold changes it.
    new_spec = spec
    if spec is not None and result.improved:
        new_spec = {**spec, "pass_threshold": result.threshold}
    if args.spec_out is not None:
        args.spec_out.write_text(json.dumps(new_spec, indent=2, ensure_ascii=True) + "\n")
    if args.json:
        print(json.dumps({**result.to_dict(), "spec": new_spec}, indent=2, ensure_ascii=True))
    else:
        print(terminal_safe(str(result), multiline=True))
    return 0


def _align_judge(args: argparse.Namespace) -> int:
    from gradewire.eval import load_samples
    from gradewire.eval.auditing._alignment import align_judge
    from gradewire.eval.auditing._run_agreement import read_labels
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.models import get_model
    from gradewire.models._get_model import qualified_model_name

    if args.concurrency < 1:
        raise GradewireError(f"--concurrency must be at least 1, not {args.concurrency}")
    judge = _judge(args)
    proposer = None
    if args.proposer is not None:
        proposer = get_model(qualified_model_name(args.proposer), base_url=args.proposer_base_url)
    elif args.proposer_base_url is not None:
        raise GradewireError("--proposer-base-url needs --proposer NAME beside it")
    elif args.propose_criteria:
        proposer = judge.model
    samples = {s.id: s.thread for s in load_samples(Path(args.run), limit=args.limit)}
    labels = {k: v for k, v in read_labels(args.labels).items() if k in samples}
    result = asyncio.run(
        align_judge(
            judge,
            samples,
            labels,
            folds=args.folds,
            shots=args.shots,
            proposer=proposer,
            threshold=args.threshold,
            concurrency=args.concurrency,
            n_resamples=args.resamples,
            seed=args.seed,
        )
    )
    if args.spec_out is not None:
        args.spec_out.write_text(json.dumps(result.spec, indent=2, ensure_ascii=True) + "\n")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=True))
    else:
        print(terminal_safe(str(result), multiline=True))
        if args.spec_out is not None:
            print(f"spec: {terminal_safe(args.spec_out.resolve())}")
    return 0


def _identity(args: argparse.Namespace) -> int:
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.judges import identity_facts

    judge = _judge(args)
    if args.json:
        print(json.dumps({"identity": judge.identity, "facts": identity_facts(judge)}, indent=2))
    else:
        print(terminal_safe(judge.identity))
    return 0
