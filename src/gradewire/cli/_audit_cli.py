"""``gradewire audit retest|position|length DATA --graders FILE --grader KEY``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from gradewire.core import GradewireError

__all__ = ["add_audit_parser", "run_audit_command"]

_KINDS = {
    "retest": "grade every sample twice: Krippendorff's α of the two passes and the flip rate",
    "position": "ask a pairwise judge every pair in both orders: consistency and first-"
    "position rate (rows need an other_completion field)",
    "length": "grade every sample as it is and with a neutral padding of its answer: the "
    "mean shift, with a paired interval",
}


def add_audit_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``audit`` subcommand."""
    parser = commands.add_parser(
        "audit",
        help="measure a judge on your own samples: retest, position bias, length",
        description="Measure how far a judge can be trusted, on your own samples. "
        + " ".join(f"{kind}: {what}." for kind, what in _KINDS.items()),
    )
    parser.add_argument("kind", choices=list(_KINDS), help="which audit")
    parser.add_argument(
        "data", type=Path, help="the samples: .jsonl, .csv, .parquet or a dataset folder"
    )
    parser.add_argument("--graders", type=Path, required=True, help="grader file (.toml or .json)")
    parser.add_argument(
        "--grader", default=None, help="the grader to audit (needed when the file has several)"
    )
    parser.add_argument("--limit", type=int, default=None, help="audit only the first N samples")
    parser.add_argument("--concurrency", type=int, default=8, help="samples in flight (default: 8)")
    parser.add_argument(
        "--padding",
        default=None,
        help="length: the text appended to every answer (default: two sentences that add nothing)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run_audit_command(args: argparse.Namespace) -> int:
    """Run ``gradewire audit``; returns the exit code."""
    from gradewire.eval.reporting._terminal import terminal_safe

    try:
        if args.concurrency < 1:
            raise GradewireError(f"--concurrency must be at least 1, not {args.concurrency}")
        if args.limit is not None and args.limit < 2:
            raise GradewireError(f"--limit must be at least 2, not {args.limit}")
        if args.padding is not None and args.kind != "length":
            raise GradewireError("--padding is for the length audit")
        result = asyncio.run(_audit(args))
    except GradewireError as exc:
        print(f"gradewire audit: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=True))
    else:
        print(terminal_safe(str(result), multiline=True))
    return 0


async def _audit(args: argparse.Namespace) -> Any:
    from gradewire.eval import audit_length, audit_position, audit_retest, load_samples
    from gradewire.specs import load_graders

    graders = load_graders(args.graders)
    grader = _pick(graders, args.grader, args.graders)
    samples = load_samples(args.data, limit=args.limit)
    keyed = {sample.id: sample.thread for sample in samples}
    if args.kind == "retest":
        return await audit_retest(grader, keyed, concurrency=args.concurrency)
    if args.kind == "position":
        return await audit_position(grader, keyed, concurrency=args.concurrency)
    extra = {} if args.padding is None else {"padding": args.padding}
    return await audit_length(grader, keyed, concurrency=args.concurrency, **extra)


def _pick(graders: list[Any], key: str | None, file: Path) -> Any:
    keys = [g.grader_key for g in graders]
    if key is None:
        if len(graders) == 1:
            return graders[0]
        raise GradewireError(
            f"{file} declares {len(graders)} graders ({', '.join(keys)}); name one with --grader"
        )
    for grader in graders:
        if grader.grader_key == key:
            return grader
    raise GradewireError(f"{file} has no grader {key!r}; it declares: {', '.join(keys)}")
