"""The ``BENCHY::`` line grammar: every line kind benchy prints is written and parsed here, so that writer and
reader cannot drift apart unseen (pure).

CI jobs parse these lines, so their text is a compatibility contract: the three summary lines keep the original
tool's grammar, and every other summary line starts with ``BENCHY::SUMMARY::<WORD>`` where WORD is not a mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

PREFIX = "BENCHY::"
MAX_LINE = 240  # characters: the longest summary line, its ``BENCHY::SUMMARY::<WORD> `` prefix and rank mark included
RANK0 = " [rank 0]"  # ends a summary line that holds rank 0's own figures in a multi-rank run
MESSAGE_KINDS = ("INFO", "WARNING", "ERROR")
Number = Optional[float]


@dataclass(frozen=True)
class Line:
    """One parsed line of a kind :data:`LINE_KINDS` names: a trial's ``label`` (a SUMMARY's: its mode), else its
    ``text``; ``values``: the line's numbers (None for ``n/a``)."""

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


# Every kind :func:`parse` returns: (kind, its form, when it is printed). The documentation's output
# reference is generated from this table; tests/results/test_lines.py checks it names every kind and
# that every line of the stored runs' logs is of a kind named here.
LINE_KINDS: Tuple[Tuple[str, str, str], ...] = (
    (
        "INFO",
        "BENCHY::INFO::Message: <text>",
        "start-up (configuration, schedule, the benchmarked loader), the JSON's path, the end",
    ),
    (
        "ITERATION",
        "BENCHY::<MODE>_<k>::Iteration <i>/<n> Throughput: <x>",
        "every `report_freq` steps of a trial: throughput over the last `report_freq` steps",
    ),
    (
        "TRIAL",
        "BENCHY::<MODE>_<k>::Trial Throughput: <x>",
        "each trial; warm-ups are `<MODE>_WARMUP_<k>`, `k` counts from 1; also `H2D_<k>` (IO with copies to the "
        "accelerator), `STAGES_<k>` (stage trials), `STAGES_ALONE_1` or `STAGES_WORKER_1` (the stage trial at the "
        "what-if model's other setting: no workers, or two), `SWEEP<s>_<k>` (a sweep setting's trials), `EMULATED_<k>` "
        "(the real loader with an emulated faster step), `CONTENTION_1` and `PARTS_1` (the diagnostic windows)",
    ),
    (
        "SUMMARY",
        "BENCHY::SUMMARY::<MODE> average trial throughput: <mean> +/- <half-width>",
        "the end, per mode: samples/s of all ranks together and the 95 % half-width; with one trial "
        "`+/- n/a (1 trial: no interval)`, with none `n/a (no completed trial)`",
    ),
    (
        "PRECISION",
        "BENCHY::SUMMARY::PRECISION <MODE> <mean> +/- <half-width> is +/-<pct> % of its mean over <n> trials, wider "
        "than +/-<pct> %: ...",
        "the end, per mode whose 95 % interval is wider than `global.auto_figure_precision` (5 %): the script ended "
        "first (and the loop's further steps that would likely settle it), or the trials the schedule allows did not",
    ),
    (
        "TRIAL_WAIT",
        "BENCHY::<MODE>_<k>::Data Wait: <pct> % of the trial (median step <ms> ms, median wait <ms> ms)",
        "after each FULL trial: its time split where the loop asks for the next batch (the step: your code; the "
        "wait: inside the loader's `next`)",
    ),
    (
        "DATA_WAIT",
        "BENCHY::SUMMARY::DATA_WAIT <pct> % of FULL time was spent waiting for the loader (+/- <pct>); the step ran "
        "<pct> % of it (accelerator utilization, as MLPerf Storage reports it)",
        "the end, when FULL ran: the mean over its counted trials and the 95 % half-width in percentage points "
        "(`n/a` with one trial); left out for a loop that fetches one batch ahead, where the split means nothing",
    ),
    (
        "STEPS",
        "BENCHY::SUMMARY::STEPS <MODE> step time p50 ..., p90 ..., p99 ... over <n> steps; ...",
        "the end, per mode: percentiles of the per-step times of its counted trials, and stalls (steps over 3x the "
        "median: how many, their share of the time, and whether they repeat every k steps)",
    ),
    (
        "STARTUP",
        "BENCHY::SUMMARY::STARTUP loader start-up (iter() to the first batch): ...",
        "the end: the loader's start-up per pass (worker start and first fetch), what it adds over an ordinary "
        "batch and its share of an epoch at the FULL rate",
    ),
    (
        "SYSTEM",
        "BENCHY::SUMMARY::SYSTEM <MODE> CPU <x> of <n> cores busy (<pct> %), other processes <y>, peak RSS "
        "<mb> MB, storage reads <x> MB/s[, GPU ...]",
        "the end, per mode: the system metrics of its counted trials (means)",
    ),
    (
        "BUSY",
        "BENCHY::SUMMARY::BUSY <k> of <n> trials ran on a busy machine: ...",
        "the end, when counted trials ran while other processes took more than `busy_machine_share` of the cores",
    ),
    (
        "H2D",
        "BENCHY::SUMMARY::H2D IO with copies to <device>: <mean> +/- <hw> samples/s, <r>x IO (or `H2D skipped: <why>`)",
        "the end: the IO_H2D trials, run when the program has an accelerator in use",
    ),
    (
        "STAGES",
        "BENCHY::SUMMARY::STAGES IO period <ms> a batch ...: in the workers: <stage> <ms> (<share>) ...; "
        "unexplained <pct>; largest: <stage> (or `STAGES skipped: <why>`)",
        "the end: the stage trials, each stage of the loader timed",
    ),
    (
        "WORKERS",
        "BENCHY::SUMMARY::WORKERS <n> workers over <b> batches: ...",
        "the end, with loader workers: each worker's busy share and pace in the stage trials",
    ),
    (
        "FIRST_PASS",
        "BENCHY::SUMMARY::FIRST_PASS the loader's first batches ... (<r>x)[; ... warm page cache ...]",
        "the end, when IO ran: IO_WARMUP_1 against the steady IO trials, and a warm page cache named",
    ),
    (
        "SWEEP_ROW",
        "BENCHY::SWEEP::<setting> <mean> <half-width> <trials> <workers MB> <note>",
        "a loader sweep (the `sweep` section): its table, before the schedule",
    ),
    (
        "SWEEP",
        "BENCHY::SUMMARY::SWEEP best <settings>: <mean> +/- <hw> samples/s; smallest within 5 % of best: <settings>",
        "the end of a run with a loader sweep",
    ),
    (
        "COMPUTE",
        "BENCHY::SUMMARY::COMPUTE <flops> a step, <flops> a sample (...); achieved SYNTHETIC <x> FLOP/s "
        "+/- <hw>, FULL ...; MFU SYNTHETIC <pct> % ... of a peak of <x> (<basis>)",
        "the end, with `flops: true` and SYNTHETIC run (or `MFU not computed: <why>`, `FLOPs not counted: <why>`)",
    ),
    (
        "TOKENS",
        "BENCHY::SUMMARY::TOKENS IO <x> +/- <hw>, SYNTHETIC ..., FULL ... tokens/s; padding IO <pct> %, ...",
        "the end, with `count: tokens`",
    ),
    (
        "ENERGY",
        "BENCHY::SUMMARY::ENERGY <MODE> <J> J a trial (GPU <J>, CPU package <J>), <J> J a sample; ... "
        "(or `ENERGY not available here: <why>`)",
        "the end, with `system_metrics: true` (rank 0's own devices)",
    ),
    (
        "PARTS",
        "BENCHY::SUMMARY::PARTS SYNTHETIC step <ms> ms: forward <ms> ms (<pct> %), backward ..., optimizer step ..., "
        "the rest of the loop ... (PARTS_1: ...)",
        "the end, with `whatif: true`: the step split by hooks on every module, `backward` and optimizer in a "
        "diagnostic window of its own (`PARTS_1`), or why it did not run",
    ),
    (
        "WHATIF",
        "BENCHY::SUMMARY::WHATIF loading starts to limit FULL at a step <k>x faster (<lo>x to <hi>x; ...) (without "
        "workers: the loading runs between the steps (<pct> % of FULL's time); it takes longer than the step from "
        "a step <k>x faster, or stays shorter up to 20x); a <k>x "
        "faster step needs <n> workers[ (<fewest> to <most>)][ and <c> cores] (or: gets the most from no workers: "
        "FULL <x>, ...); ...; EMULATED (...): FULL predicted <x> "
        "(<lo> to <hi>), measured <y> +/- <hw> (<pct> %)",
        "the end, with `whatif: true` and IO and SYNTHETIC run: what a change would give (loader workers, cores, a "
        "faster step, a loader stage made free), from a model of the run, and each prediction checked by a "
        "measurement in the same run (the emulated-step trials `EMULATED_<k>`, the sweep's settings)",
    ),
    (
        "STRAGGLER",
        "BENCHY::SUMMARY::STRAGGLER ...",
        "the end, per mode with a rank more than 10 % slower than the others (with several ranks the DATA_WAIT, "
        "STEPS, SYSTEM and STARTUP lines end with ` [rank 0]`: they are rank 0's own)",
    ),
    (
        "VERDICT",
        "BENCHY::SUMMARY::VERDICT <side>: ...; most likely to help: <change>",
        "the end, when IO and SYNTHETIC both ran: the answer in at most 240 characters: which side limits training "
        "(`data loading limits`, `compute limits`, `balanced`, `undecided`, or `inconsistent measurement`), by how "
        "much with its interval, and the change most likely to help where the line has room for it (the ADVICE line "
        "always names it)",
    ),
    (
        "OVERLAP",
        "BENCHY::SUMMARY::OVERLAP FULL reaches <pct> % of the slower of the two ...",
        "after the VERDICT, when FULL ran: FULL against the slower side (overlapped, one after the other, below "
        "both), or why an inconsistent FULL is not to be read",
    ),
    (
        "WHY",
        "BENCHY::SUMMARY::WHY <claim>",
        "after the VERDICT, one per claim the other measurements add: the data wait, the loader's cause, the "
        "largest stage, stalls, copies, start-up, a sweep's setting, MFU, padding, a busy machine",
    ),
    (
        "ADVICE",
        "BENCHY::SUMMARY::ADVICE most likely to help: <change>[: <why>]",
        "last, when a change is advised (an undecided verdict: more trials): the change and its grounds",
    ),
    (
        "WATCH_RISE",
        "BENCHY::WATCH::epoch <k>: the loop waited for data <pct> % of its time, against <pct> % +/- <pct> in the "
        "FULL trials; ...",
        "after the schedule, where the training goes on: an epoch whose data wait rose past what the FULL trials "
        "measured (by more than their interval and at least 5 points), once when the rise starts",
    ),
    (
        "WATCH",
        "BENCHY::SUMMARY::WATCH <n> epoch(s) watched after the schedule: data wait <pct> to <pct> % (FULL <pct> %); "
        "no rise past <pct> % (or: the data wait rose past <pct> % in <k>, from epoch <e>)",
        "the process's end, when the training went on after the schedule for at least one whole epoch",
    ),
    (
        "WARNING",
        "BENCHY::WARNING::Message: <text>",
        "a trial that did not count (and why), a schedule left "
        "unfinished, a mode with no counted trial, a wrapper never iterated (also on stderr), a busy machine",
    ),
    ("ERROR", "BENCHY::ERROR::Message: <text>", "the JSON could not be written (the path is named; the lines stay)"),
)

# BENCHY::SUMMARY::<WORD> <text>: the summary lines besides the three modes' (never a mode's name). None is longer than
# MAX_LINE: a text with more to say goes on several lines of its word, each a claim (``summary_texts``).
SUMMARY_WORDS = tuple(kind for kind, form, _ in LINE_KINDS if form.startswith(f"{PREFIX}SUMMARY::{kind} "))
VERDICT_WORDS = ("VERDICT", "OVERLAP", "WHY", "ADVICE")  # the verdict's lines, the answer first: its whole text joined

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
    return (
        f"{PREFIX}{label}::Data Wait: {100.0 * share:.1f} % of the trial (median step "
        f"{1e3 * step_median:.3f} ms, median wait {1e3 * wait_median:.3f} ms)"
    )


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


def _cut(text: str, room: int) -> int:
    """Where to end a line of ``text`` within ``room`` characters: after the last ``; `` outside brackets that fits,
    else the last such ``, ``, else the last such ``: ``, else at the last space, else at ``room``."""
    depth = 0
    last = {"; ": 0, ", ": 0, ": ": 0, " ": 0}
    for i, char in enumerate(text[:room]):
        if char in "([":
            depth += 1
        elif char in ")]" and depth:
            depth -= 1
        elif char == " ":
            last[" "] = i
        if depth == 0 and text[i : i + 2] in last:
            last[text[i : i + 2]] = i + 1
    return next((at for at in last.values() if at), room)


def summary_texts(word: str, text: str, rank0: bool = False) -> List[str]:
    """``text`` as ``BENCHY::SUMMARY::<WORD>`` lines of at most :data:`MAX_LINE` characters each: one line where it
    fits, else cut at a clause's end (``; ``, then ``, ``, ``: ``, a space), each piece a line of the same word."""
    room = MAX_LINE - len(summary_text(word, "", rank0))
    out = []
    while len(text) > room:
        cut = _cut(text, room)
        out.append(summary_text(word, text[:cut].rstrip(" ;,:"), rank0))
        text = text[cut:].lstrip()
    return [*out, summary_text(word, text, rank0)]


def data_wait(share: Number, half_width: Number, rank0: bool = False) -> Optional[str]:
    """``BENCHY::SUMMARY::DATA_WAIT 12.3 % of FULL time was spent waiting for the loader (+/- 1.2)``."""
    if share is None:
        return None
    spread = "n/a" if half_width is None else f"{100.0 * half_width:.1f}"
    return summary_text(
        "DATA_WAIT",
        f"{100.0 * share:.1f} % of FULL time was spent waiting for the loader (+/- {spread}); the step ran "
        f"{100.0 * max(0.0, 1.0 - share):.1f} % of it (accelerator utilization, as MLPerf Storage reports it)",
        rank0,
    )


def watch_rise(text: str) -> str:
    """``BENCHY::WATCH::<text>``: an epoch after the schedule whose data wait rose (core.watch)."""
    return f"{PREFIX}WATCH::{text}"


def sweep_row(row: str) -> str:
    """One row of the loader sweep's table (``BENCHY::SWEEP::<row>``)."""
    return f"{PREFIX}SWEEP::{row}"


# --- the reader ---------------------------------------------------------------------------------

_NUM = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|inf|nan)"
_LABEL = r"([A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*?(?:_WARMUP)?_[0-9]+)"  # FULL_2, IO_WARMUP_1, SWEEP2_WARMUP_1, STAGES_WORKER_1
# A message (INFO, WARNING, ERROR) or a row of the sweep's table (no kind: SWEEP_ROW), its text to the line's end.
_TEXT = re.compile(r"BENCHY::(?:(INFO|WARNING|ERROR)::Message: ?|SWEEP::)(.*?)\s*$")
# The original printed ``BENCHY::SUMMARY:: SYNTHETIC`` (a space): accepted when reading.
_SUMMARY = re.compile(
    rf"BENCHY::SUMMARY::\s*(IO|SYNTHETIC|FULL) average trial throughput:\s*(?:{_NUM}\s*\+/-\s*(?:{_NUM}|n/a)|n/a)"
)
_WORD = re.compile(r"BENCHY::SUMMARY::(" + "|".join(SUMMARY_WORDS) + r") (.*?)\s*$")
_WAIT_NUMBERS = re.compile(_NUM + r" % .*\(\+/-\s*(?:" + _NUM + r"|n/a)\)")
# The trial lines: (kind, pattern, what each number after the label is divided by).
_TRIALS = (
    ("TRIAL", re.compile(rf"BENCHY::\s*{_LABEL}::\s*Trial Throughput:\s*{_NUM}"), (1.0,)),
    (
        "TRIAL_WAIT",
        re.compile(rf"BENCHY::{_LABEL}::Data Wait: {_NUM} % of the trial \(median step {_NUM} ms, median wait {_NUM} ms\)"),
        (100.0, 1e3, 1e3),
    ),
    ("ITERATION", re.compile(rf"BENCHY::{_LABEL}::Iteration ([0-9]+)/([0-9]+) Throughput: {_NUM}"), (1.0, 1.0, 1.0)),
)
_WATCH_RISE = re.compile(r"BENCHY::WATCH::(epoch ([0-9]+): .*?)\s*$")


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
        numbers = _WAIT_NUMBERS.search(body) if word == "DATA_WAIT" else None
        values = () if numbers is None else tuple(None if v is None else float(v) / 100.0 for v in numbers.groups())
        return Line(word, values=values, text=body, rank0=rank0, raw=m.group(0).strip())
    for kind, pattern, scales in _TRIALS:
        m = pattern.search(text)
        if m:
            values = tuple(float(v) / scale for v, scale in zip(m.groups()[1:], scales))
            return Line(kind, m.group(1), values, raw=m.group(0).strip())
    m = _WATCH_RISE.search(text)
    if m:
        return Line("WATCH_RISE", values=(float(m.group(2)),), text=m.group(1), raw=m.group(0).strip())
    m = _TEXT.search(text)
    return None if m is None else Line(m.group(1) or "SWEEP_ROW", text=m.group(2), raw=m.group(0).strip())
