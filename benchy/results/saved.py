"""A saved run read back (:func:`benchy.load`): what ``compare``, ``report`` and ``plot`` work from (pure, no torch).

A :class:`Run` keeps the upgraded document, keys the model does not declare included, so that writing
``run.document`` and loading it again gives an equal :class:`Run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ..core.schedule import Mode
from ..core.stats import Estimate
from .model import Document


@dataclass(frozen=True)
class ModeRun:
    """One mode of a saved run: its counted trials and their summary.

    ``trial_times`` and ``trial_samples`` are empty for a run parsed from a log (a log has the
    throughputs only); ``n`` is None when the log had summary lines but no trial lines.
    """

    mode: Mode
    trial_throughputs: Tuple[float, ...]
    trial_times: Tuple[float, ...]
    trial_samples: Tuple[int, ...]
    nbatches: Tuple[int, ...]
    mean: Optional[float]
    interval: Optional[float]
    n: Optional[int]
    confidence: float
    warmup_throughputs: Tuple[float, ...] = ()
    # Per-step throughputs of each counted trial; None when the file has none (checkpoint, log).
    rates: Optional[Tuple[Sequence[Optional[float]], ...]] = None
    # FULL only: the share of time spent waiting for the loader (fraction) and its half-width.
    data_wait: Optional[float] = None
    data_wait_interval: Optional[float] = None

    @property
    def estimate(self) -> Estimate:
        return Estimate(self.mean, self.interval, self.n or 0, self.confidence)

    @property
    def mean_trial_time(self) -> Optional[float]:
        return sum(self.trial_times) / len(self.trial_times) if self.trial_times else None

    def samples_per_rank_batch(self, nranks: int) -> Optional[float]:
        """Samples one rank handles per batch (the per-rank batch size), when the file says."""
        if not self.trial_samples or not self.nbatches or nranks < 1:
            return None
        batches = sum(self.nbatches)
        return sum(self.trial_samples) / nranks / batches if batches else None


@dataclass(frozen=True)
class Run:
    """A saved run: its name, size, verdict and per-mode results.

    ``schema_version`` is the version the file was written with (the document itself has been
    upgraded to the current one); ``source`` is ``"run"`` for a JSON benchy wrote during a run
    and ``"log"`` for one ``benchy parse`` made from ``BENCHY::`` lines.
    """

    name: str
    nranks: int
    complete: bool
    source: str
    schema_version: int
    verdict: Optional[str]
    summary: Tuple[str, ...]
    modes: Mapping[Mode, ModeRun]
    path: Optional[str] = field(default=None, compare=False)
    document: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    model: Document = field(default_factory=lambda: Document(schema_version=0, run_name=""), compare=False, repr=False)

    def mode(self, mode: Mode) -> Optional[ModeRun]:
        return self.modes.get(mode)

    def row(self) -> Dict[str, Any]:
        """The run as the commands' JSON names it (``benchy summary --format json``, each side of ``benchy compare``)."""
        return {
            "run_name": self.name,
            "path": self.path,
            "nranks": self.nranks,
            "complete": self.complete,
            "source": self.source,
            "schema_version": self.schema_version,
        }

    @property
    def steps_dir(self) -> Optional[str]:
        """The directory of per-step files, as written (relative to the JSON's directory)."""
        return self.model.steps_dir

    @property
    def label(self) -> str:
        """How tables name the run: its name, else its file."""
        return self.name or (self.path or "?")
