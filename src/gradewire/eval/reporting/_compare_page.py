"""The comparison report: one self-contained HTML page, drawn in Python, no script."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gradewire.eval.comparing._results import Comparison
from gradewire.eval.comparing._verdict import EXPLANATIONS
from gradewire.eval.reporting._page import escape, page
from gradewire.eval.reporting._svg import intervals

if TYPE_CHECKING:
    from gradewire.eval.comparing._judged_pairs import JudgedComparison
    from gradewire.stats import PPIInterval

__all__ = ["render_comparison"]


def _n(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}" if abs(value) >= 1e-4 or value == 0 else f"{value:.2e}"


def _ids(ids: tuple[str, ...], shown: int = 200) -> str:
    text = ", ".join(escape(i) for i in ids[:shown])
    return text + (f" … and {len(ids) - shown} more" if len(ids) > shown else "")


def _slices(c: Comparison) -> str:
    """Per grader, a table of its slices (``by``), flipped ones marked."""
    if c.by is None:
        return ""
    parts = [f"<h2>By {escape(c.by)}</h2>"]
    for g in c.graders:
        parts.append(f"<h3>{escape(g.grader)}</h3>")
        parts.append(
            '<table class="slices"><thead><tr>'
            + _th("slice", "", None)
            + _th("pairs", "num", "pairs")
            + _th("mean A", "num", "mean A / mean B")
            + _th("mean B", "num", "mean A / mean B")
            + _th("B − A", "num", "B − A")
            + _th("interval", "num", "interval")
            + _th("p", "num", "p")
            + "<th></th></tr></thead><tbody>"
        )
        for s in g.slices:
            flag = "<b>goes the other way</b>" if s.flips else ""
            parts.append(
                f"<tr><td>{escape(s.value)}</td><td class=num>{s.n_pairs}</td>"
                f"<td class=num>{_n(s.mean_a)}</td><td class=num>{_n(s.mean_b)}</td>"
                f"<td class=num>{_n(s.diff)}</td>"
                f"<td class=num>[{_n(s.ci_low)}, {_n(s.ci_high)}]</td>"
                f"<td class=num>{_n(s.p_value)}</td><td>{flag}</td></tr>"
            )
        parts.append("</tbody></table>")
    return "".join(parts)


def _th(label: str, cls: str, key: str | None) -> str:
    """A column head whose tooltip says what the statistic means."""
    title = f' title="{escape(EXPLANATIONS[key])}"' if key else ""
    klass = f" class={cls}" if cls else ""
    return f"<th{klass}{title}>{escape(label)}</th>"


def render_comparison(
    comparison: Comparison,
    *,
    judged: Sequence[JudgedComparison] = (),
    paired_ppi: tuple[str, PPIInterval] | None = None,
) -> str:
    """The comparison as one HTML document (with pairwise judges' verdicts and paired PPI)."""
    c = comparison
    title = f"gradewire compare: {c.run_b} vs {c.run_a}"
    level = f"{c.graders[0].confidence:.0%}" if c.graders else "95%"
    columns = [
        ("grader", "", None),
        ("pairs", "num", "pairs"),
        ("mean A", "num", "mean A / mean B"),
        ("mean B", "num", "mean A / mean B"),
        ("B − A", "num", "B − A"),
        ("paired std. error", "num", "std. error"),
        (f"{level} interval", "num", "interval"),
        ("p", "num", "p"),
        ("p (Holm)", "num", "p (Holm)"),
        ("detectable", "num", "detectable"),
        ("method", "", "method"),
        ("wins / ties / losses", "num", "W/T/L"),
    ]
    head = "<tr>" + "".join(_th(label, cls, key) for label, cls, key in columns) + "</tr>"
    rows = "".join(
        f"<tr><td>{escape(g.grader)}</td><td class=num>{g.n_pairs}</td>"
        f"<td class=num>{_n(g.mean_a)}</td><td class=num>{_n(g.mean_b)}</td>"
        f"<td class=num>{_n(g.diff)}</td><td class=num>{_n(g.stderr)}</td>"
        f"<td class=num>[{_n(g.ci_low)}, {_n(g.ci_high)}]</td><td class=num>{_n(g.p_value)}</td>"
        f"<td class=num>{_n(g.p_value_holm)}</td><td class=num>{_n(g.detectable)}</td>"
        f"<td>{escape(g.method)}</td>"
        f"<td class=num>{g.wins} / {g.ties} / {g.losses}</td></tr>"
        for g in c.graders
    )
    verdicts = "".join(f"<li>{escape(g.verdict)}</li>" for g in c.graders)
    legend = "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in EXPLANATIONS.items()
    )
    forest = intervals([(g.grader, g.diff, g.ci_low, g.ci_high) for g in c.graders])
    clustered = f"; clustered by {c.cluster_key!r}" if c.cluster_key else ""
    meta = (
        f"A = {c.run_a}, B = {c.run_b}. Bootstrap (graders other than 0/1): "
        f"{c.n_resamples} resamples, seed {c.seed}{clustered}. {c.note}."
    )
    unpaired = (
        f"<p>{len(c.only_a)} sample(s) only in A, {len(c.only_b)} only in B: left out of every "
        "comparison.</p>"
    )
    for label, ids in (("only in A", c.only_a), ("only in B", c.only_b)):
        if ids:
            unpaired += f'<p class="ids"><b>{label}:</b> {_ids(ids)}</p>'
    for label, keys in (("A", c.graders_only_a), ("B", c.graders_only_b)):
        if keys:
            unpaired += (
                f'<p class="ids"><b>graders only in {label} (not compared):</b> {_ids(keys)}</p>'
            )
    if c.mismatched_prompts:
        unpaired += (
            f'<p class="ids"><b>{len(c.mismatched_prompts)} pair(s) with different prompts in A '
            f"and B, compared as asked:</b> {_ids(c.mismatched_prompts)}</p>"
        )
    if c.changed_graders:
        unpaired += (
            '<p class="ids"><b>graders with another spec in B than in A, compared as asked:</b> '
            f"{_ids(c.changed_graders)}</p>"
        )
    changed = []
    for g in c.graders:
        if not g.most_changed:
            continue
        changed.append(f"<h3>{escape(g.grader)}</h3>")
        changed.append(
            '<table class="changed"><thead><tr><th>id</th><th class=num>A</th>'
            "<th class=num>B</th><th class=num>B − A</th><th>prompt</th><th>completion A</th>"
            "<th>completion B</th></tr></thead><tbody>"
        )
        for s in g.most_changed:
            changed.append(
                f"<tr><td>{escape(s.id)}</td><td class=num>{_n(s.a)}</td>"
                f"<td class=num>{_n(s.b)}</td><td class=num>{_n(s.diff)}</td>"
                f"<td><pre>{escape(s.prompt)}</pre></td><td><pre>{escape(s.completion_a)}</pre></td>"
                f"<td><pre>{escape(s.completion_b)}</pre></td></tr>"
            )
        changed.append("</tbody></table>")
    body = (
        f"<h1>{escape(title)}</h1><p class=meta>{escape(meta)}</p>"
        f'<h2>Verdict</h2><ul id="gw-verdict">{verdicts}</ul>'
        f'<h2>Per grader</h2><table id="gw-compare"><thead>{head}</thead>'
        f"<tbody>{rows}</tbody></table>"
        f'<details id="gw-legend" open><summary>What each statistic means</summary>'
        f"<dl>{legend}</dl></details>"
        f"{_slices(c)}"
        f'<h2>Differences with their intervals</h2><div class="plots">{forest}</div>'
        f"{_judged_section(judged, paired_ppi)}"
        f"<h2>Unpaired samples</h2>{unpaired}"
        f"<h2>Samples that changed most</h2>{''.join(changed) or '<p>No score changed.</p>'}"
    )
    return page(title, body)


def _judged_section(
    judged: Sequence[JudgedComparison], paired_ppi: tuple[str, PPIInterval] | None
) -> str:
    parts = []
    if judged:
        rows = "".join(
            f"<tr><td>{escape(r.judge)}</td><td class=num>{r.n_pairs}</td>"
            f"<td class=num>{r.wins}</td><td class=num>{r.ties}</td><td class=num>{r.losses}</td>"
            f"<td class=num>{_n(r.win_rate)}</td><td class=num>[{_n(r.ci_low)}, {_n(r.ci_high)}]"
            "</td><td class=num>"
            + ("–" if r.position_consistency is None else _n(r.position_consistency))
            + "</td></tr>"
            for r in judged
        )
        parts.append(
            '<h2>Judged pairwise: B against A</h2><table id="gw-judged"><thead><tr>'
            "<th>judge</th><th class=num>pairs</th><th class=num>B wins</th><th class=num>ties"
            "</th><th class=num>B loses</th><th class=num>win rate (ties half)</th>"
            "<th class=num>interval</th><th class=num>position consistency</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    if paired_ppi is not None:
        key, ppi = paired_ppi
        parts.append(
            f"<h2>{escape(key)}: B − A corrected by human labels (paired PPI)</h2>"
            f"<pre>{escape(str(ppi))}</pre>"
        )
    return "".join(parts)
