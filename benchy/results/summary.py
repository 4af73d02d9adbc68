"""The summary lines: each measurement's figures in words, assembled in the order they print (pure)."""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Union

from ..core.claims import BusyTrials
from ..core.distribution import STALL_FACTOR, StepProfile
from ..core.results import RunResults, ScheduleState
from ..core.schedule import Extra, Mode
from ..core.stages import HOL_SHARE, Stage, StageReport, WorkerStat
from ..core.sweep import NEAR_BEST, Setting, SettingResult, best, smallest_within
from ..core.verdict import Reading, disturbed_trials, h2d_estimate, own_io
from . import lines, tables
from .tables import Table
from .text import reports
from .text.numbers import ms, spread
from .text.verdict import verdict_lines


def system_text(mode: Mode, means: Mapping[str, float]) -> str:
    """The SYSTEM line's text for ``mode``."""
    text = (
        f"{mode.value} CPU {means['cpu_cores_busy']:.2f} of {means['cpu_cores']:g} cores busy "
        f"({100.0 * means['cpu_util']:.0f} %)"
        + (f", other processes {means['other_cores_busy']:.2f}" if means.get("other_cores_busy") is not None else "")
        + f", peak RSS {means['rss_max_bytes'] / 1e6:.0f} MB, "
        f"storage reads {means['read_bytes_per_s'] / 1e6:.1f} MB/s"
    )
    if "gpu_util" in means:
        text += f", GPU {100.0 * means['gpu_util']:.0f} % busy"
    if "gpu_memory_bytes" in means:
        text += f", {means['gpu_memory_bytes'] / 1e9:.1f} GB"
    if "gpu_power_w" in means:
        text += f", {means['gpu_power_w']:.0f} W"
    return text + " (means over its trials)"


def stages_text(report: StageReport) -> List[str]:
    """The STAGES lines: the IO period of the stage trials and each stage's time a batch and share, then the largest
    and what the timers cost."""
    workers = report.workers
    head = (
        f"IO period {ms(report.period)} a batch over {report.batches} batches of the stage trials "
        f"({workers} worker{'s' if workers != 1 else ''}"
        + ("; worker stages as a share of the workers' time, workers x the period)" if workers else ")")
    )

    def item(stage: Stage) -> str:
        extra = f", {100 * stage.off_cpu:.0f} % off the CPU" if stage.off_cpu is not None else ""
        return f"{reports.stage_name(stage)} {ms(stage.seconds)} ({100 * stage.share:.0f} %{extra})"

    groups = []
    for where, title in (
        ("workers", "in the workers"),
        ("main", "in the main process"),
        ("pin thread", "in the pin_memory thread"),
    ):
        found = [item(st) for st in report.stages if st.where == where]
        if found:
            groups.append(f"{title}: " + ", ".join(found))
    if report.unexplained >= 0:
        rest = f"unexplained {100 * report.unexplained:.0f} %"
    else:
        rest = f"the stages overlap by {100 * -report.unexplained:.0f} % of the period"
    top = report.largest
    tail = "" if top is None else f"; largest: {reports.stage_name(top)}"
    cost = "" if report.instrumentation is None else f"; the timers cost {1e6 * report.instrumentation:.2f} us a sample"
    share = report.timer_share
    if share is not None and share >= 0.05:
        cost += f", {100 * share:.0f} % of the period (part of the unexplained: these batches are cheap to make)"
    return [head, *groups, f"{rest}{tail}{cost}"]


def copy_text(results: RunResults, report: StageReport) -> List[str]:
    """The host-to-device copy's cost a batch, where IO_H2D ran: what its period adds over IO's own
    (both this rank's), a STAGES line after the stages', so that the batch's whole path is in one place."""
    est, io = h2d_estimate(results), own_io(results)
    if est.mean is None or not io.mean or not est.mean or report.batches <= 0:
        return []
    per_batch = report.samples / report.batches
    extra = per_batch / est.mean - per_batch / io.mean
    return [
        f"the copy to {results.h2d_device} adds {ms(max(0.0, extra))} a batch "
        f"({100 * max(0.0, extra) / report.period:.0f} % of the period; IO_H2D against IO)"
    ]


WORKERS_LISTED = 8  # workers named one by one in the WORKERS line; more are summarised


def workers_text(report: StageReport) -> Optional[str]:
    """The WORKERS line's text (None without workers)."""
    found = report.per_worker
    if not found:
        return None

    def one(w: WorkerStat) -> str:
        return f"worker {w.worker} {w.batches} batches, busy {100 * w.busy_share:.0f} % ({ms(w.per_batch)} a batch)"

    if len(found) <= WORKERS_LISTED:
        listed = ", ".join(one(w) for w in found)
    else:
        shares = sorted(w.busy_share for w in found)
        slowest = max(found, key=lambda w: w.per_batch)
        listed = (
            f"busy {100 * shares[0]:.0f} % to {100 * shares[-1]:.0f} % (median "
            f"{100 * shares[len(shares) // 2]:.0f} %), slowest {one(slowest)}"
        )
    out = f"{len(found)} workers over {report.batches} batches: {listed}"
    slow, named = report.slowest, report.straggler
    if named is not None:
        out += (
            f"; slow worker: {named.worker} takes {named.ratio:.2f}x the others' time a batch, which costs about "
            f"{100 * named.cost:.0f} % of the IO throughput (modelled: with in-order delivery the loop takes the "
            f"workers' batches in turn, at its pace) (what its samples come from: a cold disk, a hot shard, a bad node)"
        )
    elif slow is not None:
        out += f"; no slow worker (the slowest, {slow.worker}, costs {100 * slow.cost:.0f} % of the IO throughput, modelled)"
    else:
        out += "; no slow worker"
    out += f"; {report.out_of_order} of {report.batches} batches were ready after a later one"
    hol = (
        f"; head-of-line: {100 * report.hol_share:.1f} % of the time the loop waited for a batch while a later "
        f"one was ready and a worker sat idle"
    )
    if report.hol_share >= HOL_SHARE:
        hol += (
            " (DataLoader(in_order=False) hands out the ready one)"
            if report.in_order
            else " (a torch with DataLoader(in_order=...) could hand out the ready one)"
        )
    out += hol
    if report.memory:
        pss = [m.pss for m in report.memory if m.pss is not None]
        out += (
            f"; memory a worker: unique {max(m.uss for m in report.memory) / 1e6:.0f} MB at most"
            + (f", proportional {max(pss) / 1e6:.0f} MB" if pss else "")
            + f" (RSS {max(m.rss for m in report.memory) / 1e6:.0f} MB counts the pages it shares)"
        )
    return out


def h2d_text(results: RunResults) -> Optional[str]:
    """The H2D line's text: ``IO with copies to cuda:0: 812.3 +/- 4.1 samples/s, 0.93x IO``, or why not."""
    if results.h2d_skipped is not None and not results.h2d:
        return f"skipped: {results.h2d_skipped.words()}"
    est, io = h2d_estimate(results), own_io(results)
    if est.mean is None:
        return None
    text = f"IO with copies to {results.h2d_device}: {spread(est.mean, est.half_width)} samples/s"
    if io.mean:
        text += f", {est.mean / io.mean:.2f}x IO"
    return text + " (this rank's loader)"


def steps_text(mode: Mode, profile: StepProfile, workers: int = 0) -> str:
    """Percentiles of a mode's step time and its stalls, in words (the STEPS summary line)."""
    text = (
        f"{mode.value} step time p50 {ms(profile.p50)}, p90 {ms(profile.p90)}, p99 {ms(profile.p99)} over {profile.steps} steps; "
    )
    if not profile.stalls:
        return text + f"no stalls (steps over {STALL_FACTOR:g}x the median)"
    text += (
        f"{profile.stalls} stall(s) (steps over {STALL_FACTOR:g}x the median) took "
        f"{100.0 * profile.stall_share:.1f} % of the time"
    )
    k = profile.stall_period
    if k is None:
        return text
    if workers and k == workers:
        return text + (
            f", every {k} steps with {workers} loader workers: the sign of a starved worker pool (each "
            f"worker takes longer than {k} steps to make a batch; more workers or cheaper batches help)"
        )
    return text + f", periodic: every {k} steps" + (f" (the loader has {workers} workers)" if workers else "")


def straggler_text(results: RunResults, mode: Mode) -> Optional[str]:
    """The slowest rank of a mode, when it is more than 10 % slower than the median rank (past
    ``dist_rank_lists`` ranks: than the ranks' mean, from the reduced figures)."""
    found = results.straggler(mode)
    if found is None:
        return None
    if found.summarised:
        return (
            f"{mode.value}: rank {found.rank} is {100.0 * found.slower:.1f} % slower than the ranks' mean (slowest in "
            f"{found.slowest_in} of {found.trials} trials, {found.ranks} ranks: figures reduced, not listed per rank)"
        )
    return (
        f"{mode.value}: rank {found.rank} is {100.0 * found.slower:.1f} % slower than the median rank "
        f"(mean trial time {found.seconds:.4f} s vs {found.basis:.4f} s)"
    )


def summary_lines(
    results: RunResults,
    modes: Sequence[Mode],
    reading: Reading,
    workers: int = 0,
    world: int = 1,
    schedule: Optional[ScheduleState] = None,
    max_trials: int = 8,
) -> List[str]:
    """The summary lines in the order they print, the verdict (``reading``, worked out once by the caller) last.
    With several ranks the data wait, step, system, start-up and sweep lines are rank 0's own and say so."""
    own = world > 1
    out: List[str] = []

    def say(word: str, text: Union[str, Sequence[str], None], rank0: bool = own) -> None:
        """Each claim in ``text`` on lines of its own, none over :data:`lines.MAX_LINE` characters."""
        for claim in [text] if isinstance(text, str) else text or ():
            out.extend(lines.summary_texts(word, claim, rank0))

    for mode in modes:
        est = results.estimate(mode)
        out.append(lines.summary(mode.value, est.mean, est.half_width))
    if schedule is not None:
        for wide in schedule.imprecise:
            est = results.estimate(Mode(wide.mode))
            say("PRECISION", reports.precision(wide, est.mean, est.half_width, schedule.figure_precision, max_trials), False)
    if Mode.FULL in modes:
        wait = results.data_wait()
        line = lines.data_wait(wait.mean, wait.half_width, own)
        if line is not None:
            out.append(line)
    for mode in modes:
        profile = reading.profiles.get(mode)
        say("STEPS", None if profile is None else steps_text(mode, profile, workers))
    for mode in modes:
        means = reading.systems.get(mode)
        say("SYSTEM", None if means is None else system_text(mode, means))
    busy = disturbed_trials(results)
    if busy:
        total = sum(len(results.measured(m)) for m in modes)
        say(
            "BUSY", f"{len(busy)} of {total} trials ran on a busy machine: other processes kept {BusyTrials(tuple(busy)).words()}"
        )
    if Mode.IO in modes:
        say("H2D", h2d_text(results), False)
        say("FIRST_PASS", None if reading.first_pass is None else reports.first_pass(reading.first_pass))
        report = results.stages
        if report is not None:
            say("STAGES", stages_text(report) + copy_text(results, report))
            say("WORKERS", workers_text(report))
        elif results.stages_skipped is not None:
            say("STAGES", f"skipped: {results.stages_skipped.words()}")
    say("STARTUP", None if reading.startup is None else reports.startup(reading.startup))
    for mode in modes:
        say("STRAGGLER", straggler_text(results, mode), False)
    say("SWEEP", sweep_line(results.sweep, results.sweep_memory_budget))
    say("COMPUTE", None if reading.compute is None else reports.compute(reading.compute), False)
    say("TOKENS", None if reading.tokens is None else reports.tokens(reading.tokens), False)
    say("ENERGY", None if reading.energy is None else reports.energy(reading.energy))
    skipped = [r for r in results.diagnostics_skipped if r.extra is Extra.PARTS]
    if results.parts is not None:
        say("PARTS", reports.parts(results.parts))
    elif skipped:
        say("PARTS", f"not measured: {skipped[0].words()}")
    say("WHATIF", None if reading.whatif is None else reports.whatif(reading.whatif))
    for word, text in verdict_lines(reading):
        say(word, text, False)
    return out


def sweep_line(results: Sequence[SettingResult], cap: Optional[int] = None) -> Optional[str]:
    """The SWEEP line's text, with the settings left out by the workers' memory cap (``cap``, bytes)."""
    top, small = best(results), smallest_within(results)
    if top is None or small is None:
        return None
    text = (
        f"best {top.setting.words()}: {spread(top.estimate.mean, top.estimate.half_width)} samples/s; smallest within "
        f"{100 * NEAR_BEST:g} % of best: {small.setting.words()}"
    )
    over = [r.setting.words() for r in results if r.over_cap]
    if over and cap is not None:
        text += (
            f"; left out over the workers' memory cap of {cap / 1e9:.2f} GB (available memory less room for "
            f"the training process): " + "; ".join(over)
        )
    return text


def sweep_table(results: Sequence[SettingResult], own: Setting) -> Table:
    """The loader sweep's table: one row per setting, the loader's own, the best and the recommended marked."""
    top, small = best(results), smallest_within(results)
    rows: List[tables.SweepRow] = []
    for r in results:
        marks = (
            (r.setting == own, "the loader's own"),
            (r is top, "best"),
            (r is small, f"smallest within {100 * NEAR_BEST:g} %"),
            (r.error is not None, f"failed: {r.error}"),
            (r.over_cap, "over the memory cap"),
        )
        notes = [text for marked, text in marks if marked]
        rows.append((r.setting.words(), r.estimate.mean, r.estimate.half_width, r.estimate.n, r.memory, notes))
    return tables.sweep_table(rows)
