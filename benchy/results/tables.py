"""One table of already formatted cells, five renderings: plain text (a file or a pipe: exact, for CI logs and
tests), rich (a terminal), Markdown, CSV and HTML (pure).
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from typing import IO, Any, List, Mapping, Optional, Sequence, Tuple

from ..core.stages import StageReport
from .saved import Run
from .text.numbers import cell, percent
from .text.reports import stage_name

_MARKDOWN = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " ", **{mark: "\\" + mark for mark in "\\`*_[]|~#"}}
)


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown, so that a run name, a stage name or an error message cannot inject HTML or
    break a table."""
    return text.translate(_MARKDOWN)


@dataclass
class Table:
    """Headers, rows of cells (strings), and which columns are right-aligned (numbers)."""

    headers: Sequence[str]
    rows: List[Sequence[str]] = field(default_factory=list)
    right: Sequence[bool] = ()
    title: Optional[str] = None

    def _right(self, k: int) -> bool:
        return k < len(self.right) and bool(self.right[k])

    def plain(self) -> str:
        """Columns padded to their widest cell, two spaces apart; no trailing spaces."""
        widths = [max([len(h)] + [len(r[k]) for r in self.rows]) for k, h in enumerate(self.headers)]

        def line(cells: Sequence[str]) -> str:
            parts = [c.rjust(w) if self._right(k) else c.ljust(w) for k, (c, w) in enumerate(zip(cells, widths))]
            return "  ".join(parts).rstrip()

        out = [self.title] if self.title else []
        out.append(line(self.headers))
        out.extend(line(r) for r in self.rows)
        return "\n".join(out)

    def markdown(self) -> str:
        """A GitHub table; every cell, header and the title escaped with :func:`markdown_text`."""
        esc = markdown_text
        out = [f"**{esc(self.title)}**", ""] if self.title else []
        out.append("| " + " | ".join(esc(h) for h in self.headers) + " |")
        out.append("|" + "|".join("---:" if self._right(k) else "---" for k in range(len(self.headers))) + "|")
        out.extend("| " + " | ".join(esc(c) for c in r) + " |" for r in self.rows)
        return "\n".join(out)

    def csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.headers)
        writer.writerows(self.rows)
        return buffer.getvalue().rstrip("\n")

    def html(self) -> str:
        """A ``<table>`` (cells escaped; numeric columns get ``class="num"``)."""

        def row(cells: Sequence[str], tag: str) -> str:
            marked = [(' class="num"' if self._right(k) else "", html.escape(c)) for k, c in enumerate(cells)]
            return "<tr>" + "".join(f"<{tag}{num}>{text}</{tag}>" for num, text in marked) + "</tr>"

        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        body = "".join(row(r, "td") for r in self.rows)
        return f"<table>{caption}<thead>{row(self.headers, 'th')}</thead><tbody>{body}</tbody></table>"


def print_table(table: Table, stream: IO[str], *, fancy: bool) -> None:
    """Draw ``table`` with rich when ``fancy`` (a terminal), else as plain text."""
    if not fancy:
        stream.write(table.plain() + "\n")
        return
    from rich.console import Console

    Console(file=stream).print(rich_table(table))


def rich_table(table: Table) -> Any:
    """``table`` as a rich table (for a terminal)."""
    from rich.table import Table as RichTable

    grid = RichTable(title=table.title, title_justify="left")
    for k, header in enumerate(table.headers):
        grid.add_column(header, justify="right" if table._right(k) else "left")
    for row in table.rows:
        grid.add_row(*row)
    return grid


@dataclass(frozen=True)
class ModeFigures:
    """One row of the summary table, from a live run or a saved one alike."""

    mode: str
    mean: Optional[float]
    interval: Optional[float]
    n: Optional[int]
    confidence: float
    data_wait: Optional[float] = None


def mode_table(rows: Sequence[ModeFigures], title: Optional[str] = None) -> Table:
    """The summary table: the one ``benchy summary``, the report page and the live terminal show."""
    table = Table(
        ["mode", "samples/s", "+/-", "trials", "confidence", "data wait"],
        right=[False, True, True, True, True, True],
        title=title,
    )
    for m in rows:
        mean, interval = ("n/a" if x is None else f"{x:.3f}" for x in (m.mean, m.interval))
        wait = "" if m.data_wait is None else f"{100.0 * m.data_wait:.1f} %"
        table.rows.append([m.mode, mean, interval, "" if m.n is None else str(m.n), percent(m.confidence), wait])
    return table


def summary_table(run: Run) -> Table:
    """A saved run's summary table (:func:`mode_table`)."""
    return mode_table(
        [ModeFigures(mode.value, m.mean, m.interval, m.n, m.confidence, m.data_wait) for mode, m in run.modes.items()]
    )


# The system table's columns: (heading, figure, divisor, format); the SYSTEM line's figures and units.
SYSTEM_COLUMNS = (
    ("CPU cores busy", "cpu_cores_busy", 1.0, ".2f"),
    ("of cores", "cpu_cores", 1.0, "g"),
    ("other processes (cores)", "other_cores_busy", 1.0, ".2f"),
    ("peak RSS MB", "rss_max_bytes", 1e6, ".0f"),
    ("storage reads MB/s", "read_bytes_per_s", 1e6, ".2f"),
    ("loader reads MB/s", "loader_read_chars_per_s", 1e6, ".2f"),
    ("GPU busy %", "gpu_util", 0.01, ".0f"),
    ("GPU memory MB", "gpu_memory_bytes", 1e6, ".0f"),
    ("GPU power W", "gpu_power_w", 1.0, ".1f"),
)


def system_table(rows: Sequence[Tuple[str, int, Mapping[str, float]]]) -> Optional[Table]:
    """The table of what the system sampler measured, per mode; columns nobody measured are left out."""
    if not rows:
        return None
    columns = [c for c in SYSTEM_COLUMNS if any(c[1] in means for _, _, means in rows)]
    table = Table(
        ["mode", "trials"] + [c[0] for c in columns],
        right=[False] + [True] * (len(columns) + 1),
        title="System metrics (means over the counted trials; rank 0's own)",
    )
    for name, count, means in rows:
        table.rows.append([name, str(count)] + [cell(means.get(key), scale, spec) for _, key, scale, spec in columns])
    return table


# A loader sweep's row: the setting in words, IO samples/s, its half-width, trials, the workers' memory (bytes), notes.
SweepRow = Tuple[str, Optional[float], Optional[float], int, Optional[float], List[str]]


def sweep_table(rows: Sequence[SweepRow], title: Optional[str] = None) -> Table:
    """The loader sweep's table, a row per setting: the live run's and the report page's."""
    table = Table(
        ["setting", "IO samples/s", "+/-", "trials", "workers MB", "note"],
        right=[False, True, True, True, True, False],
        title=title,
    )
    for words, mean, half_width, n, memory, notes in rows:
        table.rows.append(
            [words, cell(mean, spec=".3f"), cell(half_width, spec=".3f"), str(n), cell(memory, 1e6, ".0f"), "; ".join(notes)]
        )
    return table


SUMMARY_TITLE = "benchy summary (samples/s, all ranks)"  # the terminal's summary table


def stages_table(report: StageReport) -> Any:
    """The stage trials as a rich table: each stage's time a batch and share, the largest in bold."""
    from rich.table import Table

    basis = "workers x period" if report.workers else "period"
    table = Table(
        title=f"where a batch's time goes (stage trials, IO period {1e3 * report.period:.3f} ms, {report.workers} workers)",
        title_justify="left",
    )
    table.add_column("stage", style="bold")
    table.add_column("runs in")
    table.add_column("ms a batch", justify="right")
    table.add_column("share", justify="right")
    table.add_column("of")
    top = report.largest
    for stage in report.stages:
        style = "bold yellow" if top is not None and stage is top else None
        table.add_row(
            stage_name(stage),
            stage.where,
            f"{1e3 * stage.seconds:.3f}",
            f"{100 * stage.share:.0f} %",
            basis if stage.where == "workers" else "period",
            style=style,
        )
    table.add_row("unexplained", "", "", f"{100 * report.unexplained:.0f} %", "period")
    return table
