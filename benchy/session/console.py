"""Where the lines go: plain text always (a log gets no control codes); rich progress and a summary table on a
terminal, refreshed by hand at report points: no refresh thread runs during a trial to steal time from it.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Optional, Sequence, TextIO

from ..core.results import RunResults
from ..core.schedule import Mode, TrialSpec
from ..core.verdict import Reading
from ..results.tables import SUMMARY_TITLE, ModeFigures, mode_table, rich_table, stages_table
from ..results.text.verdict import verdict_lines


def write_line(text: str, *streams: TextIO) -> None:
    """``text`` and its newline in one write to each stream (stdout by default), flushed; a closed one skipped. One
    write: under torchrun the ranks share one pipe, and ``print`` writes the newline apart, where another's line lands."""
    for stream in streams or (sys.stdout,):
        with contextlib.suppress(Exception):  # a closed stream at shutdown
            stream.write(text + "\n")
            stream.flush()


class Output:
    """Plain lines to ``stream``; with ``console='rich'`` (or 'auto' on a terminal) rich extras."""

    def __init__(self, console: str = "auto", stream: Optional[TextIO] = None, enabled: bool = True) -> None:
        self._stream = stream
        self.enabled = enabled
        self._rich: Any = None
        self._progress: Any = None
        self._task: Any = None
        if enabled and console != "plain":
            from rich.console import Console

            rich_console = Console(file=self.stream, force_terminal=True if console == "rich" else None)
            if console == "rich" or (rich_console.is_terminal and not rich_console.is_dumb_terminal):
                self._rich = rich_console

    @property
    def stream(self) -> TextIO:
        # Looked up at each use so that a stdout replaced after start-up (pytest, tee) is honoured.
        return self._stream if self._stream is not None else sys.stdout

    def line(self, text: str) -> None:
        """One plain line, flushed at once so that logs are complete if the job is killed."""
        if not self.enabled:
            return
        if self._progress is not None:
            self._rich.print(text, markup=False, highlight=False, soft_wrap=True)
            self._progress.refresh()
        else:
            write_line(text, self.stream)

    # --- live progress (terminal only) ------------------------------------------------------

    def trial_started(self, spec: TrialSpec) -> None:
        if self._rich is None or not self.enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]benchy[/] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=self._rich,
            auto_refresh=False,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(spec.label, total=spec.nbatches, rate="")
        self._progress.refresh()

    def trial_progress(self, step: int, rate: float) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=step, rate=f"{rate:,.1f} samples/s")
            self._progress.refresh()

    def trial_ended(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._task = None

    # --- final table (terminal only) ----------------------------------------------------------

    def summary_table(self, results: RunResults, modes: Sequence[Mode], reading: Reading) -> None:
        """On a terminal, last so that they share the screen: the stage table, the modes' table (as ``benchy summary``
        shows it) and the answer: the VERDICT line's text and the advice."""
        if self._rich is None or not self.enabled:
            return
        from rich.markup import escape

        if results.stages is not None:
            self._rich.print(stages_table(results.stages))
        rows = []
        for mode in modes:
            est = results.estimate(mode)
            wait = results.data_wait().mean if mode is Mode.FULL else None
            rows.append(ModeFigures(mode.value, est.mean, est.half_width, est.n, est.confidence, wait))
        self._rich.print(rich_table(mode_table(rows, title=SUMMARY_TITLE)))
        for word, text in verdict_lines(reading):
            if word == "VERDICT":
                self._rich.print(f"[bold]verdict:[/] {escape(text)}", highlight=False)
            elif word == "ADVICE":
                self._rich.print(escape(text), highlight=False)
