"""One self-contained HTML page of one or several saved runs (``benchy report RUN... --html OUT.html``): no network
and no script (styles inline, plots as ``data:`` URIs), so that it can be mailed or attached to a CI job.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence

import msgspec

from ..core.errors import BenchyError
from ..core.schedule import Mode
from ..core.sweep import NEAR_BEST
from ..core.verdict import figure_means, outcome_of
from . import plots as drawing
from . import scaling, tables
from .model import Environment
from .saved import Run
from .tables import Table, summary_table
from .text.numbers import cell

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 1.5rem 2rem; color: #1b1f24; background: #ffffff; line-height: 1.45; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem 0; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 2px solid #d0d7de; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem 0; }
.meta { color: #57606a; font-size: .9rem; }
.verdict { border-left: 6px solid #cf222e; background: #fff5f5; padding: .8rem 1rem; margin: 1rem 0; }
.verdict.compute { border-left-color: #0969da; background: #f0f6ff; }
.verdict.balanced { border-left-color: #1a7f37; background: #f0fff4; }
.verdict.undecided, .verdict.none { border-left-color: #8c959f; background: #f6f8fa; }
.verdict.inconsistent { border-left-color: #9a6700; background: #fff8e5; }
.verdict b { display: block; font-size: .8rem; letter-spacing: .06em; text-transform: uppercase; color: #57606a; }
table { border-collapse: collapse; margin: .4rem 0 1rem 0; font-size: .9rem; }
th, td { border: 1px solid #d0d7de; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding-bottom: .2rem; }
pre { background: #f6f8fa; padding: .6rem .8rem; overflow-x: auto; font-size: .78rem; white-space: pre-wrap; }
figure { margin: .6rem 0 1.2rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption { color: #57606a; font-size: .85rem; }
.note { color: #9a6700; font-size: .9rem; }
"""


NO_VERDICT = "none: a verdict needs both IO and SYNTHETIC trials that counted"


@dataclass
class Page:
    """The page's text, the plots drawn into it and what was left out (and why), to tell the user."""

    text: str
    plots: int = 0
    notes: List[str] = field(default_factory=list)


def _e(text: Any) -> str:
    return html.escape(str(text))


class _Plots:
    """Draws into the page while matplotlib is there; remembers why a plot is missing."""

    def __init__(self) -> None:
        self.drawn = 0
        self.notes: List[str] = []
        self._unavailable: Optional[str] = None

    def figure(self, what: str, draw: Callable[[io.BytesIO], Any], caption: str) -> str:
        if self._unavailable is not None:
            return ""
        buffer = io.BytesIO()
        try:
            left_out = draw(buffer)  # what the picture leaves out, where a drawing says
        except drawing.PlotUnavailable as err:
            self._unavailable = str(err)
            self.notes.append(f"no plots: {err}")
            return ""
        except (ValueError, BenchyError) as err:
            self.notes.append(f"{what}: not drawn: {err}")
            return f'<p class="note">{_e(what)}: not drawn: {_e(err)}</p>'
        self.drawn += 1
        self.notes.extend(f"{what}: {note}" for note in (left_out if isinstance(left_out, list) else []))
        uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        return f'<figure><img alt="{_e(what)}" src="{uri}"><figcaption>{_e(caption)}</figcaption></figure>'


def system_table(run: Run) -> Optional[Table]:
    """Per mode, the means of the system sampler's figures (rank 0's own) as the SYSTEM line takes them."""
    rows = []
    for mode in Mode:
        block = run.model.mode(mode.value)
        entries = [msgspec.structs.asdict(s) for s in (block.system if block is not None else []) if s is not None]
        means = figure_means(entries)
        if means is not None:
            rows.append((mode.value, len(entries), means))
    return tables.system_table(rows)


def sweep_table(run: Run) -> Optional[Table]:
    """The loader sweep's table as ``benchy`` printed it (the JSON's ``sweep``), or None without a sweep."""
    sweep = run.model.sweep
    if sweep is None or not sweep.settings:
        return None
    marks = {
        "own": "the loader's own",
        "best": "best",
        "smallest_within_5pct": f"smallest within {100 * NEAR_BEST:g} %",
        "feeds_synthetic": "cheapest that feeds SYNTHETIC",
        "applied": "applied",
    }
    rows: List[tables.SweepRow] = []
    for entry in sweep.settings:
        notes = [text for key, text in marks.items() if getattr(sweep, key) == entry.settings]
        if entry.error:
            notes.append(f"failed: {entry.error}")
        if entry.over_memory_cap:
            notes.append("over the memory cap")
        rows.append((entry.settings.words(), entry.mean, entry.interval, entry.n or 0, entry.workers_memory_bytes, notes))
    return tables.sweep_table(rows, "Loader sweep (IO trials per setting)")


def whatif_table(run: Run) -> Optional[Table]:
    """The what-if model's FULL per loader workers and step speed-up, and each check below it; None without
    predictions."""
    block = run.model.whatif
    if block is None or not block.predictions:
        return None
    cores = None if block.inputs is None else block.inputs.cores
    grid = [p for p in block.predictions if p.cores == cores and p.free is None]
    speedups = sorted({p.speedup for p in grid if p.speedup is not None})
    table = Table(
        ["workers", *[f"step {k:g}x faster" for k in speedups]],
        right=[True] * (1 + len(speedups)),
        title=(f"What if: the model's FULL samples/s (interval) at {cell(cores, spec='g')} cores, from {block.basis}"),
    )
    found = {(p.workers, p.speedup): p.full for p in reversed(grid)}  # the first prediction of each
    for w in sorted({p.workers for p in grid if p.workers is not None}):
        fulls = [found.get((w, k)) or [None] * 3 for k in speedups]
        shown = [f"{f[1]:.1f} ({cell(f[0], spec='.0f')}-{cell(f[2], spec='.0f')})" if f[1] is not None else "" for f in fulls]
        table.rows.append([str(w), *shown])
    return table


def whatif_checks(run: Run) -> Optional[Table]:
    """Each prediction against the measurement of the same change in the same run (emulated step, sweep)."""
    checks = [] if run.model.whatif is None else run.model.whatif.checks
    if not checks:
        return None
    table = Table(
        ["check", "figure", "predicted", "measured", "+/-", "error", "agree"],
        right=[False, False, True, True, True, True, False],
        title="What if, checked by measurement",
    )
    for c in checks:
        figures = [cell(x, spec=".1f") for x in ((c.predicted or [None, None])[1], c.measured, c.measured_half_width)]
        error = "" if c.error is None else f"{100 * c.error:+.1f} %"
        agree = {True: "yes", False: "no: more than the intervals and 10 % allow", None: ""}[c.agree]
        table.rows.append([str(c.measured_what), str(c.kind), *figures, error, agree])
    return table


def _meta(run: Run) -> str:
    env = run.model.environment or Environment()
    parts = [
        f"{run.nranks} rank{'s' if run.nranks != 1 else ''}",
        "complete" if run.complete else "incomplete (some trial did not count, or the schedule did not finish)",
    ]
    known = (
        (env.time_utc, ""),
        (env.host, "host "),
        (env.device, "device "),
        (env.benchy_version, "benchy "),
        (env.torch_version, "torch "),
        (env.python_version, "Python "),
    )
    parts += [f"{label}{value}" for value, label in known if value]
    if run.source == "log":
        parts.append(f"parsed from the log {run.model.parsed_from or ''}")
    if run.path:
        parts.append(run.path)
    return " · ".join(_e(p) for p in parts)


def _outcome(run: Run) -> str:
    """The verdict's kind, for its colour: data-loading (red), compute, balanced, undecided, inconsistent."""
    decision = run.model.decision
    label = None if decision is None else decision.outcome
    found, inconsistent = outcome_of(label) if label is not None else (None, False)
    if inconsistent:
        return "inconsistent"
    return "undecided" if found is None else found.value


def _run_section(run: Run, index: int, plots: _Plots) -> str:
    out = [f'<section id="run-{index}"><h2>{_e(run.label)}</h2><p class="meta">{_meta(run)}</p>']
    kind, verdict = (_outcome(run), run.verdict) if run.verdict else ("none", NO_VERDICT)
    out.append(f'<div class="verdict {kind}"><b>Verdict</b>{_e(verdict)}</div>')
    out.append(summary_table(run).html())
    if run.summary:
        out.append("<h3>Summary lines</h3><pre>" + _e("\n".join(run.summary)) + "</pre>")
    whatif = whatif_table(run)
    out += [found.html() for found in (system_table(run), sweep_table(run), whatif, whatif_checks(run)) if found is not None]
    out.append(
        plots.figure(
            f"{run.label}: per-step throughput",
            lambda b: drawing.plot_run(run, b),
            "Per-step throughput over each mode's trials (warm-ups shaded grey) above a histogram of its counted steps",
        )
    )
    out.append(
        plots.figure(
            f"{run.label}: timeline",
            lambda b: drawing.plot_timeline(run, b),
            "Every step at its time (bar height: the step's duration; FULL split into the step and "
            "the data wait), with the CPU and memory readings below",
        )
    )
    if whatif is not None:
        out.append(
            plots.figure(
                f"{run.label}: what if",
                lambda b: drawing.plot_whatif(run, b),
                "The model's FULL against the loader's workers, one line per step speed-up (interval shaded); "
                "the measured FULL and the emulated-step trials as points",
            )
        )
    out.append("</section>")
    return "\n".join(part for part in out if part)


def report_page(runs: Sequence[Run]) -> Page:
    """The page for ``runs`` (one or more); plots where matplotlib is installed."""
    if not runs:
        raise ValueError("a report needs at least one run")
    drawer = _Plots()
    title = runs[0].label if len(runs) == 1 else f"{len(runs)} runs: " + ", ".join(r.label for r in runs)
    body: List[str] = [f"<h1>benchy report: {_e(title)}</h1>"]
    if len(runs) > 1:
        rows = scaling.scaling_rows(runs)
        base = scaling.baseline(runs)
        body += [
            '<section id="scaling"><h2>Scaling</h2>',
            scaling.table(rows).html(),
            f'<p class="meta">baseline: {_e(base.label)} ({base.nranks} rank'
            f"{'s' if base.nranks != 1 else ''}); {_e(scaling.study_kind(rows))}</p>",
            drawer.figure(
                "scaling",
                lambda b: drawing.plot_scaling(rows, b),
                "Throughput of all ranks against ranks (ideal scaling dashed) and efficiency",
            ),
            "</section>",
            "<nav><ul>" + "".join(f'<li><a href="#run-{k}">{_e(r.label)}</a></li>' for k, r in enumerate(runs)) + "</ul></nav>",
        ]
    for k, run in enumerate(runs):
        body.append(_run_section(run, k, drawer))
    if drawer.notes:
        body.append(
            '<section id="notes"><h2>Left out</h2><ul>' + "".join(f"<li>{_e(n)}</li>" for n in drawer.notes) + "</ul></section>"
        )
    text = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>benchy report: {_e(title)}'
        f"</title><style>{STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    return Page(text, drawer.drawn, drawer.notes)
