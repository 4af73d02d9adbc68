"""Which trials run, and in which order (pure, no torch).

IO warm-ups and trials run first, on a pass of benchy's own, hidden inside the first ``iter()``.
After that the training loop's steps are cut into *windows*, one trial each, back to back: the
SYNTHETIC warm-ups, then the FULL warm-ups, then the measured SYNTHETIC and FULL trials
interleaved in the order S F F S S F F S ..., so that a step time that still drifts (slowly
warming caches, allocator, clocks) is charged to both modes alike: a drift that is linear in time
cancels exactly over each S F F S block. A window may begin anywhere in an epoch and may span
epochs; the loop's epochs and ``len()`` stay the loader's own (``benchy.measure.window``).

``ntrials: auto`` and ``nwarmup: auto`` make the schedule adaptive: the :class:`Schedule`
states the bounds (and the order the trials take), :class:`benchy.session.planner.Planner` decides
the next trial from the results so far.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from .config import AUTO, Config
from .diagnostics import DIAGNOSTIC_WINDOWS

__all__ = ["MIN_AUTO_TRIALS", "Mode", "ModePlan", "Schedule", "TrialSpec", "abba_first", "interleave"]

# ntrials auto: the fewest trials a mode gets (an interval needs two).
MIN_AUTO_TRIALS = 2


class Mode(str, enum.Enum):
    """A trial kind; the value is the name printed in output lines and JSON keys."""

    IO = "IO"
    SYNTHETIC = "SYNTHETIC"
    FULL = "FULL"


@dataclass(frozen=True)
class TrialSpec:
    """One planned trial. ``index`` counts from 1 within (mode, warm-up or not)."""

    mode: Mode
    index: int
    warmup: bool
    nbatches: int
    variant: str = ""  # "H2D": an IO trial that also copies each batch to the accelerator
    # profiler: torch: the one extra warm-up of its kind, run under torch.profiler after the others
    # (a warm-up: never counted; labelled as one, so every reader of the output knows it).
    profiled: bool = False

    @property
    def label(self) -> str:
        """``FULL_2``, ``FULL_WARMUP_1`` or ``H2D_1`` (an IO_H2D trial): the tag used in the output
        lines (never ``IO_...`` for a variant, so that a pattern for IO lines does not catch it)."""
        middle = "_WARMUP_" if self.warmup else "_"
        return f"{self.variant or self.mode.value}{middle}{self.index}"


@dataclass(frozen=True)
class ModePlan:
    """One mode's share of the schedule; ``None`` counts are ``auto``, with their bounds."""

    mode: Mode
    nbatches: int
    nwarmup: Optional[int]
    ntrials: Optional[int]
    max_warmup: int
    max_trials: int
    profiled: bool = False  # one extra warm-up, under torch.profiler, after the warm-ups (profiler: torch)

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

    def describe(self) -> str:
        warm = f"{self.nwarmup}" if self.nwarmup is not None else f"auto (1 to {self.max_warmup})"
        trials = f"{self.ntrials}" if self.ntrials is not None else f"auto ({self.fewest_trials} to {self.max_trials})"
        hidden = " on a pass of its own" if self.mode is Mode.IO else ""
        profiled = " + 1 profiled warm-up" if self.profiled else ""
        return f"{self.mode.value} {warm} warm-up{profiled} + {trials} x {self.nbatches} batches{hidden}"


def abba_first(position: int) -> bool:
    """True where the pattern a b b a a b b a ... has ``a`` at ``position`` (from 0)."""
    return (position // 2 + position) % 2 == 0


def interleave(first: List[TrialSpec], second: List[TrialSpec]) -> List[TrialSpec]:
    """``first`` and ``second`` in the order a b b a a b b a ..., the rest of the longer one last."""
    out: List[TrialSpec] = []
    a, b = list(first), list(second)
    position = 0
    while a or b:
        source = a if (abba_first(position) and a) or not b else b
        out.append(source.pop(0))
        position += 1
    return out


@dataclass(frozen=True)
class Schedule:
    """The plan: modes that run, their counts or ``auto`` bounds, and the trial order."""

    plans: Tuple[ModePlan, ...]
    precision: float = 0.02
    # The diagnostic windows after the last counted one (``core.diagnostics``: ``whatif``), each as long as a
    # SYNTHETIC window; never counted in a mode.
    diagnostics: Tuple[str, ...] = ()

    @property
    def diagnostic_steps(self) -> int:
        """The steps of each diagnostic window: half a SYNTHETIC trial, at least 5 (a mean needs few)."""
        synthetic = self.plan(Mode.SYNTHETIC)
        return 0 if synthetic is None else max(5, synthetic.nbatches // 2)

    @classmethod
    def from_config(cls, config: Config) -> Schedule:
        g = config.general
        plans = []
        profiled = g.capture_kinds if g.profiler == "torch" and g.profiler_mode != "none" else ()
        for mode in Mode:
            section = config.mode(mode.value)
            if not section.run_benchmark:
                continue
            plans.append(
                ModePlan(
                    mode,
                    section.nbatches,
                    None if section.nwarmup == AUTO else int(section.nwarmup),
                    None if section.ntrials == AUTO else int(section.ntrials),
                    g.auto_max_warmup,
                    g.auto_max_trials,
                    mode.value in profiled,
                )
            )
        synthetic = any(p.mode is Mode.SYNTHETIC for p in plans)
        diagnostics = DIAGNOSTIC_WINDOWS if g.whatif and synthetic else ()
        return cls(tuple(plans), float(g.auto_precision), diagnostics)

    def plan(self, mode: Mode) -> Optional[ModePlan]:
        for p in self.plans:
            if p.mode is mode:
                return p
        return None

    @property
    def modes(self) -> Tuple[Mode, ...]:
        """Modes that run, in schedule order (IO, SYNTHETIC, FULL)."""
        return tuple(p.mode for p in self.plans)

    @property
    def adaptive(self) -> bool:
        """True when some count is ``auto``: the order below is then the longest possible one."""
        return any(p.nwarmup is None or p.ntrials is None for p in self.plans)

    @property
    def decision_confidence(self) -> float:
        """Confidence of the IO-vs-SYNTHETIC decision: 99 % when trials stop adaptively.

        ``ntrials: auto`` looks at the decision after every trial and stops at the first
        decided look; testing each look at 1 % keeps the chance of a wrong decision over up
        to ten looks near 5 % (Pocock's boundary for 10 looks is 1.06 %).
        """
        return 0.99 if any(p.ntrials is None for p in self.plans) else 0.95

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

    def steps_needed(self, queue_depth: int = 0, epoch_length: Optional[int] = None, longest: bool = True) -> int:
        """The training loop's steps the windows take (``longest``: at the most), an estimate made before
        they run: each window's ``nbatches``; before each FULL window, ``queue_depth`` steps that take the
        batches the loader's workers hold ready (untimed); the two untimed steps around the FLOPs' count;
        the first period of the first epoch; the diagnostic windows at the end; and, with a loader of
        ``epoch_length`` batches, for each epoch a window runs into, its first and last periods (left out)
        and the steps that let a new pass's workers start (``queue_depth``)."""
        steps, fulls = 0, 0
        for p in self.window_plans:
            count = (p.most_warmups + p.most_trials if longest else p.fewest_warmups + p.fewest_trials) + int(p.profiled)
            steps += count * p.nbatches
            if p.mode is Mode.FULL:
                fulls = count
        if not steps:
            return 0
        steps += len(self.diagnostics) * self.diagnostic_steps
        steps += fulls * queue_depth + 2 + 1
        if epoch_length is not None and epoch_length > 0:
            useful = max(1, epoch_length - 2 - queue_depth)  # an epoch's steps a window can measure
            crossings = max(0, -(-steps // useful) - 1)
            steps += crossings * (2 + queue_depth)
        return steps

    @staticmethod
    def min_epoch_steps(queue_depth: int = 0) -> int:
        """The fewest steps an epoch of the loop must run for a window to measure a period in it: the period
        its end cuts is left out, and before it the epoch's first period (left out too), or, with workers, the
        ``queue_depth`` batches they hold ready and the one the epoch's first ask fetched, handed out untimed
        before a FULL stretch (a SYNTHETIC one waits as many steps for the new pass's workers)."""
        return queue_depth + 3

    def with_nbatches(self, nbatches: int) -> Schedule:
        """This schedule with every SYNTHETIC and FULL window ``nbatches`` long (IO on its own passes as it is)."""
        plans = tuple(p if p.mode is Mode.IO else replace(p, nbatches=nbatches) for p in self.plans)
        return replace(self, plans=plans)

    def nbatches_to_fit(
        self, steps: int, queue_depth: int = 0, epoch_length: Optional[int] = None, least: int = 5
    ) -> Optional[int]:
        """The longest windows, shorter than this schedule's and at least ``least`` steps, with which its windows
        take at most ``steps`` steps of the loop (:meth:`steps_needed`, at the most); None: none fits."""
        top = min((p.nbatches for p in self.window_plans), default=0) - 1

        def fits(n: int) -> bool:
            return self.with_nbatches(n).steps_needed(queue_depth, epoch_length) <= steps

        if top < least or not fits(least):
            return None
        low, high = least, top  # fits(low) holds; the answer is in [low, high]
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        return low

    @staticmethod
    def epochs_for(steps: int, epoch_length: Optional[int], start: int = 0) -> Optional[int]:
        """Epochs of ``epoch_length`` batches the loop runs to take ``steps`` steps from step ``start``
        of its first epoch (None: the loader has no length)."""
        if epoch_length is None or epoch_length <= 0:
            return None
        return max(1, -(-(steps + start) // epoch_length))

    def _specs(self, mode: Mode, longest: bool) -> Tuple[List[TrialSpec], List[TrialSpec]]:
        p = self.plan(mode)
        if p is None:
            return [], []
        nw = p.most_warmups if longest else p.fewest_warmups
        nt = p.most_trials if longest else p.fewest_trials
        profiled = [TrialSpec(mode, nw + 1, True, p.nbatches, profiled=True)] if p.profiled else []
        return (
            [TrialSpec(mode, k, True, p.nbatches) for k in range(1, nw + 1)] + profiled,
            [TrialSpec(mode, k, False, p.nbatches) for k in range(1, nt + 1)],
        )

    def order(self, longest: bool = True) -> Tuple[Tuple[TrialSpec, ...], Tuple[TrialSpec, ...]]:
        """(hidden IO trials, the windows in order) as they run with fixed counts.

        With ``auto`` counts, ``longest`` gives the order at the bounds, else at the fewest;
        IO trials beyond the fewest may also run hidden between later windows.
        """
        io_warm, io = self._specs(Mode.IO, longest)
        syn_warm, syn = self._specs(Mode.SYNTHETIC, longest)
        full_warm, full = self._specs(Mode.FULL, longest)
        return tuple(io_warm + io), tuple(syn_warm + full_warm + interleave(syn, full))

    @property
    def hidden(self) -> Tuple[TrialSpec, ...]:
        """The IO trials of the first ``iter()`` (fixed counts)."""
        return self.order()[0]

    @property
    def windows(self) -> Tuple[TrialSpec, ...]:
        """The SYNTHETIC and FULL windows, in order (fixed counts; with ``auto``, the longest order)."""
        return self.order()[1]

    def describe(self) -> str:
        """One line for the start-up message, e.g. ``IO 1 warm-up + 3 x 50 batches on a pass of its own; ...``."""
        text = "; ".join(p.describe() for p in self.plans)
        if self.diagnostics:
            text += (
                f"; then {' and '.join(self.diagnostics)} windows of {self.diagnostic_steps} steps each "
                f"(the step beside the loader's workers, the step's parts: diagnostic, not counted)"
            )
        return text

    def fingerprint(self) -> Dict[str, object]:
        """What every rank must agree on: each mode's counts and bounds (``IO.nbatches``, ...)."""
        out: Dict[str, object] = {"precision": self.precision}
        if self.plans:  # the bounds are global: every plan holds the same ones
            out["auto_max_trials"], out["auto_max_warmup"] = self.plans[0].max_trials, self.plans[0].max_warmup
        for mode in Mode:
            p = self.plan(mode)
            out[f"{mode.value}.run_benchmark"] = p is not None
            if p is not None:
                out[f"{mode.value}.nbatches"] = p.nbatches
                out[f"{mode.value}.ntrials"] = AUTO if p.ntrials is None else p.ntrials
                out[f"{mode.value}.nwarmup"] = AUTO if p.nwarmup is None else p.nwarmup
                out[f"{mode.value}.profiled"] = p.profiled
        return out

    def to_dict(self) -> Dict[str, object]:
        return {
            "adaptive": self.adaptive,
            "precision": self.precision,
            "windows_needed": self.windows_needed,
            "windows_fewest": self.windows_fewest,
        }
