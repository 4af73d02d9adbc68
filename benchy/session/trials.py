"""How one session runs its trials: the batch source, sample counting, the cached SYNTHETIC batch,
the device sync, the barrier and the system sampler around each trial's clock (glue, no hot loop).

:class:`TrialRunner` hands the session finished :class:`~benchy.core.results.TrialResult` values
(IO and side trials) or epoch-trial generators that settle their outcome once; it decides nothing
about the schedule, and prints only the periodic lines inside a trial (to the session's output).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Generator, Iterator, Optional, Tuple

from ..core.config import Config
from ..core.results import FlopCount, TrialResult
from ..core.schedule import Mode, TrialSpec
from ..measure.counting import TokenTally, describe_rule, make_counter
from ..measure.device import synchronizer
from ..measure.flops import StepCounter, with_counted_step
from ..measure.source import BatchSource, Source
from ..measure.stamps import Pauses, Series, fetches_ahead, stamp_buffer, without_first_period
from ..measure.system import NullSampler, SystemSampler, disturbed
from ..measure.trial import Reporter, Settle, full_trial, io_trial, synthetic_trial
from ..results import lines
from .console import Output

__all__ = ["TrialRunner"]

_NOTHING = object()


class TrialRunner:
    """The measuring side of a session: one batch source for the whole benchmark, the counting rule
    decided from the first batch, and what runs just before and after each trial's clock."""

    def __init__(self, config: Config, make_iterator: Callable[[], Iterator[Any]], fallback_batch_size: Optional[int],
                 clock: Callable[[], float], *, constant: Optional[int], queue_depth: int,
                 warn: Callable[[str], None]) -> None:
        general = config.general
        self.config = config
        self.clock = clock
        self.source = BatchSource(make_iterator, clock)
        self.sampler: Any = SystemSampler(general.system_metrics_hz, clock) if general.system_metrics else NullSampler()
        self.queue_depth = queue_depth  # batches a loader holds ready (workers x prefetch_factor)
        # Samples in every batch but a pass's last, when the loader guarantees it (see integrations.wrappers);
        # confirmed on the first batch, else None and every batch is counted.
        self.constant = constant
        self.counting = ""  # the counting rule, in words (for the JSON)
        self.ranges: Any = None  # NVTX ranges while a tool is attached (set when the benchmark starts)
        self.barrier: Optional[Callable[[str], None]] = None  # the ranks' barrier before each trial's clock
        self.lookahead: Optional[bool] = None  # the loop fetches one batch ahead (decided from SYNTHETIC)
        self.synthetic_samples: Optional[int] = None
        self._fallback = fallback_batch_size
        self._warn = warn
        self._counter: Optional[Callable[[Any], int]] = None
        self._synthetic_batch: Any = _NOTHING
        # count: tokens: the tokens of each trial's batches, added up by the counter itself.
        self.tokens: Optional[TokenTally] = None
        self._synthetic_tokens: Any = None
        # FLOPs: the first step of the first measured SYNTHETIC trial, counted and left out of it
        # (see measure.flops); once the loop is known to fetch one batch ahead or not.
        synthetic = config.synthetic
        self._flops_due = general.flops and synthetic.run_benchmark and synthetic.ntrials != 0
        self._step_counter: Optional[StepCounter] = None
        self.world = 1  # ranks (set when the benchmark starts)
        # The trial clock's readings plus this are Unix seconds: taken once, so the timeline's times
        # keep the clock's resolution and order (``time.time()`` may be stepped by NTP during a run).
        self.unix_offset = time.time() - clock()

    # --- counting and batches -----------------------------------------------------------------

    def counter(self) -> Callable[[Any], int]:
        """Sample counter specialised from the first batch, which is kept for the first trial."""
        if self._counter is None:
            batch = self.source.fetch()
            self.source.keep(batch)
            self._counter = make_counter(batch, self._fallback, self._warn)
            self.counting = describe_rule(batch, self._fallback)
            if self.constant is not None and self._counter(batch) != self.constant:
                self.constant = None  # the first batch says otherwise: count every batch
            g = self.config.general
            if g.count == "tokens":
                # Every batch goes through the tally (no inline count, no constant): it adds up the tokens.
                try:
                    self.tokens = TokenTally(self._counter, batch, g.token_key, g.mask_key)
                except TypeError as err:  # batches without token ids: samples are still counted
                    self._warn(f"{err}; tokens are not counted, samples are")
                else:
                    self._counter = self.tokens.count
                    self.constant = None
                    self.counting += f"; {self.tokens.source}"
            if self.constant is not None:
                self.counting += (f"; the batch sampler makes {self.constant} per batch, so only the last batch "
                                  f"of each pass is counted in the trials")
        return self._counter

    def synthetic(self) -> Any:
        """The one batch every SYNTHETIC warm-up and trial yields, fetched once."""
        if self._synthetic_batch is _NOTHING:
            self._synthetic_batch = self.source.fetch()
            self.synthetic_samples = self.counter()(self._synthetic_batch)
        return self._synthetic_batch

    def synthetic_tokens(self) -> Any:
        """The cached batch's tokens, counted in full once (None unless ``count: tokens``)."""
        if self.tokens is not None and self._synthetic_tokens is None and self._synthetic_batch is not _NOTHING:
            self._synthetic_tokens = self.tokens.exact(self._synthetic_batch, self.synthetic_samples or 0)
        return self._synthetic_tokens

    def _counts_flops(self, spec: TrialSpec) -> bool:
        """Whether this trial's first step is the one whose FLOPs are counted: the first measured SYNTHETIC
        trial once the loop is known to fetch ahead or not, with periods to spare (its first one, or
        two when the loop fetches ahead, are left out)."""
        counter = self._step_counter
        due = self._flops_due or (counter is not None and not counter.completed)  # a peek took the last one
        return (due and self.world == 1 and spec.mode is Mode.SYNTHETIC and not spec.warmup and self.lookahead is not None
                and spec.nbatches >= 3 + int(self.lookahead))

    def flops(self, final: bool) -> Optional[FlopCount]:
        """The counted step's FLOPs; None while it may still come (or ``flops: false``); at the end
        (``final``), why there are none."""
        counter = self._step_counter
        if counter is not None and (counter.completed or not final):
            return counter.count
        if counter is not None:
            return FlopCount(skipped="the loop left every counted step before asking for the next batch (a peek such "
                                     "as next(iter(loader)), or a break, during the first step of the SYNTHETIC "
                                     "trials)")
        g, synthetic = self.config.general, self.config.synthetic
        if not g.flops:
            return None
        if self.world > 1:
            return FlopCount(skipped=f"not counted with {self.world} ranks: a rank whose counted step ran a collective "
                                     f"(a DDP all-reduce) under torch's FlopCounterMode aborted at exit in about 1 "
                                     f"run of 15 on the CPU (gloo); run one process to count the step's FLOPs")
        if not (synthetic.run_benchmark and synthetic.ntrials != 0):
            return FlopCount(skipped="SYNTHETIC did not run: the FLOPs are counted on the first step of the first "
                                     "measured SYNTHETIC trial")
        if final:
            return FlopCount(skipped=f"no SYNTHETIC trial could spare a step to count: the count takes the first step "
                                     f"of the first measured SYNTHETIC trial after one that shows whether the loop "
                                     f"fetches a batch ahead, and needs synthetic.nbatches >= 3 (got "
                                     f"{synthetic.nbatches})")
        return None

    def drain(self) -> None:
        """Before a FULL or an IO trial: take the batches the loader's workers
        hold ready, untimed, so that the trial does not start with free batches (all workers are
        then busy on fresh ones, as in steady training when loading is the limit; when compute is
        the limit the queue refills within a step or two)."""
        if self.queue_depth <= 0:
            return
        self.source.drop_pending()
        for _ in range(self.queue_depth):
            self.source.fetch()

    def close(self) -> None:
        """The benchmark is over: the source lets go of its iterator and the cached batch is dropped."""
        self.source.close()
        self._synthetic_batch = _NOTHING

    # --- around the clock ---------------------------------------------------------------------

    def _begin(self, spec: TrialSpec, sync: Callable[[], None]) -> Callable[[], None]:
        """What runs just before a trial's clock starts: the device sync; with
        ``use_distributed_barrier`` and several ranks a barrier, so that all ranks start
        together; then the system-metrics sampler's baseline reading."""
        barrier, sampler = self.barrier, self.sampler

        tokens = self.tokens

        def begin() -> None:
            sync()
            if barrier is not None:
                barrier(f"{spec.label} (start barrier)")
            sampler.start()
            if tokens is not None:
                tokens.reset()

        return begin

    def _clock(self, sync: Callable[[], None]) -> Callable[[], float]:
        """The trial clock; with ``sync_every_step`` it waits for the device before each reading."""
        if not self.config.general.sync_every_step:
            return self.clock
        clock = self.clock

        def synced() -> float:
            sync()
            return clock()

        return synced

    def unix(self, reading: float) -> float:
        """A reading of the trial clock on the Unix time scale (``time.time()``'s), for the timeline."""
        return reading + self.unix_offset

    def with_system(self, result: TrialResult) -> TrialResult:
        """``result`` with its start on the Unix time scale and the system metrics sampled since its
        clock started (aggregates, and the readings for the timeline; none when off)."""
        started = None if result.started is None else self.unix(result.started)
        system = self.sampler.stop()
        if system is None:
            return dataclasses.replace(result, started=started)
        system["disturbed"] = disturbed(system, self.config.general.busy_machine_share)
        readings = self.sampler.readings()
        if readings is not None:
            readings["time"] += self.unix_offset
        return dataclasses.replace(result, system=system, started=started, readings=readings)

    def finish(self, result: TrialResult) -> TrialResult:
        """A scheduled trial's result with its system metrics and, with ``count: tokens``, its tokens."""
        result = self.with_system(result)
        counter = self._step_counter
        if counter is not None and counter.completed and counter.spec is result.spec and len(result.step_seconds) >= 2:
            result = without_first_period(result)  # the counted step's period: the counter's cost is not the step's
        if self.tokens is None:
            return result
        found = self.synthetic_tokens() if result.mode is Mode.SYNTHETIC else self.tokens.take()
        return dataclasses.replace(result, tokens=found)

    # --- trials -------------------------------------------------------------------------------

    def reporter(self, out: Output) -> Optional[Reporter]:
        """The periodic line every ``report_freq`` steps: throughput over the steps since the last
        one, written to ``out``; the line's own time is measured and taken out of the trial."""
        freq = self.config.general.report_freq
        if freq <= 0:
            return None
        clock = self.clock

        def report(spec: TrialSpec, i: int, stamps: Series, sizes: Series, pauses: Pauses) -> None:
            low = i - freq
            paused = 0.0
            for k, d in reversed(pauses):  # only the latest pauses can fall in [low, i)
                if k < low:
                    break
                paused += d
            taken = stamps.get(i)
            span = taken - stamps.get(low) - paused
            rate = sizes.total(low, i) / span if span > 0 else float("inf")
            out.line(lines.iteration(spec.label, i, spec.nbatches, rate))
            out.trial_progress(i, rate)
            pauses.append((i, clock() - taken))

        return report

    def io(self, spec: TrialSpec, out: Output, ranges: Any = None) -> TrialResult:
        """One scheduled IO trial, hidden from the loop (its system metrics are read by the caller);
        ``ranges``: the profiler's in place of the NVTX ones (the profiled warm-up)."""
        sync = synchronizer()
        return io_trial(spec, self.source, self.counter(), self._clock(sync), sync, self.reporter(out),
                        self.config.general.report_freq, self._begin(spec, sync), self.constant,
                        self.ranges if ranges is None else ranges)

    def side(self, spec: TrialSpec, source: Source, counter: Callable[[Any], int]) -> TrialResult:
        """One IO trial outside the schedule (IO_H2D, a sweep setting), with its system metrics."""
        sync = synchronizer()
        try:
            result = io_trial(spec, source, counter, self._clock(sync), sync, begin=self._begin(spec, sync))
        except BaseException:
            self.sampler.stop()
            raise
        return self.with_system(result)

    def epoch(self, spec: TrialSpec, settle: Settle, out: Output, ranges: Any = None
              ) -> Tuple[Generator[Any, None, None], Series]:
        """The generator the loop gets for an epoch trial, and its timestamps (to tell how far it went);
        ``ranges``: the profiler's in place of the NVTX ones (the profiled warm-up)."""
        ranges = self.ranges if ranges is None else ranges
        report = self.reporter(out)
        sync = synchronizer()
        stamps = stamp_buffer(spec.nbatches)
        counter, clock, begin = self.counter(), self._clock(sync), self._begin(spec, sync)
        freq = self.config.general.report_freq
        if spec.mode is Mode.SYNTHETIC:
            gen = synthetic_trial(spec, self.synthetic, counter, clock, sync, settle, report, freq, begin, stamps,
                                  ranges)
            if self._counts_flops(spec):
                self._flops_due = False
                self._step_counter = StepCounter(self.counter()(self.synthetic()), spec.label, spec)
                gen = with_counted_step(self._step_counter, gen, bool(self.lookahead))
        else:
            gen = full_trial(spec, self.source, counter, clock, sync, settle, report, freq, begin, stamps,
                             self.constant, ranges)
        return gen, stamps

    def lookahead_window(self, result: TrialResult) -> Tuple[TrialResult, bool]:
        """Leave out the first period of epoch trials when the loop fetches one batch ahead; also
        whether that was decided just now (to be said once).

        Decided once, from the first SYNTHETIC trial with three periods or more; FULL trials
        follow that decision (the same loop asks for their batches).
        """
        if result.spec.mode is Mode.IO:
            return result, False
        decided = False
        if self.lookahead is None and result.spec.mode is Mode.SYNTHETIC and len(result.step_seconds) >= 3:
            self.lookahead = fetches_ahead(result)
            decided = self.lookahead
        if self.lookahead and len(result.step_seconds) >= 2:
            return without_first_period(result), decided
        return result, decided
