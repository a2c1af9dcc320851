"""The compare page: one self-contained HTML page that opens from disk, no network.

The verdict comes first, then the differences drawn with their intervals (a forest plot
with ticks and a legend), the statistics with their meaning beside each, the slices of
``by`` (a slice that goes the other way called out), and the pairs kept for a reader
(`Comparison.samples`): both completions in full, side by side, a word diff where they
are alike. Everything is drawn in Python and escaped; the bundled ``compare.js`` only
filters and orders the pairs already on the page (by grader, outcome and slice), and the
counts of every kind come as JSON, so a reader sees how many were left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gradewire.core._svg import intervals
from gradewire.eval.comparing._results import Comparison, GraderComparison, PairedSample
from gradewire.eval.comparing._shown_pairs import OUTCOMES
from gradewire.eval.comparing._verdict import EXPLANATIONS, format_difference, method_label
from gradewire.eval.reporting._page import escape, page
from gradewire.eval.reporting._word_diff import side_by_side

if TYPE_CHECKING:
    from gradewire.eval.comparing._judged_pairs import JudgedComparison
    from gradewire.stats import PPIInterval

__all__ = ["OUTCOME_MEANINGS", "render_comparison"]

OUTCOME_MEANINGS = {
    "gained": "B scored this pair higher than A (a win for B)",
    "lost": "B scored this pair lower than A (a loss for B)",
    "tied": "A and B gave this pair the same score (the completions may still differ)",
}


def _n(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}" if abs(value) >= 1e-4 or value == 0 else f"{value:.2e}"


def _d(value: float, points: bool, signed: bool = False) -> str:
    """A difference as the verdict and the terminal write it: points (pts) or score units."""
    if not math.isfinite(value):
        return "–"
    return format_difference(value, points, signed=signed) + (" pts" if points else "")


def _ids(ids: tuple[str, ...], shown: int = 200) -> str:
    text = ", ".join(escape(i) for i in ids[:shown])
    return text + (f" … and {len(ids) - shown} more" if len(ids) > shown else "")


def _th(label: str, cls: str, key: str | None) -> str:
    """A column head whose tooltip says what the statistic means."""
    title = f' title="{escape(EXPLANATIONS[key])}"' if key else ""
    klass = f" class={cls}" if cls else ""
    return f"<th{klass}{title}>{escape(label)}</th>"


def _forests(graders: Sequence[GraderComparison], level: str) -> str:
    """One forest plot per unit: graders read in points, and the others."""
    groups = [[g for g in graders if g.points], [g for g in graders if not g.points]]
    return "".join(
        intervals(
            [(g.grader, g.diff, g.ci_low, g.ci_high) for g in group],
            points=group[0].points,
            level=level,
        )
        for group in groups
        if group
    )


def _wtl(g: GraderComparison) -> str:
    """Wins, ties and losses as a bar, each part with its count and meaning."""
    total = g.wins + g.ties + g.losses
    if not total:
        return ""
    width, parts, x = 240, [], 0.0
    for label, count, colour, meaning in (
        ("gained", g.wins, "#2e7d32", OUTCOME_MEANINGS["gained"]),
        ("tied", g.ties, "#9e9e9e", OUTCOME_MEANINGS["tied"]),
        ("lost", g.losses, "#c62828", OUTCOME_MEANINGS["lost"]),
    ):
        w = width * count / total
        parts.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="12" fill="{colour}">'
            f"<title>{count} {label}: {escape(meaning)}</title></rect>"
        )
        x += w
    return (
        f'<svg class="wtl" role="img" aria-label="{g.wins} gained, {g.ties} tied, '
        f'{g.losses} lost" width="{width}" height="12" viewBox="0 0 {width} 12">'
        + "".join(parts)
        + "</svg>"
    )


def _verdicts(c: Comparison) -> str:
    items = "".join(
        f"<li>{escape(g.verdict)}"
        f'<div class="wtl-line">{_wtl(g)} <span class="note">{g.wins} pairs gained, '
        f"{g.ties} tied, {g.losses} lost on {escape(g.grader)}</span></div></li>"
        for g in c.graders
    )
    return f'<ul id="gw-verdict">{items}</ul>'


def _slices(c: Comparison, level: str) -> str:
    """Per grader, its slices (``by``) drawn and tabled, those going the other way called out."""
    if c.by is None:
        return ""
    parts = [f'<section id="gw-slices"><h2>By {escape(c.by)}</h2>']
    for g in c.graders:
        parts.append(f"<h3>{escape(g.grader)}</h3>")
        flipped = [s for s in g.slices if s.flips]
        if flipped:
            unit = " points" if g.points else ""
            shown = "; ".join(
                f"{escape(s.value)}: {format_difference(s.diff, g.points, signed=True)}{unit}"
                f" (n = {s.n_pairs})"
                for s in flipped
            )
            overall = format_difference(g.diff, g.points, signed=True)
            parts.append(
                f'<p class="callout">{len(flipped)} of {len(g.slices)} slices have the other sign '
                f"from the whole ({overall}{unit}): {shown}. Those whose interval excludes 0 "
                "go the other way; the others only lean that way and may be chance.</p>"
            )
        rows = [
            (f"all pairs (n = {g.n_pairs})", g.diff, g.ci_low, g.ci_high),
            *((f"{s.value} (n = {s.n_pairs})", s.diff, s.ci_low, s.ci_high) for s in g.slices),
        ]
        parts.append(
            f'<div class="plots">{intervals(rows, points=g.points, level=level, label_width=220)}'
            "</div>"
        )
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
            flag = (
                ("<b>goes the other way</b>" if s.flips_clearly else "leans the other way")
                if s.flips
                else ""
            )
            note = f'<br><span class="note">{escape(s.note)}</span>' if s.note else ""
            parts.append(
                f"<tr{' class=flipped' if s.flips_clearly else ''}><td>{escape(s.value)}</td>"
                f"<td class=num>{s.n_pairs}</td>"
                f"<td class=num>{_n(s.mean_a)}</td><td class=num>{_n(s.mean_b)}</td>"
                f"<td class=num>{_d(s.diff, g.points, signed=True)}</td>"
                f"<td class=num>[{_d(s.ci_low, g.points)}, {_d(s.ci_high, g.points)}]</td>"
                f"<td class=num>{_n(s.p_value)}</td><td>{flag}{note}</td></tr>"
            )
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "".join(parts)


def render_comparison(
    comparison: Comparison,
    *,
    judged: Sequence[JudgedComparison] = (),
    paired_ppi: tuple[str, PPIInterval] | None = None,
) -> str:
    """The comparison as one HTML document (with pairwise judges' verdicts and paired PPI)."""
    c = comparison
    title = f"gradewire compare: {c.run_a} (A) vs {c.run_b} (B)"
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
        f"<td class=num>{_d(g.diff, g.points, signed=True)}</td>"
        f"<td class=num>{_d(g.stderr, g.points)}</td>"
        f"<td class=num>[{_d(g.ci_low, g.points)}, {_d(g.ci_high, g.points)}]</td>"
        f"<td class=num>{_n(g.p_value)}</td>"
        f"<td class=num>{_n(g.p_value_holm)}</td><td class=num>{_d(g.detectable, g.points)}</td>"
        f"<td>{escape(g.method)} ({escape(method_label(g))})</td>"
        f"<td class=num>{g.wins} / {g.ties} / {g.losses}</td></tr>"
        for g in c.graders
    )
    legend = "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in EXPLANATIONS.items()
    )
    legend += "".join(
        f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in OUTCOME_MEANINGS.items()
    )
    clustered = (
        f" Clustered by {c.cluster_key!r}."
        if c.cluster_key
        else " Pairs treated as independent (no cluster key)."
    )
    units = " pts: points, 100 to a score range of 1." if any(g.points for g in c.graders) else ""
    bootstrap = (
        f" Pairwise judges' win rates: paired bootstrap, {c.n_resamples} resamples, seed {c.seed}."
        if judged
        else ""
    )
    meta = (
        f"A = {c.run_a}, B = {c.run_b}; differences are B − A unless a sentence says "
        f"otherwise.{units}{clustered}{bootstrap} {c.note}."
    )
    body = (
        f"<h1>{escape(title)}</h1>"
        f'<h2>Verdict</h2>{_verdicts(c)}<p class="meta">{escape(meta)}</p>'
        f'<h2>Differences with their intervals</h2><div class="plots" id="gw-forest">'
        f"{_forests(c.graders, level)}</div>"
        f'<h2>Per grader</h2><table id="gw-compare"><thead>{head}</thead>'
        f"<tbody>{rows}</tbody></table>"
        f'<details id="gw-legend" open><summary>What each statistic means</summary>'
        f"<dl>{legend}</dl></details>"
        f"{_slices(c, level)}"
        f"{_judged_section(judged, paired_ppi)}"
        f"<h2>Unpaired samples</h2>{_unpaired(c)}"
        f"{_samples(c)}"
    )
    return page(title, body, data=_counts(c), script="compare.js")


def _unpaired(c: Comparison) -> str:
    out = (
        f"<p>{len(c.only_a)} sample(s) only in A, {len(c.only_b)} only in B: left out of every "
        "comparison.</p>"
    )
    for label, ids in (("only in A", c.only_a), ("only in B", c.only_b)):
        if ids:
            out += f'<p class="ids"><b>{label}:</b> {_ids(ids)}</p>'
    for label, keys in (("A", c.graders_only_a), ("B", c.graders_only_b)):
        if keys:
            out += f'<p class="ids"><b>graders only in {label} (not compared):</b> {_ids(keys)}</p>'
    if c.mismatched_prompts:
        out += (
            f'<p class="ids"><b>{len(c.mismatched_prompts)} pair(s) with different prompts in A '
            f"and B, compared as asked:</b> {_ids(c.mismatched_prompts)}</p>"
        )
    if c.changed_graders:
        out += (
            '<p class="ids"><b>graders with another spec in B than in A, compared as asked:</b> '
            f"{_ids(c.changed_graders)}</p>"
        )
    return out


def _slice_values(c: Comparison) -> list[str]:
    return sorted({s for (_, _, s) in c.sample_counts if s is not None})


def _counts(c: Comparison) -> dict[str, object]:
    """Pairs of every kind as ``"grader|outcome|slice"`` (indices; empty: any), for the filters."""
    graders = {g.grader: str(i) for i, g in enumerate(c.graders)}
    slices = {s: str(i) for i, s in enumerate(_slice_values(c))}
    counts = {
        f"{graders.get(g, '?') if g is not None else ''}|{o or ''}|"
        f"{slices[s] if s is not None else ''}": n
        for (g, o, s), n in c.sample_counts.items()
        if g is None or g in graders
    }
    return {"counts": counts, "kept": len(c.samples)}


def _select(element: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    inner = "".join(f'<option value="{v}">{escape(text)}</option>' for v, text in options)
    return f'<label>{escape(label)} <select id="{element}">{inner}</select></label>'


def _samples(c: Comparison) -> str:
    """The pairs kept, with filters by grader, outcome and slice, and what was left out."""
    total = c.sample_counts.get((None, None, None), 0)
    if not c.samples:
        return (
            '<h2 id="gw-samples">Samples</h2>'
            f'<p class="note">{total} pairs; none kept for this page.</p>'
        )
    graders = [g.grader for g in c.graders]
    slices = _slice_values(c)
    index = {s: i for i, s in enumerate(slices)}
    controls = (
        '<div class="controls" id="gw-filters">'
        + _select(
            "gw-grader", "grader", [("", "any"), *((str(i), g) for i, g in enumerate(graders))]
        )
        + _select(
            "gw-outcome",
            "outcome",
            [("", "any"), *((o, o) for o in OUTCOMES)],
        )
        + (
            _select(
                "gw-slice",
                c.by or "slice",
                [("", "any"), *((str(i), s) for i, s in enumerate(slices))],
            )
            if slices
            else ""
        )
        + '<span id="gw-count"></span></div><p class="note" id="gw-outcomes">'
        + "; ".join(f"<b>{o}</b>: {escape(OUTCOME_MEANINGS[o])}" for o in OUTCOMES)
        + " (on the chosen grader; with any grader, on at least one).</p>"
    )
    left_out = total - len(c.samples)
    intro = (
        f'<p class="note" id="gw-kept">{len(c.samples)} of {total} pairs are on this page: in '
        "turn, the largest change of each grader, outcome (gained, lost, tied) and slice"
        + (f"; {left_out} pairs were left out to keep the page quick to open" if left_out else "")
        + ". The filters show the pairs kept and, beside them, how many of that kind there "
        "are in all. Changed words are marked where the two completions are alike: "
        "<del>removed in B</del>, <ins>added in B</ins>.</p>"
    )
    cards = "".join(_card(c, s, i, graders, index) for i, s in enumerate(c.samples))
    return (
        f'<h2 id="gw-samples">Samples that changed most</h2>{intro}{controls}'
        f'<div id="gw-pairs">{cards}</div>'
        '<p class="note" id="gw-none" hidden>No pair kept on this page matches.</p>'
    )


def _card(
    c: Comparison, s: PairedSample, rank: int, graders: Sequence[str], slices: dict[str, int]
) -> str:
    attributes = [f'data-rank="{rank}"']
    scores = []
    for i, key in enumerate(graders):
        outcome = s.outcome(key)
        if outcome is None:
            continue
        a, b = s.scores[key]
        attributes.append(f'data-o{i}="{outcome}" data-d{i}="{abs(b - a):.6g}"')
        scores.append(
            f'<span class="score {outcome}" title="{escape(OUTCOME_MEANINGS[outcome])}">'
            f"{escape(key)}: {_n(a, 3)} → {_n(b, 3)} ({outcome})</span>"
        )
    if s.slice is not None and s.slice in slices:
        attributes.append(f'data-s="{slices[s.slice]}"')
    shown = side_by_side(s.completion_a, s.completion_b)
    if shown.diffed:
        how = f"{shown.similarity:.0%} of words alike: changes marked"
    elif shown.similarity is None:
        how = "too long to align word by word"
    elif s.completion_a == s.completion_b:
        how = "the same completion"
    else:
        how = f"{shown.similarity:.0%} of words alike: too different to mark changes"
    where = (
        f' <span class="slice">{escape(c.by or "")} = {escape(s.slice)}</span>'
        if s.slice is not None
        else ""
    )
    metadata = (
        "<details><summary>metadata</summary>"
        f"<pre>{escape(json.dumps(dict(s.metadata), indent=2, ensure_ascii=False, default=str))}"
        "</pre></details>"
        if s.metadata
        else ""
    )
    return (
        f'<article class="pair" {" ".join(attributes)}>'
        f'<header><b class="id">{escape(s.id)}</b>{where} {" ".join(scores)}</header>'
        f"<details><summary>prompt</summary><pre>{escape(s.prompt)}</pre></details>{metadata}"
        f'<p class="note how">{how}</p><div class="sides">'
        f'<div class="side a"><h4>A: {escape(c.run_a)}</h4><pre>{shown.a}</pre></div>'
        f'<div class="side b"><h4>B: {escape(c.run_b)}</h4><pre>{shown.b}</pre></div>'
        "</div></article>"
    )


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
