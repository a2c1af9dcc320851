"""A run's judged grader against human labels (or another run's judge): `agreement` on a run.

Labels come as a JSONL or CSV file of ``id`` and ``label`` rows, or as another run whose
grader scored the same samples (inter-judge agreement). The result says how many labels
were used and which were left out, and renders as an escaped HTML page written beside the
run's report.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from gradewire.core import InvalidInputError
from gradewire.eval.reporting._page import escape, page
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.stats import Agreement, agreement
from gradewire.stats._text import format_id

__all__ = [
    "RunAgreement",
    "label_text",
    "page_slug",
    "read_labels",
    "run_agreement",
    "write_agreement_page",
]

Scale = Literal["nominal", "ordinal", "interval"]
_TRUE = {"true", "yes", "pass"}
_FALSE = {"false", "no", "fail"}
# The mark of a page gradewire wrote: only such a file is ever written over.
_MARK = "<!-- written by gradewire agreement -->"
_SHOWN_ROWS = 200


# A number as a labels file writes it: ASCII digits, no "_" separators ("1_000" and Unicode
# digits, which float() takes, are not labels), "nan" and "inf" refused below as not finite.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.ASCII)


def _decimal(text: str) -> float:
    """``text`` (stripped, lower case) as a number; ValueError if it is not one."""
    if _DECIMAL.fullmatch(text) is None:
        raise ValueError(text)
    return float(text)


def _label(value: object, where: str) -> float | None:
    """A label as a number: numbers, booleans, "true"/"false", "pass"/"fail"; None: none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE or text in _FALSE:
            return float(text in _TRUE)
        try:
            number = _decimal(text)
        except ValueError:
            raise InvalidInputError(
                f"{where}: the label {value!r} is not a number; give labels on the grader's "
                "scale (1/0, true/false, pass/fail, or the score itself)"
            ) from None
    else:
        raise InvalidInputError(f"{where}: the label {value!r} is not a number")
    if not math.isfinite(number):
        raise InvalidInputError(f"{where}: the label {value!r} is not a finite number")
    return number


def read_labels(path: str | os.PathLike[str]) -> dict[str, float | None]:
    """The labels of a JSONL or CSV file: one row per sample, with ``id`` and ``label``.

    A label is a number, a boolean, ``true``/``false`` or ``pass``/``fail``; an empty or
    null label is a missing one.

    Raises:
        InvalidInputError: The file is unreadable, a row lacks ``id`` or ``label`` (a CSV
            row with fewer or more fields than its header), a JSON row names a key twice,
            an id repeats, or a label is not a number.
    """
    file = Path(path)
    labels: dict[str, float | None] = {}
    for where, key, raw in _label_rows(file):
        labels[key] = _label(raw, where)
    return labels


def label_text(path: str | os.PathLike[str]) -> dict[float, str]:
    """How a labels file writes each label value: ``{1.0: "pass", 0.0: "fail"}``.

    For showing the labels as given (a confusion matrix's headings). Values written in
    several ways show them all (``"pass / 1"``).

    Raises:
        InvalidInputError: As `read_labels`.
    """
    spellings: dict[float, list[str]] = {}
    for where, _, raw in _label_rows(Path(path)):
        value = _label(raw, where)
        if value is None:
            continue
        text = raw.strip() if isinstance(raw, str) else json.dumps(raw)
        known = spellings.setdefault(value, [])
        if text not in known:
            known.append(text)
    return {value: " / ".join(texts) for value, texts in spellings.items()}


def _label_rows(file: Path) -> list[tuple[str, str, Any]]:
    """``(where, id, raw label)`` per row of a labels file, each id once."""
    suffix = file.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise InvalidInputError(f"{file}: labels are a .jsonl or .csv file, not {suffix!r}")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the labels {file}: {exc}") from exc
    rows: list[tuple[str, Any]] = []
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames or not {"id", "label"} <= set(reader.fieldnames):
            raise InvalidInputError(
                f"{file}: a labels CSV needs the columns id and label, not {reader.fieldnames}"
            )
        width = len(reader.fieldnames)
        for row in reader:
            where = f"{file}:{reader.line_num}"
            if None in row:  # csv's restkey: fields beyond the header
                raise InvalidInputError(
                    f"{where}: the row has more fields than the header's {width}; quote a "
                    "field that holds a comma"
                )
            if any(value is None for value in row.values()):  # csv's restval: fields missing
                raise InvalidInputError(
                    f"{where}: the row has fewer fields than the header's {width}; leave a "
                    "label empty (id,) to say it is missing"
                )
            rows.append((where, row))
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            try:
                row = json.loads(line, object_pairs_hook=_object)
            except _RepeatedKey as exc:
                raise InvalidInputError(
                    f"{where}: the key {exc.key!r} appears twice in one object; JSON readers "
                    "would keep one silently, so keep one yourself"
                ) from None
            except ValueError as exc:
                raise InvalidInputError(f"{where}: not JSON ({exc})") from None
            except RecursionError:
                raise InvalidInputError(f"{where}: the row is nested too deeply") from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{where}: a label row is a JSON object")
            rows.append((where, row))
    out: list[tuple[str, str, Any]] = []
    seen: set[str] = set()
    for where, row in rows:
        if "id" not in row or "label" not in row:
            raise InvalidInputError(f"{where}: a label row needs 'id' and 'label'")
        sample_id = row["id"]
        if not isinstance(sample_id, (str, int)) or isinstance(sample_id, bool):
            raise InvalidInputError(f"{where}: the id {sample_id!r} is not a string")
        key = str(sample_id)
        if key in seen:
            raise InvalidInputError(f"{where}: the id {key!r} is labelled twice")
        seen.add(key)
        out.append((where, key, row["label"]))
    if not out:
        raise InvalidInputError(f"{file} holds no labels")
    return out


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object that names each key once (``json`` would keep the last silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return out


@dataclass(frozen=True)
class RunAgreement:
    """A run's grader compared with labels: the `Agreement`, and which labels it used.

    Attributes:
        run: The run's name.
        grader: The grader compared.
        labels: Where the labels came from (a file, or ``<run>:<grader>``).
        agreement: The statistics (`gradewire.stats.Agreement`); the grader is the first
            rater (the confusion matrix's rows), the labels the second.
        n_labels: Labels given (not missing).
        not_in_run: Labelled ids the run does not have (left out).
        not_scored: Labelled ids the grader did not score (abstained, failed, stale).
        scores: Id → the grader's score, on the compared ids.
        label_values: Id → the label, on the compared ids.
        prompts: Id → prompt, and ``completions`` id → completion, of the disagreements.
        completions: See ``prompts``.
    """

    run: str
    grader: str
    labels: str
    agreement: Agreement
    n_labels: int
    not_in_run: tuple[str, ...]
    not_scored: tuple[str, ...]
    scores: Mapping[str, float]
    label_values: Mapping[str, float]
    prompts: Mapping[str, str]
    completions: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        """The agreement's `to_dict` with what was compared (NaN as None)."""
        figures = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in self.agreement.to_dict().items()
        }
        for key, value in figures.items():
            if isinstance(value, list):
                figures[key] = [
                    None if isinstance(x, float) and not math.isfinite(x) else x for x in value
                ]
        return {
            "run": self.run,
            "grader": self.grader,
            "labels": self.labels,
            "scale": self.agreement.scale,
            "n_labels": self.n_labels,
            "not_in_run": list(self.not_in_run),
            "not_scored": list(self.not_scored),
            **figures,
        }

    def metrics(self) -> dict[str, float]:
        """``agreement/<grader>/<statistic>`` (and ``_ci_low``/``_ci_high``), finite only."""
        out: dict[str, float] = {f"agreement/{self.grader}/n": float(self.agreement.n)}
        for name, value in self.agreement.statistics.items():
            low, high = self.agreement.intervals[name]
            for suffix, number in (("", value), ("_ci_low", low), ("_ci_high", high)):
                if math.isfinite(number):
                    out[f"agreement/{self.grader}/{name}{suffix}"] = number
        return out

    def heading(self) -> str:
        """What was compared with what, on how many labels."""
        left = []
        if self.not_in_run:
            left.append(f"{len(self.not_in_run)} labelled id(s) not in the run")
        if self.not_scored:
            left.append(f"{len(self.not_scored)} the grader did not score")
        tail = f"; left out: {', '.join(left)}" if left else ""
        return (
            f"grader {self.grader!r} of run {self.run} against {self.labels}: "
            f"{self.agreement.n} of {self.n_labels} labels compared{tail}"
        )

    def __str__(self) -> str:
        return f"{self.heading()}\n{self.agreement}"

    def to_html(self) -> str:
        """A self-contained page: the statistics, the confusion matrix, the disagreements."""
        rows = []
        for sample_id in self.agreement.disagreements[:_SHOWN_ROWS]:
            key = str(sample_id)
            rows.append(
                f"<tr><td>{escape(key)}</td><td class=num>{_n(self.scores.get(key))}</td>"
                f"<td class=num>{_n(self.label_values.get(key))}</td>"
                f"<td><pre>{escape(self.prompts.get(key, ''))}</pre></td>"
                f"<td><pre>{escape(self.completions.get(key, ''))}</pre></td></tr>"
            )
        more = len(self.agreement.disagreements) - _SHOWN_ROWS
        table = (
            "<h2>Disagreements</h2><table><thead><tr><th>id</th><th>grader</th><th>label</th>"
            f"<th>prompt</th><th>completion</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>" + (f"<p>… and {more} more (see the JSON output)</p>" if more > 0 else "")
            if rows
            else "<p>No disagreements.</p>"
        )
        legend = "".join(
            f"<li><b>{escape(Agreement.display_names[name])}</b>: "
            f"{escape(Agreement.legend[name])}</li>"
            for name in self.agreement.statistics
        )
        body = (
            f"{_MARK}<h1>Agreement: {escape(self.grader)}</h1>"
            f"<p class=meta>{escape(self.heading())}</p>"
            f"{self.agreement._repr_html_()}<ul>{legend}</ul>{table}"
        )
        return page(f"Agreement of {self.grader} with {self.labels}", body)


def _n(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def run_agreement(
    run: EvalRun,
    grader: str,
    labels: Mapping[str, float | None],
    *,
    labels_name: str = "labels",
    label_text: Mapping[float, str] | None = None,
    scale: Scale | None = None,
    cluster_key: str | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> RunAgreement:
    """How far ``grader``'s scores in ``run`` agree with ``labels`` (id → label).

    Args:
        run: The run.
        grader: The grader key.
        labels: Id → label (None: missing), e.g. from `read_labels`, or another run's
            `EvalRun.scores`.
        labels_name: What the labels are, for the heading and the confusion matrix.
        label_text: How the labels were written (`label_text`), to head the confusion
            matrix's columns with the labels as given ("pass" rather than 1).
        scale: The level of measurement; None: nominal when every score and label is 0
            or 1, else interval.
        cluster_key: A metadata field: whole clusters are resampled.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Raises:
        InvalidInputError: The run has no such grader, or no labelled sample was scored.
    """
    if grader not in run.spec_hashes:
        raise InvalidInputError(
            f"run {run.name} has no grader {grader!r}; it has: {', '.join(run.graders)}"
        )
    scores = run.scores(grader)
    in_run = {record.id for record in run.records}
    given = {k: v for k, v in labels.items() if v is not None}
    not_in_run = tuple(k for k in given if k not in in_run)
    not_scored = tuple(k for k in given if k in in_run and k not in scores)
    compared = [k for k in given if k in scores]
    if not compared:
        raise InvalidInputError(
            f"none of the {len(given)} labels is of a sample grader {grader!r} scored in run "
            f"{run.name} ({len(not_in_run)} ids not in the run, {len(not_scored)} not "
            "scored); check that the label ids are the run's sample ids"
        )
    a = {k: scores[k] for k in compared}
    b = {k: given[k] for k in compared}
    if scale is None:
        binary = all(v in (0.0, 1.0) for v in (*a.values(), *b.values()))
        scale = "nominal" if binary else "interval"
    records = {record.id: record for record in run.records}
    clusters: dict[Hashable, Hashable] | None = None
    if cluster_key is not None:
        missing = [k for k in compared if cluster_key not in records[k].metadata]
        if missing:
            raise InvalidInputError(
                f"cluster key {cluster_key!r}: sample {missing[0]!r} has no such field"
            )
        clusters = {k: str(records[k].metadata[cluster_key]) for k in compared}
    result = agreement(
        a,
        b,
        scale=scale,
        clusters=clusters,
        n_resamples=n_resamples,
        seed=seed,
        names=(f"grader {grader}", labels_name),
    )
    if label_text and result.categories is not None:
        rows = tuple(format_id(c) for c in result.categories)
        columns = tuple(_as_given(c, label_text) for c in result.categories)
        if columns != rows:
            result = replace(result, category_text=(rows, columns))
    shown = [str(i) for i in result.disagreements[:_SHOWN_ROWS]]
    return RunAgreement(
        run=run.name,
        grader=grader,
        labels=labels_name,
        agreement=result,
        n_labels=len(given),
        not_in_run=not_in_run,
        not_scored=not_scored,
        scores=a,
        label_values=b,
        prompts={k: records[k].prompt() for k in shown},
        completions={k: records[k].completion() for k in shown},
    )


def _as_given(category: object, text: Mapping[float, str]) -> str:
    if isinstance(category, int | float) and not isinstance(category, bool):
        given = text.get(float(category))
        if given is not None:
            return given
    return format_id(category)


def write_agreement_page(result: RunAgreement, folder: Path) -> Path:
    """Write ``agreement-<grader>.html`` into ``folder`` (the run folder), beside its report.

    The name is the grader key where it is safe in a file name; a key that had to be
    changed for it (``a/b``) gets a digest of the key too, so no two keys share a page
    (``a/b`` and ``a_b``). The page is written to a temporary file of its own and renamed
    into place: two runs at once never write into one file.

    Raises:
        InvalidInputError: A file of that name exists that gradewire did not write.
    """
    path = folder / f"agreement-{page_slug(result.grader)}.html"
    if path.exists():
        try:
            ours = _MARK in path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            ours = False
        if not ours:
            raise InvalidInputError(
                f"{path} exists and gradewire did not write it; move it away, and run again"
            )
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.fchmod(handle, 0o644)  # a page to read, as the report beside it (mkstemp: 0600)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="surrogatepass") as file:
            file.write(result.to_html())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def page_slug(grader: str) -> str:
    """The grader key as the page's file name part: itself if safe, else cleaned + digest."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", grader).strip("._")[:80] or "grader"
    if slug == grader:
        return slug
    digest = hashlib.sha256(grader.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug}-{digest}"
