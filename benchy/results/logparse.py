"""``benchy parse LOG``: a result document from the ``BENCHY::`` lines of a log (pure), for CI jobs that keep logs,
not files. A log may hold several runs (a run ends with its summary lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, TextIO

import msgspec

from ..core.schedule import Mode
from ..core.stats import estimate
from . import lines
from .model import Document
from .saved import Run
from .schema import SCHEMA_VERSION, read_run

MODE_NAMES = tuple(m.value for m in Mode)

RANKS = re.compile(r"^([0-9]+) ranks:")  # the start-up message of a multi-rank run


@dataclass
class LogRun:
    """The lines of one run, as read."""

    trials: Dict[Mode, List[float]] = field(default_factory=lambda: {m: [] for m in Mode})
    warmups: Dict[Mode, List[float]] = field(default_factory=lambda: {m: [] for m in Mode})
    summary: Dict[Mode, Any] = field(default_factory=dict)  # mode -> (mean or None, half-width or None)
    data_wait: Optional[Any] = None
    verdict: List[str] = field(default_factory=list)  # the texts of its VERDICT, OVERLAP, WHY and ADVICE lines
    lines: List[str] = field(default_factory=list)  # the SUMMARY lines, as printed
    nranks: Optional[int] = None
    ended: bool = False  # its summary lines were seen


def split_runs(log: TextIO) -> List[LogRun]:
    """Every run in the log, in order (a run ends with its summary lines); read with the line grammar."""
    runs = [LogRun()]
    for text in log:
        line = lines.parse(text)
        if line is None:
            continue
        current = runs[-1]
        trial = line.kind == "TRIAL" and line.trial_kind in MODE_NAMES
        ranks = RANKS.match(line.text) if line.kind == "INFO" else None
        again = line.kind == "SUMMARY" and Mode(line.label) in current.summary
        if current.ended and (trial or ranks or again):  # after a run's summary lines: the next run
            current = LogRun(nranks=None if ranks else current.nranks)
            runs.append(current)
        if trial:
            value = line.values[0]
            assert value is not None
            (current.warmups if line.warmup else current.trials)[Mode(line.trial_kind)].append(value)
        elif ranks:
            current.nranks = int(ranks.group(1))
        elif line.kind == "SUMMARY":
            current.summary[Mode(line.label)] = line.values
            current.lines.append(line.raw)
            current.ended = True
        elif line.kind in lines.SUMMARY_WORDS:
            if line.kind == "DATA_WAIT" and line.values:
                current.data_wait = line.values
            if line.kind in lines.VERDICT_WORDS:
                current.verdict.append(line.text)
            current.lines.append(line.raw)
    return [r for r in runs if r.summary or any(r.trials.values()) or any(r.warmups.values())]


def _mode_block(run: LogRun, mode: Mode) -> Optional[Dict[str, Any]]:
    trials, warm = run.trials[mode], run.warmups[mode]
    if mode not in run.summary and not trials:
        return None
    est = estimate(trials)
    mean, interval = run.summary.get(mode, (est.mean, est.half_width))
    block: Dict[str, Any] = {
        "trial_throughput": trials,
        "mean": mean,
        "interval": interval,
        "confidence": 0.95,
        "n": len(trials) if trials else None,
        "warmup": {"trial_throughput": warm},
        "system": [None] * len(trials),
    }
    if mode is Mode.FULL:
        wait = run.data_wait
        block["data_wait"] = None if wait is None else {"mean": wait[0], "interval": wait[1], "confidence": 0.95}
    return block


def document(run: LogRun, *, name: str, nranks: Optional[int] = None, parsed_from: str = "") -> Dict[str, Any]:
    """The result document (``source: "log"``) of one parsed run; what a log does not hold is left to the model's
    defaults."""
    doc: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_name": name,
        "source": "log",
        "parsed_from": parsed_from,
        "complete": all(run.summary.get(m, (None,))[0] is not None for m in Mode),
        "nranks": nranks or run.nranks or 1,
        "verdict": "; ".join(run.verdict) or None,  # as the run's JSON holds it (a log of an older version: its one line)
        "summary": run.lines,
        "config": {},
        "environment": {},
    }
    for mode in Mode:
        doc[mode.value] = _mode_block(run, mode)
    out: Dict[str, Any] = msgspec.to_builtins(msgspec.convert(doc, Document))  # every key, in the declared order
    return out


def parse_log(log: TextIO, *, name: str, nranks: Optional[int] = None, which: int = -1, parsed_from: str = "") -> Run:
    """The :class:`Run` of the ``which``-th run in the log (default: the last); ValueError if none."""
    runs = split_runs(log)
    if not runs:
        raise ValueError("no BENCHY:: trial or summary lines in it")
    if not -len(runs) <= which < len(runs):
        raise ValueError(f"it holds {len(runs)} run(s); asked for run {which + 1 if which >= 0 else which}")
    doc = document(runs[which], name=name, nranks=nranks, parsed_from=parsed_from)
    return read_run(doc, parsed_from or None)
