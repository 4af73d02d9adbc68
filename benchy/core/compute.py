"""What a training step costs: FLOPs and model FLOPs utilization, tokens and padding, energy (pure, no torch).

The measuring side hands over values, kept in the result model (:mod:`benchy.core.results`): a
:class:`~benchy.core.results.FlopCount` of one SYNTHETIC step (torch's ``FlopCounterMode``, see
:mod:`benchy.measure.flops`), a :class:`~benchy.core.results.TokenCount` per trial (see
:mod:`benchy.measure.counting`) and the energy counters' joules in each trial's system metrics
(see :mod:`benchy.measure.system`). This module turns them, with the trials' throughputs, into
the COMPUTE, TOKENS and ENERGY readings: achieved FLOP/s per mode, MFU against a peak that is
always named next to it, tokens per second and the padding share per mode, joules per sample.

The peak table lists dense figures only (the datasheets print "with sparsity" figures twice as
high; a mix-up doubles MFU): each entry names its source. ``global.peak_flops`` gives or overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .peaks import PeakConfig, dtype_key, known_accelerator
from .results import FlopCount, RunResults, TrialResult
from .schedule import Mode
from .stats import Estimate, estimate

__all__ = [
    "PADDING_ADVICE",
    "PADDING_SHARE",
    "ComputeReport",
    "EnergyReport",
    "ModeEnergy",
    "ModeFlops",
    "ModeTokens",
    "Peak",
    "TokenReport",
    "compute_advice",
    "compute_clause",
    "compute_report",
    "energy_report",
    "flops_text",
    "padding_clause",
    "peak_for",
    "token_report",
]

# Padding above this share of the token positions is named in the verdict.
PADDING_SHARE = 0.10

# MFU at or above this: the step is near what the accelerator does.
NEAR_PEAK = 0.5


# --- the count and the peak -------------------------------------------------------------------------


@dataclass(frozen=True)
class Peak:
    """The peak a device could do the step's FLOPs at (FLOP/s), and where each figure comes from."""

    flops: float
    basis: str


def peak_for(count: FlopCount, configured: PeakConfig) -> Tuple[Optional[Peak], Optional[str]]:
    """The peak for ``count``'s mix of dtypes on its device, or why there is none.

    A mix of dtypes is weighed as the time the device would take at its peaks: ``total / sum(flops_d
    / peak_d)``. float32 counts at the TF32 peak where torch lets matmuls and convolutions use TF32
    (the count says ``tf32`` for those). ``configured`` (``global.peak_flops``) wins: a single figure
    for every dtype, or per dtype
    (a dtype it leaves out falls back on the table)."""
    if count.total <= 0:
        return None, "no FLOPs counted"
    row = known_accelerator(count.device) if count.device_type != "cpu" else None
    seconds = 0.0
    parts: List[Tuple[str, float, str]] = []
    for dtype, flops in sorted(count.by_dtype.items(), key=lambda kv: -kv[1]):
        key = dtype_key(dtype)
        if key == "tf32" and isinstance(configured, Mapping) and "tf32" not in configured and "float32" in configured:
            key = "float32"  # a configured float32 peak covers the float32 matmuls that ran as TF32
        figure: Optional[float] = None
        where = ""
        if isinstance(configured, (int, float)):
            figure, where = float(configured), "global.peak_flops"
        elif isinstance(configured, Mapping) and key in configured:
            figure, where = float(configured[key]), f"global.peak_flops.{key}"
        elif row is not None and key in row.peaks:
            figure, where = row.peaks[key], f"{row.name}, {row.source}"
        if figure is None:
            if row is None:
                device = count.device or count.device_type
                return None, (
                    f"no peak is known for {device}"
                    + (" (a CPU's peak depends on its cores, clock and vector units)" if count.device_type == "cpu" else "")
                    + ": set global.peak_flops (FLOP/s) to get MFU"
                )
            return None, (f"the peak table has no {key} figure for {row.name}: set global.peak_flops.{key} (FLOP/s) to get MFU")
        seconds += flops / figure
        parts.append((key, figure, where))
    if seconds <= 0:
        return None, "no FLOPs counted"
    if len(parts) == 1:
        basis = f"{parts[0][0]}: {parts[0][2]}"
    else:
        basis = "a mix, by the time each takes: " + "; ".join(f"{k} {flops_text(f)}: {w}" for k, f, w in parts)
    return Peak(count.total / seconds, basis), None


def _flop(flops: float) -> str:
    """``1.23 GFLOP``: a FLOP count with its SI prefix."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if flops >= scale:
            return f"{flops / scale:.4g} {unit}"
    return f"{flops:.4g} FLOP"


def flops_text(flops_per_s: float) -> str:
    """``2.31 TFLOP/s``: a rate with its SI prefix."""
    return _flop(flops_per_s) + "/s"


@dataclass(frozen=True)
class ModeFlops:
    """One mode's achieved FLOP/s (all ranks together), with its interval, and MFU where a peak is known."""

    mode: Mode
    flops: float
    half_width: Optional[float]
    mfu: Optional[float]
    mfu_half_width: Optional[float]


@dataclass(frozen=True)
class ComputeReport:
    """The COMPUTE reading: the step's FLOPs, each mode's achieved rate and MFU, and the peak used."""

    count: FlopCount
    world: int
    peak: Optional[Peak]
    no_peak: Optional[str]
    modes: Tuple[ModeFlops, ...]

    @property
    def per_sample(self) -> Optional[float]:
        return self.count.total / self.count.samples if self.count.samples > 0 else None

    def mfu(self, mode: Mode) -> Optional[float]:
        found = next((m for m in self.modes if m.mode is mode), None)
        return None if found is None else found.mfu

    def text(self) -> str:
        """The COMPUTE line's text."""
        c = self.count
        if c.skipped is not None:
            return f"FLOPs not counted: {c.skipped}"
        if c.total <= 0:
            return (
                "FLOPs not counted: torch's FlopCounterMode saw no FLOPs in the counted step (a compiled graph "
                "it cannot see into, or ops it has no formula for"
                + (f": {', '.join(c.unknown)}" if c.unknown else "")
                + "); MFU is not guessed"
            )
        mix = ", ".join(f"{100 * v / c.total:.0f} % {k}" for k, v in sorted(c.by_dtype.items(), key=lambda kv: -kv[1]))
        out = (
            f"{_flop(c.total)} a step, {_flop(self.per_sample or 0.0)} a sample (torch FlopCounterMode, one "
            f"untimed step of the loop after the verdict ({c.label}), on the cached batch of {c.samples} samples; {mix})"
        )
        if c.unknown:
            out += f"; not counted, no formula: {', '.join(c.unknown)} (the figures are a lower bound)"
        if self.modes:
            ranks = f", {self.world} ranks together" if self.world > 1 else ""
            out += (
                "; achieved "
                + ", ".join(
                    f"{m.mode.value} {flops_text(m.flops)}"
                    + (f" +/- {flops_text(m.half_width)}" if m.half_width is not None else "")
                    for m in self.modes
                )
                + ranks
            )
        if self.peak is not None:
            per = " a device" if self.world > 1 else ""
            mfus = ", ".join(
                f"{m.mode.value} {100 * m.mfu:.1f} %"
                + (f" +/- {100 * m.mfu_half_width:.1f}" if m.mfu_half_width is not None else "")
                for m in self.modes
                if m.mfu is not None
            )
            out += f"; MFU {mfus} of a peak of {flops_text(self.peak.flops)}{per} ({self.peak.basis})"
        elif self.no_peak is not None:
            out += f"; MFU not computed: {self.no_peak}"
        return out

    def to_dict(self) -> Dict[str, Any]:
        out = self.count.to_dict()
        out.update(
            {
                "flops_per_sample": self.per_sample,
                "world": self.world,
                "peak_flops": None if self.peak is None else self.peak.flops,
                "peak_basis": None if self.peak is None else self.peak.basis,
                "no_mfu": self.no_peak,
            }
        )
        for m in self.modes:
            out[m.mode.value] = {"flops_per_s": m.flops, "interval": m.half_width, "mfu": m.mfu, "mfu_interval": m.mfu_half_width}
        return out


def compute_report(
    count: Optional[FlopCount], results: RunResults, world: int, configured: PeakConfig
) -> Optional[ComputeReport]:
    """The COMPUTE reading of a run (None: no count was attempted). Achieved FLOP/s is FLOPs a sample
    times the mode's throughput (all ranks); MFU divides it by ``world`` devices at the peak."""
    if count is None:
        return None
    if count.skipped is not None or count.total <= 0 or count.samples <= 0:
        return ComputeReport(count, world, None, None, ())
    peak, no_peak = peak_for(count, configured)
    per_sample = count.total / count.samples
    modes: List[ModeFlops] = []
    for mode in (Mode.SYNTHETIC, Mode.FULL):
        est = results.estimate(mode)
        if est.mean is None:
            continue
        flops = per_sample * est.mean
        half = None if est.half_width is None else per_sample * est.half_width
        mfu = mfu_half = None
        if peak is not None:
            mfu = flops / (world * peak.flops)
            mfu_half = None if half is None else half / (world * peak.flops)
        modes.append(ModeFlops(mode, flops, half, mfu, mfu_half))
    return ComputeReport(count, world, peak, no_peak, tuple(modes))


def compute_clause(report: ComputeReport) -> Optional[str]:
    """What MFU adds to a compute-limited verdict (None without MFU)."""
    mfu = report.mfu(Mode.SYNTHETIC)
    if mfu is None or report.peak is None:
        return None
    per = " a device" if report.world > 1 else ""
    head = f"the step runs at {100 * mfu:.0f} % of the peak ({flops_text(report.peak.flops)}{per}; {report.peak.basis})"
    if mfu >= NEAR_PEAK:
        return head + ": the step is near what the accelerator does"
    return head + ": the step has headroom"


def compute_advice(report: ComputeReport) -> Optional[str]:
    """The change most likely to speed up a compute-limited step, from its MFU and dtype mix (None: no MFU)."""
    mfu = report.mfu(Mode.SYNTHETIC)
    if mfu is None:
        return None
    if mfu >= NEAR_PEAK:
        return "fewer FLOPs a sample (a smaller model or input) or more devices: the step is near the peak"
    c = report.count
    float32 = sum(v for k, v in c.by_dtype.items() if dtype_key(k) == "float32")
    if c.device_type != "cpu" and float32 > 0.5 * c.total:
        return (
            "mixed precision (torch.autocast with bfloat16): most of the step's FLOPs run in float32, far below "
            "the accelerator's bfloat16 peak"
        )
    return "a larger batch, or compiled or fused code (torch.compile)"


# --- tokens -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModeTokens:
    mode: Mode
    estimate: Estimate  # non-padding tokens per second (all ranks), over the counted trials
    padding: Optional[float]  # the share of positions that are padding, over the trials' sampled batches
    every: int  # the attention mask summed on 1 in ``every`` batches


def _trial_tokens_rate(t: TrialResult) -> Optional[float]:
    per = None if t.tokens is None else t.tokens.real_per_sample
    return None if per is None else t.throughput * per


@dataclass(frozen=True)
class TokenReport:
    """The TOKENS reading: each mode's non-padding tokens per second and padding share."""

    modes: Tuple[ModeTokens, ...]
    source: str  # what was counted, in words

    def padding(self, mode: Mode) -> Optional[float]:
        found = next((m for m in self.modes if m.mode is mode), None)
        return None if found is None else found.padding

    @property
    def worst_padding(self) -> Optional[Tuple[Mode, float]]:
        found: List[Tuple[Mode, float]] = [
            (m.mode, m.padding) for m in self.modes if m.padding is not None and m.mode is not Mode.SYNTHETIC
        ]
        if not found:
            found = [(m.mode, m.padding) for m in self.modes if m.padding is not None]
        if not found:
            return None
        mode, share = max(found, key=lambda x: x[1])
        return mode, share

    def text(self) -> str:
        parts = []
        for m in self.modes:
            est = m.estimate
            if est.mean is None:
                continue
            spread = "n/a" if est.half_width is None else f"{est.half_width:.1f}"
            parts.append(f"{m.mode.value} {est.mean:.1f} +/- {spread}")
        out = ", ".join(parts) + " tokens/s" if parts else "no counted trial"
        pads = [
            f"{m.mode.value} {100 * m.padding:.1f} %" + (" (its one cached batch)" if m.mode is Mode.SYNTHETIC else "")
            for m in self.modes
            if m.padding is not None
        ]
        if pads:
            out += "; padding " + ", ".join(pads) + " of the token positions"
        sampled = sorted({m.every for m in self.modes if m.every > 1 and m.mode is not Mode.SYNTHETIC})
        if sampled:
            out += (
                f"; the mask is summed on 1 in {sampled[-1]} batches (a full sum on every batch would cost more "
                f"than benchy's per-batch budget), so the non-padding rates are estimates"
            )
        return out + f" ({self.source})"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"source": self.source}
        for m in self.modes:
            out[m.mode.value] = {
                "tokens_per_s": m.estimate.mean,
                "interval": m.estimate.half_width,
                "n": m.estimate.n,
                "padding": m.padding,
                "mask_every": m.every,
            }
        return out


def token_report(results: RunResults, modes: Sequence[Mode], source: str) -> Optional[TokenReport]:
    """Tokens per second and padding per mode, from the trials' :class:`TokenCount` (None: none counted)."""
    found: List[ModeTokens] = []
    for mode in modes:
        trials = [t for t in results.measured(mode) if t.tokens is not None]
        if not trials:
            continue
        rates = [r for r in (_trial_tokens_rate(t) for t in trials) if r is not None]
        sampled = sum(t.tokens.sampled_tokens for t in trials if t.tokens is not None)
        real = sum(t.tokens.real for t in trials if t.tokens is not None)
        every = max(t.tokens.every for t in trials if t.tokens is not None)
        padding = 1.0 - real / sampled if sampled > 0 else None
        found.append(ModeTokens(mode, estimate(rates), padding, every))
    return TokenReport(tuple(found), source) if found else None


def padding_clause(report: TokenReport) -> Optional[str]:
    """The verdict's clause on padding waste above :data:`PADDING_SHARE` (None below it)."""
    worst = report.worst_padding
    if worst is None or worst[1] <= PADDING_SHARE:
        return None
    mode, share = worst
    return f"{100 * share:.0f} % of the token positions in {mode.value} are padding: the step computes on them for nothing"


PADDING_ADVICE = "less padding (batches of similar lengths, e.g. a length-grouped sampler, or packed sequences)"


# --- energy -----------------------------------------------------------------------------------------

ENERGY_KEYS = (("gpu_energy_j", "GPU"), ("cpu_energy_j", "CPU package"))


@dataclass(frozen=True)
class ModeEnergy:
    mode: Mode
    joules: Dict[str, float]  # per source (``gpu_energy_j`` ...): mean joules a trial
    per_sample: Optional[float]  # all sources: joules a sample of this rank's


@dataclass(frozen=True)
class EnergyReport:
    """The ENERGY reading: joules per trial and per sample of each mode, this rank's devices."""

    modes: Tuple[ModeEnergy, ...]
    sources: Tuple[str, ...]  # how each figure was read, in words
    missing: Optional[str]  # why there is none

    def text(self) -> str:
        if not self.modes:
            return f"not available here: {self.missing}"
        parts = []
        for m in self.modes:
            total = sum(m.joules.values())
            split = ", ".join(f"{name} {m.joules[key]:.3g}" for key, name in ENERGY_KEYS if key in m.joules)
            sample = "n/a" if m.per_sample is None else f"{m.per_sample:.4g}"
            parts.append(f"{m.mode.value} {total:.4g} J a trial ({split}), {sample} J a sample")
        return "; ".join(parts) + f" ({'; '.join(self.sources)})"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"sources": list(self.sources), "missing": self.missing}
        for m in self.modes:
            out[m.mode.value] = {"joules_per_trial": dict(m.joules), "joules_per_sample": m.per_sample}
        return out


def _own_samples(t: TrialResult) -> int:
    if t.rank_samples:
        return t.rank_samples[0]
    return t.rank_summary.own_samples if t.rank_summary is not None else t.samples


def energy_report(results: RunResults, modes: Sequence[Mode]) -> Optional[EnergyReport]:
    """Joules per trial and per sample from the trials' system metrics (None: no trial was sampled)."""
    sampled = [t.system for m in modes for t in results.measured(m) if t.system is not None]
    if not sampled:
        return None
    found: List[ModeEnergy] = []
    sources: List[str] = []
    for mode in modes:
        systems = [(t, t.system) for t in results.measured(mode) if t.system is not None]
        keys = [k for k, _ in ENERGY_KEYS if systems and all(getattr(s, k) is not None for _, s in systems)]
        if not keys:
            continue
        joules = {k: sum(float(getattr(s, k)) for _, s in systems) / len(systems) for k in keys}
        samples = sum(_own_samples(t) for t, _ in systems)
        total = sum(float(getattr(s, k)) for _, s in systems for k in keys)
        found.append(ModeEnergy(mode, joules, total / samples if samples > 0 else None))
        for _, s in systems:
            for text in (s.gpu_energy_source, s.cpu_energy_source):
                if text is not None and text not in sources:
                    sources.append(text)
    said = next((s.energy_missing for s in sampled if s.energy_missing), None)
    missing = (
        None
        if found
        else said
        or (
            "no energy reading in every counted trial of a mode (a counter that "
            "failed part-way, or a result from a benchy without energy readings)"
        )
    )
    return EnergyReport(tuple(found), tuple(sources), missing)
