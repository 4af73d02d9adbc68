"""Loader sweep: the settings to try, and what their IO trials say (pure, no torch).

The SC21 tutorial tunes ``num_workers`` by rerunning the script and reading off IO. A sweep
does it in one run: before the schedule, each setting of the ``sweep`` section (the product
of its keys; keys left out keep the loader's own value) runs IO warm-ups and trials on the
same dataset, sampler and collate function. Settings are ordered by cost (workers first,
then pinned memory, then prefetching), so "the smallest setting within 5 % of the best" and
"the cheapest setting that feeds the step" are well defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, List, Optional, Sequence

from .claims import FEEDS, Feed
from .config import AUTO, SweepConfig
from .record import Count, Record
from .results import TrialResult
from .stats import Estimate, estimate

DEFAULT_PREFETCH = 2  # DataLoader's prefetch_factor when workers are given none


def queue_depth(num_workers: int, prefetch_factor: Optional[int]) -> int:
    """Batches a DataLoader's workers hold ready: ``num_workers x prefetch_factor`` (its default 2
    when not given; 0 without workers)."""
    if num_workers <= 0:
        return 0
    return num_workers * (prefetch_factor if prefetch_factor is not None and prefetch_factor > 0 else DEFAULT_PREFETCH)


NEAR_BEST = 0.05  # "within 5 % of the best"


class Setting(Record, frozen=True, order=True):
    """One combination of loader settings; ordered by cost."""

    what: ClassVar[str] = "a loader setting"
    plural: ClassVar[str] = "loader settings"
    num_workers: Count
    pin_memory: bool
    prefetch_factor: Optional[Count] = None  # None with 0 workers (no prefetching without workers)

    def words(self) -> str:
        """``num_workers=4, pin_memory=True, prefetch_factor=2``."""
        parts = [f"num_workers={self.num_workers}", f"pin_memory={self.pin_memory}"]
        if self.prefetch_factor is not None:
            parts.append(f"prefetch_factor={self.prefetch_factor}")
        return ", ".join(parts)


def auto_workers(cores: int) -> List[int]:
    """0, 1, 2, 4 ... up to ``cores`` (and ``cores`` itself)."""
    out, k = [0], 1
    while k <= cores:
        out.append(k)
        k *= 2
    if cores >= 1 and cores not in out:
        out.append(cores)
    return out


def expand(config: SweepConfig, own: Setting, cores: int) -> List[Setting]:
    """Every setting to try, cheapest first, without duplicates."""
    given = config.num_workers
    workers = auto_workers(cores) if given == AUTO else [int(w) for w in given] or [own.num_workers]
    pins = list(config.pin_memory or [own.pin_memory])
    default_prefetch = own.prefetch_factor if own.prefetch_factor is not None else DEFAULT_PREFETCH
    prefetches = list(config.prefetch_factor or [default_prefetch])
    found = {Setting(w, p, f if w > 0 else None) for w in workers for p in pins for f in prefetches}
    return sorted(found, key=lambda s: (s.num_workers, s.pin_memory, s.prefetch_factor or 0))


@dataclass
class SettingResult:
    """One setting's IO trials (this rank's own), or why it could not run."""

    setting: Setting
    trials: List[TrialResult] = field(default_factory=list)
    warmups: List[TrialResult] = field(default_factory=list)
    error: Optional[str] = None
    memory: Optional[int] = None  # its workers' own memory (unique set sizes summed), bytes; None: unknown
    over_cap: bool = False  # its workers did not fit the memory cap (see memory_cap): never recommended

    @property
    def estimate(self) -> Estimate:
        return estimate([t.throughput for t in self.trials])


ROOM_SHARE = 0.1  # the training process keeps at least this share of the machine's memory


def memory_cap(available: int, total: int, trainer_rss: int) -> int:
    """Bytes the loader's workers may take: the memory available at the sweep's start less room for the
    training process to grow (as much again as it holds now, and at least :data:`ROOM_SHARE` of the
    machine's memory: its first steps allocate activations, gradients and optimizer state)."""
    return max(0, available - max(trainer_rss, int(ROOM_SHARE * total)))


def apply_cap(results: Sequence[SettingResult], cap: int) -> None:
    """Mark the settings whose workers' measured memory exceeds ``cap``."""
    for r in results:
        r.over_cap = r.memory is not None and r.memory > cap


def _measured(results: Sequence[SettingResult]) -> List[SettingResult]:
    """The settings that ran, measured something and fit the memory cap (the candidates)."""
    return [r for r in results if r.error is None and r.estimate.mean is not None and not r.over_cap]


def best(results: Sequence[SettingResult]) -> Optional[SettingResult]:
    measured = _measured(results)
    return max(measured, key=lambda r: r.estimate.mean or 0.0) if measured else None


def smallest_within(results: Sequence[SettingResult], share: float = NEAR_BEST) -> Optional[SettingResult]:
    """The cheapest setting whose mean is within ``share`` of the best mean."""
    top = best(results)
    if top is None or top.estimate.mean is None:
        return None
    floor = (1.0 - share) * top.estimate.mean
    return min((r for r in _measured(results) if (r.estimate.mean or 0.0) >= floor), key=lambda r: r.setting)


def cheapest_enough(results: Sequence[SettingResult], synthetic: float, factor: float = FEEDS) -> Optional[SettingResult]:
    """The cheapest setting whose IO is at least ``factor`` x SYNTHETIC, or None."""
    enough = [r for r in _measured(results) if (r.estimate.mean or 0.0) >= factor * synthetic]
    return min(enough, key=lambda r: r.setting) if enough else None


def feed(results: Sequence[SettingResult], synthetic: Optional[float]) -> Optional[Feed]:
    """For the verdict, once SYNTHETIC has run: which swept loader setting feeds the step (IO at least :data:`FEEDS`
    x SYNTHETIC), or, none doing, the best."""
    if synthetic is None or not _measured(results):
        return None
    return Feed(cheapest_enough(results, synthetic), best(results), synthetic)
