"""``gradewire power RUN_A RUN_B --difference D``: the pairs a planned comparison needs."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from gradewire.core import GradewireError

__all__ = ["add_power_parser", "run_power_command"]


def add_power_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``power`` subcommand."""
    parser = commands.add_parser(
        "power",
        help="how many samples a planned comparison needs, from two pilot runs",
        description=(
            "From two pilot runs on the same samples, each grader's spread and pairing "
            "correlation (and, with --cluster-key, design effect) give the pairs a "
            "comparison needs to find a difference of --difference with the given power "
            "(paired t-test, two-sided)."
        ),
    )
    parser.add_argument("run_a", help="the pilot's baseline run folder")
    parser.add_argument("run_b", help="the pilot's other run folder")
    parser.add_argument(
        "--difference",
        type=float,
        required=True,
        help="the difference B - A to find, in score units (0.03: 3 points on a 0/1 grader)",
    )
    parser.add_argument(
        "--power", type=float, default=0.8, help="chance of finding it (default: 0.8)"
    )
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="1 - the test's level (default: 0.95)"
    )
    parser.add_argument(
        "--grader",
        action="append",
        default=None,
        help="plan only this grader (repeatable; default: every grader both runs have)",
    )
    parser.add_argument("--cluster-key", default=None, help="metadata field to cluster by")
    parser.add_argument("--json", action="store_true", help="print the plans as JSON")


def run_power_command(args: argparse.Namespace) -> int:
    """Run ``gradewire power``; returns the exit code."""
    from gradewire.eval import load_run
    from gradewire.eval.comparing._planning import plan_comparison
    from gradewire.eval.reporting._terminal import terminal_safe as safe

    try:
        plans, refused = plan_comparison(
            load_run(args.run_a),
            load_run(args.run_b),
            args.difference,
            graders=args.grader,
            cluster_key=args.cluster_key,
            confidence=args.confidence,
            power=args.power,
        )
    except GradewireError as exc:
        print(f"gradewire power: {safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    # 0: every grader planned; 1: some could not be (named, with why); 2: none could be.
    code = 0 if not refused else (1 if plans else 2)
    if args.json:
        out: dict[str, Any] = {key: asdict(plan) for key, plan in plans.items()}
        out.update({key: {"refused": reason} for key, reason in refused.items()})
        print(json.dumps(out, indent=2))
        return code
    for key, reason in refused.items():
        print(
            f"gradewire power: {safe(key)}: no plan: {safe(reason, multiline=True)} "
            "(the other graders are planned; leave this one out with --grader)",
            file=sys.stderr,
        )
    for key, plan in plans.items():
        clustered = (
            f", design effect {plan.design_effect:.2f}" if args.cluster_key is not None else ""
        )
        print(
            f"{safe(key)}: {plan.n_pairs:,} pairs find a difference of {plan.difference:g} "
            f"{plan.power:.0%} of the time at the {1 - plan.confidence:.0%} level "
            f"(pilot: {plan.pilot_pairs} pairs, sd A {plan.sd_a:.3g}, sd B {plan.sd_b:.3g}, "
            f"pairing correlation {plan.correlation:.2f}, sd of differences "
            f"{plan.sd_difference:.3g}{clustered})"
        )
    return code
