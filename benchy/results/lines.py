"""The ``BENCHY::`` line grammar: every line kind benchy prints is written and parsed here (pure).

CI jobs parse these lines, so their text is a compatibility contract. The three summary lines
keep the original tool's grammar::

    BENCHY::SUMMARY::IO average trial throughput: 89.177 +/- 1.011

Every other summary line starts with ``BENCHY::SUMMARY::<WORD>`` where WORD is not a mode, so it
cannot be mistaken for them. Writers below build each kind; :func:`parse` reads any of them back
(anywhere in a line, after a launcher's ``[rank0]:`` prefix or a timestamp) into a :class:`Line`,
so writer and reader cannot drift apart unseen (``tests/results/test_lines.py`` round-trips each).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Tuple

__all__ = [
    "MESSAGE_KINDS",
    "RANK0",
    "SUMMARY_WORDS",
    "Line",
    "data_wait",
    "error",
    "info",
    "iteration",
    "parse",
    "summary",
    "summary_text",
    "sweep_row",
    "trial",
    "trial_wait",
    "warning",
]

PREFIX = "BENCHY::"
RANK0 = " [rank 0]"  # ends a summary line that holds rank 0's own figures in a multi-rank run
MESSAGE_KINDS = ("INFO", "WARNING", "ERROR")
# BENCHY::SUMMARY::<WORD> <text>: the summary lines besides the three modes' (never a mode's name).
SUMMARY_WORDS = ("DATA_WAIT", "STEPS", "SYSTEM", "BUSY", "H2D", "FIRST_PASS", "STAGES", "WORKERS", "STARTUP",
                 "STRAGGLER", "SWEEP", "COMPUTE", "TOKENS", "ENERGY", "VERDICT")

Number = Optional[float]


@dataclass(frozen=True)
class Line:
    """One parsed line. ``kind``: INFO, WARNING, ERROR (``text`` is the message); TRIAL, TRIAL_WAIT,
    ITERATION (``label`` is the trial's, e.g. ``FULL_WARMUP_1``); SUMMARY (``label`` is the mode);
    one of :data:`SUMMARY_WORDS` (``text`` is the rest of the line); SWEEP_ROW (``text``: a table row).
    ``values``: the line's numbers (None for ``n/a``); ``rank0``: it ends with :data:`RANK0`."""

    kind: str
    label: str = ""
    values: Tuple[Number, ...] = ()
    text: str = ""
    rank0: bool = False
    raw: str = field(default="", compare=False)  # the matched text as it was printed

    @property
    def trial_kind(self) -> str:
        """A trial line's mode or variant (``FULL``, ``H2D``, ``SWEEP2``); empty for other lines."""
        return self.label.rsplit("_", 1)[0].removesuffix("_WARMUP") if self.kind in _TRIAL_KINDS else ""

    @property
    def warmup(self) -> bool:
        """A trial line of a warm-up."""
        return self.kind in _TRIAL_KINDS and "_WARMUP_" in self.label


_TRIAL_KINDS = ("TRIAL", "TRIAL_WAIT", "ITERATION")


# --- writers ------------------------------------------------------------------------------------


def info(message: str) -> str:
    return f"{PREFIX}INFO::Message: {message}"


def warning(message: str) -> str:
    return f"{PREFIX}WARNING::Message: {message}"


def error(message: str) -> str:
    return f"{PREFIX}ERROR::Message: {message}"


def trial(label: str, throughput: float) -> str:
    """``BENCHY::FULL_2::Trial Throughput: 90.123`` (warm-ups: ``FULL_WARMUP_1``)."""
    return f"{PREFIX}{label}::Trial Throughput: {throughput:.3f}"


def trial_wait(label: str, share: float, step_median: float, wait_median: float) -> str:
    """``BENCHY::FULL_2::Data Wait: 12.3 % of the trial (median step 4.100 ms, median wait 0.520 ms)``."""
    return (f"{PREFIX}{label}::Data Wait: {100.0 * share:.1f} % of the trial (median step "
            f"{1e3 * step_median:.3f} ms, median wait {1e3 * wait_median:.3f} ms)")


def iteration(label: str, step: int, nbatches: int, rate: float) -> str:
    """The periodic line: throughput over the steps since the previous one."""
    return f"{PREFIX}{label}::Iteration {step}/{nbatches} Throughput: {rate:.3f}"


def summary(mode: str, mean: Number, half_width: Number) -> str:
    """One of the three parsed lines. No fake zero: one trial has no interval."""
    head = f"{PREFIX}SUMMARY::{mode} average trial throughput:"
    if mean is None:
        return f"{head} n/a (no completed trial)"
    if half_width is None:
        return f"{head} {mean:.3f} +/- n/a (1 trial: no interval)"
    return f"{head} {mean:.3f} +/- {half_width:.3f}"


def summary_text(word: str, text: str, rank0: bool = False) -> str:
    """``BENCHY::SUMMARY::<WORD> <text>``, ending with :data:`RANK0` when the figures are rank 0's own."""
    if word not in SUMMARY_WORDS:
        raise ValueError(f"summary word: got {word!r}; expected one of {', '.join(SUMMARY_WORDS)}")
    return f"{PREFIX}SUMMARY::{word} {text}{RANK0 if rank0 else ''}"


def data_wait(share: Number, half_width: Number, rank0: bool = False) -> Optional[str]:
    """``BENCHY::SUMMARY::DATA_WAIT 12.3 % of FULL time was spent waiting for the loader (+/- 1.2)``."""
    if share is None:
        return None
    spread = "n/a" if half_width is None else f"{100.0 * half_width:.1f}"
    return summary_text("DATA_WAIT", f"{100.0 * share:.1f} % of FULL time was spent waiting for the loader "
                                     f"(+/- {spread})", rank0)


def sweep_row(row: str) -> str:
    """One row of the loader sweep's table (``BENCHY::SWEEP::<row>``)."""
    return f"{PREFIX}SWEEP::{row}"


# --- the reader ---------------------------------------------------------------------------------

_NUM = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|inf|nan)"
_LABEL = r"([A-Z][A-Z0-9]*(?:_WARMUP)?_[0-9]+)"  # FULL_2, IO_WARMUP_1, H2D_1, SWEEP2_WARMUP_1
_MESSAGE = re.compile(r"BENCHY::(INFO|WARNING|ERROR)::Message: ?(.*?)\s*$")
# The original printed ``BENCHY::SUMMARY:: SYNTHETIC`` (a space): accepted when reading.
_SUMMARY = re.compile(r"BENCHY::SUMMARY::\s*(IO|SYNTHETIC|FULL) average trial throughput:\s*"
                      r"(?:" + _NUM + r"\s*\+/-\s*(?:" + _NUM + r"|n/a)|n/a)")
_WORD = re.compile(r"BENCHY::SUMMARY::(" + "|".join(SUMMARY_WORDS) + r") (.*?)\s*$")
_WAIT_NUMBERS = re.compile(_NUM + r" % .*\(\+/-\s*(?:" + _NUM + r"|n/a)\)")
_TRIAL = re.compile(r"BENCHY::\s*" + _LABEL + r"::\s*Trial Throughput:\s*" + _NUM)
_TRIAL_WAIT = re.compile(r"BENCHY::" + _LABEL + r"::Data Wait: " + _NUM + r" % of the trial \(median step "
                         + _NUM + r" ms, median wait " + _NUM + r" ms\)")
_ITERATION = re.compile(r"BENCHY::" + _LABEL + r"::Iteration ([0-9]+)/([0-9]+) Throughput: " + _NUM)
_SWEEP_ROW = re.compile(r"BENCHY::SWEEP::(.*?)\s*$")


def _number(text: Optional[str]) -> Number:
    return None if text is None else float(text)


def parse(text: str) -> Optional[Line]:
    """The ``BENCHY::`` line in ``text`` (anywhere in it), or None when it holds none."""
    if PREFIX not in text:
        return None
    m = _SUMMARY.search(text)
    if m:
        return Line("SUMMARY", m.group(1), (_number(m.group(2)), _number(m.group(3))), raw=m.group(0).strip())
    m = _WORD.search(text)
    if m:
        word, body = m.group(1), m.group(2)
        rank0 = body.endswith(RANK0.strip())
        if rank0:
            body = body[: -len(RANK0.strip())].rstrip()
        values: Tuple[Number, ...] = ()
        if word == "DATA_WAIT":
            numbers = _WAIT_NUMBERS.search(body)
            if numbers:
                values = tuple(None if v is None else float(v) / 100.0 for v in numbers.groups())
        return Line(word, values=values, text=body, rank0=rank0, raw=m.group(0).strip())
    m = _TRIAL.search(text)
    if m:
        return Line("TRIAL", m.group(1), (float(m.group(2)),), raw=m.group(0).strip())
    m = _TRIAL_WAIT.search(text)
    if m:
        return Line("TRIAL_WAIT", m.group(1), (float(m.group(2)) / 100.0, float(m.group(3)) / 1e3,
                                               float(m.group(4)) / 1e3), raw=m.group(0).strip())
    m = _ITERATION.search(text)
    if m:
        return Line("ITERATION", m.group(1), (float(m.group(2)), float(m.group(3)), float(m.group(4))),
                    raw=m.group(0).strip())
    m = _MESSAGE.search(text)
    if m:
        return Line(m.group(1), text=m.group(2), raw=m.group(0).strip())
    m = _SWEEP_ROW.search(text)
    if m:
        return Line("SWEEP_ROW", text=m.group(1), raw=m.group(0).strip())
    return None
