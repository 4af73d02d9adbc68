"""The reports' sentences (COMPUTE, TOKENS, ENERGY, PARTS, STARTUP, FIRST_PASS, WHATIF ...), each rendering one of
``core``'s values (no torch)."""

from __future__ import annotations

import math
from typing import List, Optional

from ...core.compute import ENERGY_KEYS, ComputeReport, EnergyReport, TokenReport
from ...core.diagnostics import StepParts
from ...core.results import Imprecise
from ...core.schedule import Mode
from ...core.stages import FirstPass, Stage, StageKind
from ...core.startup import Startup
from ...core.whatif import (
    FLIP_MAX,
    MAX_WORKERS,
    NEEDS_SHARE,
    Check,
    Need,
    WhatIf,
    best_free,
    best_workers,
)
from .numbers import flop, flops_rate, spread, triple

# --- the step's cost ----------------------------------------------------------------------------------


def precision(i: Imprecise, mean: Optional[float], half_width: Optional[float], precision: float, max_trials: int) -> str:
    """A figure wider than the schedule's figure precision: how wide, and what would settle it."""
    if mean is None:
        return f"{i.mode}: no completed trial"
    bound = f"{100 * precision:.0f}"
    if i.share is None or half_width is None:
        head = f"{i.mode} {mean:.3f} has no interval ({i.trials} trial)"
    else:
        head = (
            f"{i.mode} {mean:.3f} +/- {half_width:.3f} is +/-{100 * i.share:.0f} % of its mean over {i.trials} trials, "
            f"wider than +/-{bound} %"
        )
    if i.capped and i.fixed:
        return f"{head}: the schedule runs {i.trials} (ntrials); more, or longer ones (nbatches), would narrow it"
    if i.capped:
        return (
            f"{head}: its trials scatter more than global.auto_max_trials ({max_trials}) can narrow: a busy machine, "
            f"or a rate that changes as the loop runs"
        )
    if i.more_steps is not None:
        return f"{head}: about {i.more_steps} more steps of the loop would likely bring it within +/-{bound} %"
    return f"{head}: its trials scatter too much for more of them to settle it within the schedule's bound"


def compute(report: ComputeReport) -> List[str]:
    """The COMPUTE lines: the FLOPs counted, the rates achieved, MFU (or why not), one each."""
    c = report.count
    if c.skipped is not None:
        return [f"FLOPs not counted: {c.skipped.words()}"]
    if c.total <= 0:
        return [
            "FLOPs not counted: torch's FlopCounterMode saw no FLOPs in the counted step (a compiled graph "
            "it cannot see into, or ops it has no formula for"
            + (f": {', '.join(c.unknown)}" if c.unknown else "")
            + "); MFU is not guessed"
        ]
    mix = ", ".join(f"{100 * v / c.total:.0f} % {k}" for k, v in sorted(c.by_dtype.items(), key=lambda kv: -kv[1]))
    out = [
        f"{flop(c.total)} a step, {flop(report.per_sample or 0.0)} a sample (torch FlopCounterMode, one "
        f"untimed step of the loop after the verdict ({c.label}), on the cached batch of {c.samples} samples; {mix})"
    ]
    if c.unknown:
        out.append(f"not counted, no formula: {', '.join(c.unknown)} (the figures are a lower bound)")
    if report.modes:
        ranks = f", {report.world} ranks together" if report.world > 1 else ""
        out.append(
            "achieved "
            + ", ".join(
                f"{m.mode.value} {flops_rate(m.flops)}" + (f" +/- {flops_rate(m.half_width)}" if m.half_width is not None else "")
                for m in report.modes
            )
            + ranks
        )
    if report.peak is not None:
        per = " a device" if report.world > 1 else ""
        mfus = ", ".join(
            f"{m.mode.value} {100 * m.mfu:.1f} %" + (f" +/- {100 * m.mfu_half_width:.1f}" if m.mfu_half_width is not None else "")
            for m in report.modes
            if m.mfu is not None
        )
        out.append(f"MFU {mfus} of a peak of {flops_rate(report.peak.flops)}{per} ({report.peak.words()})")
    elif report.no_peak is not None:
        out.append(f"MFU not computed: {report.no_peak.words()}")
    return out


def tokens(report: TokenReport) -> List[str]:
    """The TOKENS lines: each mode's tokens per second and padding, how the mask was summed, where the tokens are."""
    parts = [f"{mode.value} {spread(m.tokens_per_s, m.interval, 1)}" for mode, m in report.modes if m.tokens_per_s is not None]
    out = ", ".join(parts) + " tokens/s" if parts else "no counted trial"
    pads = [
        f"{mode.value} {100 * m.padding:.1f} %" + (" (its one cached batch)" if mode is Mode.SYNTHETIC else "")
        for mode, m in report.modes
        if m.padding is not None
    ]
    if pads:
        out += "; padding " + ", ".join(pads) + " of the token positions"
    said = [out]
    sampled = sorted({m.every for mode, m in report.modes if m.every > 1 and mode is not Mode.SYNTHETIC})
    if sampled:
        said.append(
            f"the mask is summed on 1 in {sampled[-1]} batches (a full sum on every batch would cost more than "
            f"benchy's per-batch budget), so the non-padding rates are estimates"
        )
    return said + ([report.source] if report.source else [])


def energy(report: EnergyReport) -> str:
    """The ENERGY line's text."""
    if not report.modes:
        return f"not available here: {report.missing}"
    parts = []
    for mode, m in report.modes:
        total = sum(m.joules.values())
        split = ", ".join(f"{name} {m.joules[key]:.3g}" for key, name in ENERGY_KEYS if key in m.joules)
        sample = "n/a" if m.per_sample is None else f"{m.per_sample:.4g}"
        parts.append(f"{mode.value} {total:.4g} J a trial ({split}), {sample} J a sample")
    return "; ".join(parts) + f" ({'; '.join(report.sources)})"


def parts(p: StepParts) -> List[str]:
    """The PARTS lines: the step's split, and how it was measured."""
    if not p.found:
        return [
            f"{p.label}: no module forward, backward or optimizer step seen in the step "
            f"({1e3 * p.period:.3f} ms): nothing to split"
        ]

    def part(name: str, seconds: float) -> str:
        return f"{name} {1e3 * seconds:.3f} ms ({100 * seconds / p.period:.0f} %)" if p.period > 0 else name

    named = (
        part("forward", p.forward),
        part("backward", p.backward),
        part("optimizer step", p.optimizer),
        part("the rest of the loop", p.rest),
    )
    return [
        f"SYNTHETIC step {1e3 * p.period:.3f} ms: " + ", ".join(named),
        f"measured in {p.label}, with hooks on every module, backward and the optimizer in this window only (not counted)",
    ]


# --- the loader -----------------------------------------------------------------------------------------


def startup(s: Startup) -> List[str]:
    """The STARTUP lines: the start-up per pass, then what it adds over a batch and its share of an epoch."""
    runs = ", ".join(f"{x:.3f}" for x in s.seconds[:6]) + (" ..." if len(s.seconds) > 6 else "")
    out = [f"loader start-up (iter() to the first batch): {s.typical:.3f} s per epoch ({s.basis}: {runs} s)"]
    if s.batch_seconds is not None:
        extra, share = f"{s.extra:.3f} s more than a batch", s.share
        if share is not None:
            extra += (
                f": {100.0 * share:.1f} % of an epoch of {s.epoch_batches} batches at the FULL rate ({s.epoch_seconds:.2f} s)"
            )
        out.append(extra)
    return out


COLD_CACHE_HOWTO = (
    "to measure a cold one, drop the page cache before the run (Linux: sync; echo 3 | sudo tee "
    "/proc/sys/vm/drop_caches) or read a dataset larger than the memory"
)


def first_pass(f: FirstPass) -> List[str]:
    """The FIRST_PASS lines: the first batches against the steady ones, and a warm page cache where the reads show one."""
    ratio = f.ratio if f.ratio is not None else math.nan
    out = [
        f"the loader's first batches ({f.label}: start-up, opening files, a cold cache) "
        f"{f.first:.3f} samples/s against {f.steady:.3f} in the steady IO trials ({ratio:.2f}x)"
    ]
    if f.warm_cache and f.files_read is not None and f.storage_read is not None:
        out.append(
            f"the IO trials read {f.files_read / 1e6:.1f} MB of files and {f.storage_read / 1e6:.1f} MB "
            f"from storage: they show a warm page cache"
        )
        out.append(COLD_CACHE_HOWTO)
    return out


def stage_name(stage: Stage) -> str:
    """A stage as the tables and the JSON name it: ``dataset``, ``transform Normalize``, ``waiting for workers``."""
    return "waiting for workers" if stage.kind is StageKind.WAIT else stage.name


# --- what if ------------------------------------------------------------------------------------------


def check(c: Check) -> str:
    """One check of the model against a measurement."""
    hw = c.measured_half_width
    spread = "" if hw is None else f" +/- {hw:.1f}"
    measured = "n/a" if c.measured is None else f"{c.measured:.1f}{spread}"
    error = c.error
    said = (
        ""
        if error is None
        else f" ({100 * error:+.0f} %{', disagree: more than the intervals and 10 % allow' if c.agree is False else ''})"
    )
    return f"{c.measured_what}: {c.kind} predicted {triple(c.predicted)}, measured {measured}{said}"


def flip_range(w: WhatIf) -> str:
    """``2.5x to 3.1x``: the speed-ups from which loading limits FULL at the ends of the measured intervals."""
    return " to ".join(f"{k:.2g}x" if k is not None else f"beyond {FLIP_MAX:g}x" for k in w.flip_range)


def workers_range(need: Need) -> str:
    """`` (2 to 3)``: the workers a faster step needs at the ends of the measured intervals; nothing where both ends
    need as many."""
    if need.fewest == need.workers and need.most == need.workers:
        return ""
    most = f"more than {MAX_WORKERS}" if need.most is None else str(need.most)
    return f" ({need.fewest if need.fewest is not None else need.workers} to {most})"


def _listed(items: List[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def no_workers(needs: List[Need]) -> str:
    """Faster steps that no workers at all give the most FULL (the loading and the step one after the other,
    where a worker's batch costs more than it gives), with the FULL each gives."""
    steps = _listed([f"{n.speedup:g}x" for n in needs])
    fulls = _listed([f"{n.full:.1f}" for n in needs if n.full is not None])
    verb = "gets" if len(needs) == 1 else "get"
    return (
        f"a {steps} faster step {verb} the most from no workers: FULL {fulls}, the loading and the step one after "
        f"the other (workers give less than {100 * (1 - NEEDS_SHARE):.0f} % more here)"
    )


def whatif(w: WhatIf) -> List[str]:
    """The WHATIF lines: the few predictions that change the answer, in words, one each."""
    inp = w.inputs
    out: List[str] = []
    full = inp.full
    basis = f"model from {inp.basis.words}; figures with the range the measured intervals allow"
    # Without workers the loading runs between the steps: it adds to every step whether or not it "limits".
    between = "without workers the loading runs between the steps" + (
        f" ({100 * inp.full_wait:.0f} % of FULL's time)" if inp.full_wait is not None else ""
    )
    if w.flip is None and inp.workers == 0:
        out.append(f"{between}; it stays shorter than the step up to a step {FLIP_MAX:g}x faster ({basis})")
    elif w.flip is None:
        out.append(f"loading does not limit FULL up to a step {FLIP_MAX:g}x faster ({basis})")
    elif w.flip > 1.0 and inp.workers == 0:
        out.append(f"{between}; it takes longer than the step from a step {w.flip:.2g}x faster ({flip_range(w)}; {basis})")
    elif w.flip <= 1.0:
        out.append(f"loading limits FULL now ({basis})")
    else:
        out.append(f"loading starts to limit FULL at a step {w.flip:.2g}x faster ({flip_range(w)}; {basis})")
    # Faster steps that no workers at all give the most (said once, together)
    alone = [
        n
        for n in w.needs
        if n.speedup != 1.0
        and n.workers == 0
        and n.full is not None
        and not workers_range(n)
        and (n.cores is None or n.cores <= inp.cores)
    ]
    for need in w.needs:
        if need.speedup == 1.0 or need.workers is None:
            continue
        cores = "" if need.cores is None or need.cores <= inp.cores else f" and {need.cores:g} cores (here {inp.cores:g})"
        if need in alone:
            if need is alone[0]:
                out.append(no_workers(alone))
            continue
        out.append(
            f"a {need.speedup:g}x faster step needs {need.workers} worker{'s' if need.workers != 1 else ''}"
            f"{workers_range(need)}{cores}"
        )
    fewest = best_workers(w)
    if fewest is not None:
        prediction, gain = fewest
        n = prediction.workers
        out.append(
            f"with {n} worker{'s' if n != 1 else ''} FULL would be {triple(prediction.full)} "
            f"({100 * gain:+.0f} %; limit then: {prediction.limit})"
        )
    free = best_free(w)
    if free is not None:
        prediction, gain = free
        out.append(f"if {prediction.free} cost nothing FULL would be {triple(prediction.full)} ({100 * gain:+.0f} %)")
    if full is not None:
        out.append(f"the model's FULL as the run is: {triple(w.own.full)} against {full[1]:.1f} measured")
    for c in w.checks:
        out.append(check(c))
    if inp.contention >= 0.05 and inp.workers <= 0:
        n = inp.other_workers
        out.append(
            f"beside {n} loader worker{'s' if n != 1 else ''} (a copy of the loader taking a batch a step) the step "
            f"takes {100 * inp.contention:.0f} % longer than alone (CONTENTION_1, at {inp.contention_rate:.0f} "
            f"batches/s): the changes to workers count it"
        )
    elif inp.contention >= 0.05:
        out.append(
            f"beside the loader running flat out the step takes {100 * inp.contention:.0f} % longer than alone "
            f"(CONTENTION_1, at {inp.contention_rate:.0f} batches/s; in FULL {100 * (w.contention or 0.0):.0f} % at "
            f"{inp.full_rate:.0f} batches/s)"
        )
    elif w.contention is not None and w.contention >= 0.05:
        out.append(f"the step is {100 * w.contention:.0f} % slower in FULL than alone (the loader's work slows it)")
    if inp.step_fixed > 0:
        out.append(
            f"a faster accelerator leaves {100 * inp.step_fixed:.0f} % of the step as it is (the rest of the loop "
            f"beside forward, backward and the optimizer step: PARTS_1)"
        )
    return out
