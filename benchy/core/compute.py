"""What a training step costs: FLOPs and model FLOPs utilization, tokens and padding, energy (pure, no torch).

The measuring side hands over values, kept in the result model (:mod:`benchy.core.results`): a
:class:`~benchy.core.results.FlopCount` of one SYNTHETIC step (torch's ``FlopCounterMode``, see
:mod:`benchy.measure.flops`), a :class:`~benchy.core.results.TokenCount` per trial (see
:mod:`benchy.measure.counting`) and the energy counters' joules in each trial's system metrics
(see :mod:`benchy.measure.system`). This module turns them, with the trials' throughputs, into
the COMPUTE, TOKENS and ENERGY readings: achieved FLOP/s per mode, MFU against a peak that is
always named next to it (:mod:`benchy.core.peaks`), tokens per second and the padding share per mode, joules per
sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Dict, List, Mapping, Optional, Sequence, Tuple

import msgspec
from msgspec import Meta

from .peaks import PeakConfig, dtype_key, known_accelerator
from .record import Count, Number, Record
from .results import FlopCount, RunResults, TrialResult
from .schedule import Mode
from .stats import estimate
from .words import Worded, flops_rate

# Padding above this share of the token positions is named in the verdict.
PADDING_SHARE = 0.10

# MFU at or above this: the step is near what the accelerator does.
NEAR_PEAK = 0.5


# --- the count and the peak -------------------------------------------------------------------------


@dataclass(frozen=True)
class Peak:
    """The peak a device could do the step's FLOPs at (FLOP/s), and where each dtype's figure comes from: (dtype,
    FLOP/s, source), one part a dtype, weighed by the time each takes."""

    flops: float
    parts: Tuple[Tuple[str, float, str], ...]

    def words(self) -> str:
        """Where the peak's figures come from: one source, or a mix weighed by the time each dtype takes."""
        if len(self.parts) == 1:
            key, _, where = self.parts[0]
            return f"{key}: {where}"
        return "a mix, by the time each takes: " + "; ".join(f"{k} {flops_rate(f)}: {w}" for k, f, w in self.parts)


@dataclass(frozen=True)
class NoPeak:
    """Why there is no peak: ``no-flops`` (nothing counted), ``unknown-device`` (``device``; ``cpu``: a CPU) or
    ``no-dtype`` (the table's ``accelerator`` has no ``dtype`` figure)."""

    kind: str
    device: str = ""
    cpu: bool = False
    dtype: str = ""
    accelerator: str = ""

    def words(self) -> str:
        """Why MFU is not computed."""
        if self.kind == "no-flops":
            return "no FLOPs counted"
        if self.kind == "no-dtype":
            return (
                f"the peak table has no {self.dtype} figure for {self.accelerator}: set global.peak_flops.{self.dtype} "
                f"(FLOP/s) to get MFU"
            )
        cpu = " (a CPU's peak depends on its cores, clock and vector units)" if self.cpu else ""
        return f"no peak is known for {self.device}{cpu}: set global.peak_flops (FLOP/s) to get MFU"


def peak_for(count: FlopCount, configured: PeakConfig) -> Tuple[Optional[Peak], Optional[NoPeak]]:
    """The peak for ``count``'s mix of dtypes on its device, or why there is none.

    A mix of dtypes is weighed as the time the device would take at its peaks: ``total / sum(flops_d
    / peak_d)``. float32 counts at the TF32 peak where torch lets matmuls and convolutions use TF32
    (the count says ``tf32`` for those). ``configured`` (``global.peak_flops``) wins: a single figure
    for every dtype, or per dtype
    (a dtype it leaves out falls back on the table)."""
    if count.total <= 0:
        return None, NoPeak("no-flops")
    row = known_accelerator(count.device) if count.device_type != "cpu" else None
    seconds = 0.0
    parts: List[Tuple[str, float, str]] = []
    for dtype, flops in sorted(count.by_dtype.items(), key=lambda kv: -kv[1]):
        key = dtype_key(dtype)
        if key == "tf32" and isinstance(configured, Mapping) and "tf32" not in configured and "float32" in configured:
            key = "float32"  # a configured float32 peak covers the float32 matmuls that ran as TF32
        if isinstance(configured, (int, float)):
            figure, where = float(configured), "global.peak_flops"
        elif isinstance(configured, Mapping) and key in configured:
            figure, where = float(configured[key]), f"global.peak_flops.{key}"
        elif row is not None and key in row.peaks:
            figure, where = row.peaks[key], f"{row.name}, {row.source}"
        elif row is None:
            return None, NoPeak("unknown-device", count.device or count.device_type, cpu=count.device_type == "cpu")
        else:
            return None, NoPeak("no-dtype", dtype=key, accelerator=row.name)
        seconds += flops / figure
        parts.append((key, figure, where))
    return (None, NoPeak("no-flops")) if seconds <= 0 else (Peak(count.total / seconds, tuple(parts)), None)


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
    no_peak: Optional[NoPeak]
    modes: Tuple[ModeFlops, ...]

    @property
    def per_sample(self) -> Optional[float]:
        return self.count.total / self.count.samples if self.count.samples > 0 else None

    def mfu(self, mode: Mode) -> Optional[float]:
        found = next((m for m in self.modes if m.mode is mode), None)
        return None if found is None else found.mfu


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


def near_peak(report: ComputeReport) -> Optional[bool]:
    """Whether the step runs near the accelerator's peak (MFU at least :data:`NEAR_PEAK`); None: no MFU."""
    mfu = report.mfu(Mode.SYNTHETIC)
    return None if mfu is None or report.peak is None else mfu >= NEAR_PEAK


def mostly_float32(report: ComputeReport) -> bool:
    """Most of the step's FLOPs ran in float32 on an accelerator (far below its bfloat16 peak)."""
    c = report.count
    float32 = sum(v for k, v in c.by_dtype.items() if dtype_key(k) == "float32")
    return c.device_type != "cpu" and float32 > 0.5 * c.total


# --- tokens -----------------------------------------------------------------------------------------


class ModeTokens(Record, frozen=True, kw_only=True):
    """One mode's non-padding tokens per second (all ranks) over the counted trials, the share of the positions that
    are padding over their sampled batches, and the attention mask summed on 1 in ``every`` batches."""

    tokens_per_s: Optional[Number] = None
    interval: Optional[Number] = None
    n: Optional[Count] = None
    padding: Optional[Number] = None
    every: Count = msgspec.field(default=1, name="mask_every")


class TokenReport(Record, frozen=True, kw_only=True):
    """The TOKENS reading: what was counted, in words, and each mode's tokens (None: none counted)."""

    source: Optional[str] = None
    IO: Optional[ModeTokens] = None
    SYNTHETIC: Optional[ModeTokens] = None
    FULL: Optional[ModeTokens] = None

    @property
    def modes(self) -> List[Tuple[Mode, ModeTokens]]:
        return [(mode, found) for mode in Mode if (found := getattr(self, mode.value)) is not None]


def token_report(results: RunResults, modes: Sequence[Mode], source: str) -> Optional[TokenReport]:
    """Tokens per second and padding per mode, from the trials' :class:`TokenCount` (None: none counted)."""
    found: Dict[str, ModeTokens] = {}
    for mode in modes:
        trials = [t for t in results.measured(mode) if t.tokens is not None]
        if not trials:
            continue
        rates = [t.throughput * per for t in trials if t.tokens is not None and (per := t.tokens.real_per_sample) is not None]
        sampled = sum(t.tokens.sampled_tokens for t in trials if t.tokens is not None)
        real = sum(t.tokens.real for t in trials if t.tokens is not None)
        every = max(t.tokens.every for t in trials if t.tokens is not None)
        padding = 1.0 - real / sampled if sampled > 0 else None
        est = estimate(rates)
        found[mode.value] = ModeTokens(tokens_per_s=est.mean, interval=est.half_width, n=est.n, padding=padding, every=every)
    return TokenReport(source=source, **found) if found else None


def padding_waste(report: TokenReport) -> Optional[Tuple[Mode, float]]:
    """The mode whose padding passes :data:`PADDING_SHARE` of the token positions, the worst (SYNTHETIC's one cached
    batch only where no other mode has a share), and its share (None: none does)."""
    padded: List[Tuple[Mode, float]] = [(mode, m.padding) for mode, m in report.modes if m.padding is not None]
    worst = max([p for p in padded if p[0] is not Mode.SYNTHETIC] or padded, key=lambda p: p[1], default=None)
    return None if worst is None or worst[1] <= PADDING_SHARE else worst


# --- energy -----------------------------------------------------------------------------------------

ENERGY_KEYS = (("gpu_energy_j", "GPU"), ("cpu_energy_j", "CPU package"))


class ModeEnergy(Record, frozen=True, kw_only=True):
    """One mode's mean joules a trial per source (``gpu_energy_j`` ...), and all sources' joules a sample of this
    rank's."""

    joules: Annotated[Dict[str, Number], Meta(extra={"keys": "energy figures"})] = msgspec.field(
        default_factory=dict, name="joules_per_trial"
    )
    per_sample: Optional[Number] = msgspec.field(default=None, name="joules_per_sample")


class NoEnergy(Worded):
    """Why there is no energy figure, where the sampler did not say."""

    PARTIAL = (
        "partial",
        "no energy reading in every counted trial of a mode (a counter that failed part-way, or a result from a "
        "benchy without energy readings)",
    )


class EnergyReport(Record, frozen=True, kw_only=True):
    """The ENERGY reading: each mode's joules, this rank's devices; how each figure was read (the sampler's words), or
    why there is none (None: there is one)."""

    sources: List[str] = msgspec.field(default_factory=list)
    missing: Optional[str] = None
    IO: Optional[ModeEnergy] = None
    SYNTHETIC: Optional[ModeEnergy] = None
    FULL: Optional[ModeEnergy] = None

    @property
    def modes(self) -> List[Tuple[Mode, ModeEnergy]]:
        return [(mode, found) for mode in Mode if (found := getattr(self, mode.value)) is not None]


def _own_samples(t: TrialResult) -> int:
    return t.rank_samples[0] if t.rank_samples else (t.rank_summary.own_samples if t.rank_summary is not None else t.samples)


def energy_report(results: RunResults, modes: Sequence[Mode]) -> Optional[EnergyReport]:
    """Joules per trial and per sample from the trials' system metrics (None: no trial was sampled)."""
    sampled = [t.system for m in modes for t in results.measured(m) if t.system is not None]
    if not sampled:
        return None
    found: Dict[str, ModeEnergy] = {}
    sources: List[str] = []
    for mode in modes:
        systems = [(t, t.system) for t in results.measured(mode) if t.system is not None]
        keys = [k for k, _ in ENERGY_KEYS if systems and all(getattr(s, k) is not None for _, s in systems)]
        if not keys:
            continue
        joules = {k: sum(float(getattr(s, k)) for _, s in systems) / len(systems) for k in keys}
        samples = sum(_own_samples(t) for t, _ in systems)
        total = sum(float(getattr(s, k)) for _, s in systems for k in keys)
        found[mode.value] = ModeEnergy(joules=joules, per_sample=total / samples if samples > 0 else None)
        sources += [text for _, s in systems for text in (s.gpu_energy_source, s.cpu_energy_source) if text is not None]
    said = next((s.energy_missing for s in sampled if s.energy_missing), None)
    return EnergyReport(sources=list(dict.fromkeys(sources)), missing=None if found else said or NoEnergy.PARTIAL.words, **found)
