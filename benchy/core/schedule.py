"""The plan of a benchmark, as data (pure, no torch): the trial kinds, what each mode may run, and the windows'
lengths (docs/guide/schedule.md); :mod:`benchy.core.machine` walks it.

Windows alternate S F F S S F F S ..., warm-ups included, so that a step time that still drifts is charged to both
modes alike. IO trials and FULL windows are whole *rounds* of the loader (``cycle``: its workers hand out batches in
turn, so a stretch of whole rounds takes a round's time wherever it starts).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import Dict, Optional, Tuple

from .config import AUTO, Config
from .record import Mode

# ntrials auto: the fewest trials a mode gets (an interval needs two).
MIN_AUTO_TRIALS = 2
# ntrials auto: the first window of each mode (warm-up included) and IO's first trial, in steps or batches;
# each further one GROWTH times the one before, up to nbatches.
FIRST_WINDOW = 8
GROWTH = 1.25
# The shortest window the schedule shrinks one to, where the loop's known length leaves no room for more.
MIN_WINDOW = 5
# IO trials and FULL windows: at least this many of the loader's rounds (its workers' turns), whole.
FIRST_ROUNDS = 3
# global.auto_figure_precision's default: a decided verdict does not stop measuring while a mode's 95 % interval is
# wider than this share of its mean (up to auto_max_trials): the summary's figures are the user's to act on too.
FIGURE_PRECISION = 0.05


class Extra(str, enum.Enum):
    """What runs after the verdict (:func:`benchy.core.machine.extras_order` orders them); the value names it in the
    JSON and the output."""

    FLOPS = "FLOPS"
    STAGES = "STAGES"
    H2D = "H2D"
    PARTS = "PARTS"
    CONTENTION = "CONTENTION"
    EMULATED = "EMULATED"

    @property
    def in_loop(self) -> bool:
        """It takes steps of the training loop (else it runs on benchy's own pass, between two steps)."""
        return self in (Extra.FLOPS, Extra.PARTS, Extra.CONTENTION)


@dataclass(frozen=True)
class TrialSpec:
    """One planned trial. ``index`` counts from 1 within (mode or variant, warm-up or not)."""

    mode: Mode
    index: int
    warmup: bool
    nbatches: int
    variant: str = ""  # "H2D", "STAGES", "EMULATED", "PARTS", "CONTENTION", "SWEEP<j>": a trial outside the modes
    # profiler: torch: the one extra warm-up of its kind, run under torch.profiler after the others
    # (a warm-up: never counted; labelled as one, so every reader of the output knows it).
    profiled: bool = False
    # The loader's round in batches: the trial's periods are counted in whole rounds (a stretch cut short, by an
    # epoch's or a pass's end, leaves out the part of a round it holds), so where it starts cannot bias it.
    cycle: int = 1

    @property
    def label(self) -> str:
        """``FULL_2``, ``FULL_WARMUP_1`` or ``H2D_1`` (a variant): the tag used in the output lines (never
        ``IO_...`` for a variant, so that a pattern for IO lines does not catch it)."""
        middle = "_WARMUP_" if self.warmup else "_"
        return f"{self.variant or self.mode.value}{middle}{self.index}"


@dataclass(frozen=True)
class ModePlan:
    """One mode's share of the plan; ``None`` counts are ``auto``, with their bounds."""

    mode: Mode
    nbatches: int
    nwarmup: Optional[int]
    ntrials: Optional[int]
    max_warmup: int
    max_trials: int
    profiled: bool = False  # one extra warm-up, under torch.profiler, after the warm-ups (profiler: torch)
    first: int = 0  # 0: nbatches
    growth: float = 1.0
    cycle: int = 1  # the loader's round in batches (IO and FULL; 1 for SYNTHETIC): each trial is whole rounds

    def length(self, k: int) -> int:
        """The ``k``-th window (or IO trial) of the mode, warm-ups included, from 0; in whole rounds, at least
        :data:`FIRST_ROUNDS` of them (past ``nbatches`` only where that is shorter)."""
        c = max(1, self.cycle)
        longest = self.nbatches if c == 1 else max(FIRST_ROUNDS * c, c * max(1, round(self.nbatches / c)))
        first = min(longest, self.first or longest)
        if c > 1:
            first = min(longest, max(FIRST_ROUNDS * c, first))
        grown = math.ceil(first * max(1.0, self.growth) ** k - 1e-9)
        return min(longest, -(-grown // c) * c)

    @property
    def most_warmups(self) -> int:
        return self.max_warmup if self.nwarmup is None else self.nwarmup

    @property
    def most_trials(self) -> int:
        return self.max_trials if self.ntrials is None else self.ntrials

    @property
    def fewest_warmups(self) -> int:
        return 1 if self.nwarmup is None else self.nwarmup

    @property
    def fewest_trials(self) -> int:
        return min(MIN_AUTO_TRIALS, self.max_trials) if self.ntrials is None else self.ntrials


def abba_first(position: int) -> bool:
    """True where the pattern a b b a a b b a ... has ``a`` at ``position`` (from 0)."""
    return (position // 2 + position) % 2 == 0


@dataclass(frozen=True)
class Schedule:
    """The plan: modes that run, their counts or ``auto`` bounds and windows, the precision an ``auto`` mode
    stops at, the extras enabled, and how many steps of the loop it may take in all (``horizon``: known ahead
    for a Hugging Face Trainer, a Lightning Trainer or ``global.loop_steps``; None: unknown)."""

    plans: Tuple[ModePlan, ...]
    precision: float = 0.02
    extras: Tuple[Extra, ...] = ()
    horizon: Optional[int] = None
    figure_precision: float = FIGURE_PRECISION

    @classmethod
    def from_config(cls, config: Config) -> Schedule:
        g = config.general
        plans = []
        profiled = g.capture_kinds if g.profiler == "torch" and g.profiler_mode != "none" else ()
        for mode in Mode:
            section = config.mode(mode.value)
            if not section.run_benchmark:
                continue
            auto = section.ntrials == AUTO
            plans.append(
                ModePlan(
                    mode,
                    section.nbatches,
                    None if section.nwarmup == AUTO else int(section.nwarmup),
                    None if auto else int(section.ntrials),
                    g.auto_max_warmup,
                    g.auto_max_trials,
                    mode.value in profiled,
                    first=min(FIRST_WINDOW, section.nbatches) if auto else section.nbatches,
                    growth=GROWTH if auto else 1.0,
                )
            )
        modes = {p.mode for p in plans}
        synthetic, io = Mode.SYNTHETIC in modes, Mode.IO in modes
        enabled = {
            Extra.FLOPS: g.flops and synthetic and config.synthetic.ntrials != 0,
            Extra.STAGES: g.stages and io,
            Extra.H2D: g.io_h2d and io,
            Extra.PARTS: g.whatif and synthetic,
            Extra.CONTENTION: g.whatif and synthetic,
            Extra.EMULATED: g.whatif and synthetic and io,
        }
        extras = tuple(e for e in Extra if enabled[e])
        horizon = g.loop_steps if isinstance(g.loop_steps, int) else None
        return cls(tuple(plans), float(g.auto_precision), extras, horizon, float(g.auto_figure_precision))

    def without_io(self) -> Schedule:
        """The plan without the IO trials and the extras that run on benchy's own passes."""
        own = (Extra.STAGES, Extra.H2D, Extra.EMULATED)
        plans = tuple(p for p in self.plans if p.mode is not Mode.IO)
        return replace(self, plans=plans, extras=tuple(e for e in self.extras if e not in own))

    def plan(self, mode: Mode) -> Optional[ModePlan]:
        return next((p for p in self.plans if p.mode is mode), None)

    @property
    def modes(self) -> Tuple[Mode, ...]:
        """Modes that run, in plan order (IO, SYNTHETIC, FULL)."""
        return tuple(p.mode for p in self.plans)

    @property
    def adaptive(self) -> bool:
        """True when some count is ``auto``."""
        return any(p.nwarmup is None or p.ntrials is None for p in self.plans)

    @property
    def stops_early(self) -> bool:
        """Some mode's trials are ``auto``: the schedule stops once the verdict is decided."""
        return any(p.ntrials is None for p in self.plans)

    @property
    def decision_confidence(self) -> float:
        """Confidence of the IO-vs-SYNTHETIC decision: 99 % when trials stop adaptively (looked at after every trial,
        each at 1 %: near 5 % over ten looks, Pocock's boundary)."""
        return 0.99 if self.stops_early else 0.95

    @property
    def window_plans(self) -> Tuple[ModePlan, ...]:
        return tuple(p for p in self.plans if p.mode is not Mode.IO)

    @property
    def windows_needed(self) -> int:
        """SYNTHETIC and FULL windows the schedule runs at the most (with ``auto`` counts, the bounds)."""
        return sum(p.most_warmups + int(p.profiled) + p.most_trials for p in self.window_plans)

    @property
    def windows_fewest(self) -> int:
        """The fewest windows it can take (``windows_needed`` when nothing is ``auto``)."""
        return sum(p.fewest_warmups + int(p.profiled) + p.fewest_trials for p in self.window_plans)

    @property
    def diagnostic_steps(self) -> int:
        """The steps of each diagnostic window (PARTS, CONTENTION): a mean needs few."""
        synthetic = self.plan(Mode.SYNTHETIC)
        return 0 if synthetic is None else max(MIN_WINDOW, synthetic.nbatches // 2)

    def with_nbatches(self, nbatches: int) -> Schedule:
        """This plan with every SYNTHETIC and FULL window at most ``nbatches`` long (IO as it is)."""
        plans = tuple(
            p if p.mode is Mode.IO else replace(p, nbatches=nbatches, first=min(p.first or p.nbatches, nbatches))
            for p in self.plans
        )
        return replace(self, plans=plans)

    def with_horizon(self, horizon: Optional[int]) -> Schedule:
        return replace(self, horizon=horizon)

    def with_cycle(self, cycle: int) -> Schedule:
        """This plan with IO trials and FULL windows in whole rounds of ``cycle`` batches (the loader's workers)."""
        cycle = max(1, int(cycle))
        return replace(self, plans=tuple(p if p.mode is Mode.SYNTHETIC else replace(p, cycle=cycle) for p in self.plans))

    @property
    def cycle(self) -> int:
        """The loader's round in batches (1: no rhythm to fit)."""
        return max((p.cycle for p in self.plans), default=1)

    def fingerprint(self) -> Dict[str, object]:
        """What every rank must agree on: each mode's counts and bounds (``IO.nbatches``, ...)."""
        out: Dict[str, object] = {
            "precision": self.precision,
            "figure_precision": self.figure_precision,
            "extras": ",".join(e.value for e in self.extras),
        }
        if self.plans:  # the bounds are global: every plan holds the same ones
            out["auto_max_trials"], out["auto_max_warmup"] = self.plans[0].max_trials, self.plans[0].max_warmup
        for mode in Mode:
            p = self.plan(mode)
            out[f"{mode.value}.run_benchmark"] = p is not None
            if p is not None:
                for key in ("nbatches", "ntrials", "nwarmup", "profiled", "cycle"):
                    value = getattr(p, key)
                    out[f"{mode.value}.{key}"] = AUTO if value is None else value
        return out
