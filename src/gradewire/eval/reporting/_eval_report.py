"""The run report: ``report.html``, one self-contained page that opens from disk.

The summary, a distribution plot per grader and the error breakdown are drawn in Python
(escaped HTML and SVG); the sample table is built in the browser by the bundled
``report.js`` from the rows embedded as JSON, with sort, filters, search and pages, so
it stays quick at 10,000 rows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from gradewire.core._svg import histogram
from gradewire.eval.reporting._page import escape, page_parts, script_json, script_safe
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._folder import write_atomically
from gradewire.eval.runs._records import JsonMapping
from gradewire.eval.runs._statistics import GraderSummary
from gradewire.stats._mean_interval import METHOD_NAMES

__all__ = ["render_report", "write_report"]


def _number(value: float, digits: int = 4) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _summary_table(summaries: Sequence[GraderSummary]) -> str:
    clustered = any(s.n_clusters is not None for s in summaries)
    passes = any(s.passed is not None for s in summaries)
    head = [
        "grader",
        "n",
        "mean",
        "std",
        "std. error",
        "95% interval",
        "method",
        "errors",
        "abstained",
        "missing",
    ]
    if clustered:
        head[4] = "clustered std. error"
        head.append("clusters")
    if passes:
        head += ["pass rate", "pass rate 95% interval"]
    rows = []
    for s in summaries:
        cells = [
            f"<td>{escape(s.grader)}</td>",
            f'<td class="num">{s.n}</td>',
            f'<td class="num">{_number(s.mean)}</td>',
            f'<td class="num">{_number(s.std)}</td>',
            f'<td class="num">{_number(s.stderr)}</td>',
            f'<td class="num">[{_number(s.ci_low)}, {_number(s.ci_high)}]</td>',
            f"<td>{escape(s.method_name)}{' *' if s.caveat else ''}</td>",
            f'<td class="num">{s.errors}</td>',
            f'<td class="num">{s.abstained}</td>',
            f'<td class="num">{s.missing}</td>',
        ]
        if clustered:
            cells.append(f'<td class="num">{s.n_clusters or "–"}</td>')
        if passes:
            if s.passed is None:
                cells += ['<td class="num">–</td>', "<td></td>"]
            else:
                cells += [
                    f'<td class="num">{_number(s.pass_rate)} ({s.passed}/{s.pass_n})</td>',
                    f'<td class="num">[{_number(s.pass_low)}, {_number(s.pass_high)}] '
                    f"{escape(METHOD_NAMES.get(s.pass_method or '', ''))}</td>",
                ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    header = "".join(
        f'<th class="num">{escape(h)}</th>' if i else f"<th>{escape(h)}</th>"
        for i, h in enumerate(head)
    )
    notes = "".join(
        f'<p class="note">* {escape(s.grader)}: {escape(s.caveat)}</p>'
        for s in summaries
        if s.caveat
    )
    return (
        f'<table id="gw-summary"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{notes}"
    )


def _failures(run: EvalRun) -> str:
    rows = []
    for key in run.spec_hashes:
        messages: Counter[tuple[str, str]] = Counter()
        for record in run.records:
            outcome = run.outcome(record, key)
            if outcome is not None and outcome.status != "ok":
                first = (outcome.message or "").strip().splitlines()[:1]
                messages[(outcome.status, first[0][:200] if first else "")] += 1
        for (status, message), count in messages.most_common(10):
            rows.append(
                f"<tr><td>{escape(key)}</td><td>{escape(status)}</td>"
                f'<td class="num">{count}</td><td>{escape(message)}</td></tr>'
            )
    if not rows:
        return '<p class="note">No grader failed or abstained on any sample.</p>'
    return (
        '<table id="gw-failures"><thead><tr><th>grader</th><th>outcome</th>'
        '<th class="num">samples</th><th>message (first line)</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


_CONTROLS = """
<div class="controls">
<input id="gw-search" type="search" aria-label="search"
 placeholder="search id, prompt, completion, reasoning">
<label>grader <select id="gw-grader"><option value="">all</option></select></label>
<label>outcome <select id="gw-status"><option value="">any</option>
<option value="ok">scored</option>
<option value="error">error</option><option value="abstained">abstained</option></select></label>
<label>score from <input id="gw-min" type="number" step="any"></label>
<label>to <input id="gw-max" type="number" step="any"></label>
<span id="gw-count"></span>
<button id="gw-prev" type="button">previous</button><span id="gw-page"></span>
<button id="gw-next" type="button">next</button>
</div>
<table id="gw-table"><thead><tr id="gw-head"></tr></thead>
<tbody id="gw-rows"></tbody></table>
<noscript><p class="note">The sample table needs JavaScript; the rows are in
results.jsonl.</p></noscript>
"""


def render_report(run: EvalRun, summaries: Sequence[GraderSummary] | None = None) -> str:
    """The report of a run as one HTML document."""
    return "".join(_report_parts(run, summaries))


def write_report(
    run: EvalRun, path: Path, *, summaries: Sequence[GraderSummary] | None = None
) -> Path:
    """Write the report of ``run`` to ``path`` (piece by piece, atomically); returns the path."""
    write_atomically(path, _report_parts(run, summaries))
    return path


def _report_parts(run: EvalRun, summaries: Sequence[GraderSummary] | None) -> Iterator[str]:
    summaries = list(summaries) if summaries is not None else run.summaries()
    title = f"gradewire eval: {run.name}"
    data_path = (run.config.get("data") or {}).get("path")
    held, total = len(run.records), run.samples_in_data
    meta = f"{held} samples" if total is None or total == held else f"{held} of {total} samples"
    if data_path:
        meta += f" from {data_path}"
    if total is not None and held < total:
        meta += " (the rest not graded yet: run the same command again to grade them)"
    if run.cluster_key:
        meta += f"; standard errors clustered by {run.cluster_key!r}"
    plots = "".join(
        f'<figure class="plot"><figcaption>{escape(key)}</figcaption>'
        f"{histogram(key, list(run.scores(key).values()))}</figure>"
        for key in run.graders
    )
    body = (
        f'<h1>{escape(title)}</h1><p class="meta">{escape(meta)}</p>'
        f"<h2>Summary</h2>{_summary_table(summaries)}"
        f'<h2>Distributions</h2><div class="plots">{plots}</div>'
        f"<h2>Errors and abstentions</h2>{_failures(run)}"
        f"<h2>Samples</h2>{_CONTROLS}"
    )
    return page_parts(title, body, data_json=_rows_json(run), script="report.js")


def _rows_json(run: EvalRun) -> Iterator[str]:
    """``{"graders": [...], "rows": [...]}``, one row at a time.

    An input read from a run folder goes in as the JSON text it is kept as.
    """
    yield f'{{"graders":{script_json(run.graders)},"rows":['
    for index, record in enumerate(run.records):
        grades = {}
        for key in run.spec_hashes:
            outcome = run.outcome(record, key)
            if outcome is not None:
                grades[key] = outcome.to_json()
        thread = record.input
        text = (
            script_safe(thread.text.decode("ascii"))
            if isinstance(thread, JsonMapping)
            else script_json(dict(thread))
        )
        yield (
            f'{"," if index else ""}{{"id":{script_json(record.id)},"input":{text},'
            f'"grades":{script_json(grades)}}}'
        )
    yield "]}"
