"""How one session measures: sample counting, the cached SYNTHETIC batch, benchy's own passes for the
IO trials (the user's random streams kept through them), the windows' arguments, and the device
sync, the barrier and the system sampler around each clock (glue, no hot loop).

:class:`TrialRunner` hands the session finished IO :class:`~benchy.core.results.TrialResult`
values and :class:`~benchy.measure.window.WindowRun` values for the SYNTHETIC and FULL windows that
the epoch loop fills; it decides nothing about the schedule, and prints only the periodic lines
inside a trial (to the session's output).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable, Iterator, List, Optional

import msgspec

from ..core.config import Config
from ..core.events import CounterNote, Event, TokensNotCounted
from ..core.outcomes import Reason, Why
from ..core.results import FlopCount, RunResults, TrialResult
from ..core.schedule import Mode, TrialSpec
from ..core.startup import Startup, startup
from ..measure.counting import TokenTally, describe_rule, make_counter
from ..measure.device import synchronizer
from ..measure.flops import StepCounter
from ..measure.source import NO_BATCH, BatchSource
from ..measure.stamps import Counts, Pauses, Stamps
from ..measure.system import NullSampler, SystemSampler, disturbed
from ..measure.trial import IOArgs, io_trial
from ..measure.window import WindowArgs, WindowRun
from ..results import lines
from .console import Output

NOTHING: Any = object()  # no batch yet


class OwnPasses:
    """benchy's own passes over the loader (the IO trials), apart from the loop's. With persistent workers the
    loop's one iterator must not be reset: benchy's passes get one of their own (``make``), reset for each further
    pass (``again``) and shut down at ``close()``."""

    def __init__(
        self,
        make: Callable[[], Iterator[Any]],
        again: Optional[Callable[[Iterator[Any]], None]] = None,
        shutdown: Optional[Callable[[Iterator[Any]], None]] = None,
    ) -> None:
        self._make, self._again, self._shutdown = make, again, shutdown
        self._iterator: Optional[Iterator[Any]] = None

    def new(self) -> Iterator[Any]:
        if self._iterator is not None and self._again is not None:
            self._again(self._iterator)
            return self._iterator
        self._iterator = iter(self._make())
        return self._iterator

    def fresh(self) -> Iterator[Any]:
        """A pass of its own that this object does not keep (the contention window's, in a forked process)."""
        return iter(self._make())

    def close(self) -> None:
        found, self._iterator = self._iterator, None
        if found is not None and self._shutdown is not None:
            self._shutdown(found)


class TrialRunner:
    """The measuring side of a session: the counting rule decided from the first batch, benchy's own
    passes for IO, and what runs just before and after each clock."""

    def __init__(
        self,
        config: Config,
        own: OwnPasses,
        fallback_batch_size: Optional[int],
        clock: Callable[[], float],
        *,
        constant: Optional[int],
        queue_depth: int,
        say: Callable[[Event], None],
    ) -> None:
        general = config.general
        self.config = config
        self.clock = clock
        self.own = own
        self.source: Optional[BatchSource] = None  # benchy's own batches, while an IO block runs
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
        self.cached: Any = NOTHING  # the one batch every SYNTHETIC window hands out
        self._fallback = fallback_batch_size
        self._say = say
        self._counter: Optional[Callable[[Any], int]] = None
        # count: tokens: the tokens of each trial's batches, added up by the counter itself.
        self.tokens: Optional[TokenTally] = None
        self._synthetic_tokens: Any = None
        # FLOPs: one untimed step of the loop on the cached batch after the verdict (see measure.flops).
        self.step_counter: Optional[StepCounter] = None
        self.world = 1  # ranks (set when the benchmark starts)
        # Each pass's start-up (from its iter() to its first batch) and its iter(), on the clock: the
        # loop's own epochs and benchy's own passes.
        self.startups: List[float] = []
        self.pass_starts: List[float] = []
        self.pass_lengths: List[int] = []  # whole passes benchy's own IO trials saw (a loader without len())
        # The trial clock's readings plus this are Unix seconds: taken once, so the timeline's times
        # keep the clock's resolution and order (``time.time()`` may be stepped by NTP during a run).
        self.unix_offset = time.time() - clock()

    # --- counting and batches -----------------------------------------------------------------

    @property
    def counter_known(self) -> bool:
        return self._counter is not None

    def counter(self) -> Callable[[Any], int]:
        """The sample counter (decided from the first batch benchy saw: :meth:`decide`)."""
        assert self._counter is not None, "the counter is decided from the first batch"
        return self._counter

    def decide(self, batch: Any) -> None:
        """Specialise the sample counter from ``batch`` (the first batch benchy sees), once."""
        if self._counter is not None:
            return
        self._counter = make_counter(batch, self._fallback, lambda text: self._say(CounterNote(text)))
        self.counting = describe_rule(batch, self._fallback)
        if self.constant is not None and self._counter(batch) != self.constant:
            self.constant = None  # the first batch says otherwise: count every batch
        g = self.config.general
        if g.count == "tokens":
            # Every batch goes through the tally (no constant): it adds up the tokens.
            try:
                self.tokens = TokenTally(self._counter, batch, g.token_key, g.mask_key)
            except TypeError as err:  # batches without token ids: samples are still counted
                self._say(TokensNotCounted(str(err)))
            else:
                self._counter = self.tokens.count
                self.constant = None
                self.counting += f"; {self.tokens.source}"

    def keep_cached(self, batch: Any) -> None:
        """The batch every SYNTHETIC window hands out, from now on (the first real batch benchy holds)."""
        if self.cached is NOTHING:
            self.decide(batch)
            self.cached = batch
            self.synthetic_samples = self.counter()(batch)

    def synthetic_tokens(self) -> Any:
        """The cached batch's tokens, counted in full once (None unless ``count: tokens``)."""
        if self.tokens is not None and self._synthetic_tokens is None and self.cached is not NOTHING:
            self._synthetic_tokens = self.tokens.exact(self.cached, self.synthetic_samples or 0)
        return self._synthetic_tokens

    def note_pass(self, made: float, first: float) -> None:
        """One of the loop's passes: made at ``made``, its first batch at ``first`` (clock readings)."""
        self.startups.append(first - made)
        self.pass_starts.append(made)

    # --- benchy's own passes ------------------------------------------------------------------

    def open_own(self) -> BatchSource:
        """benchy's own batches for a block of IO trials (a new pass of its own when none is open)."""
        if self.source is None:
            self.source = BatchSource(self.own.new, self.clock)
        return self.source

    def close_own(self) -> None:
        """The block is over: benchy's own pass lets go of its iterator (workers shut down); the batch it
        kept becomes the cached SYNTHETIC batch if there is none yet."""
        source, self.source = self.source, None
        if source is None:
            return
        if source.pending is not NO_BATCH and self.cached is NOTHING:
            self.keep_cached(source.pending)
        self.startups += source.startups
        self.pass_starts += source.pass_starts
        self.pass_lengths += source.lengths
        try:
            source.close()
        finally:
            self.own.close()

    def drain(self) -> None:
        """Before an IO trial: the batches benchy's own pass holds ready are taken, untimed, so that the trial
        does not start with free batches (all workers are then busy on fresh ones)."""
        source = self.open_own()
        if self.queue_depth <= 0:
            return
        source.pending = NO_BATCH
        for _ in range(self.queue_depth):
            source.fetch()

    def flops(self, final: bool, reached: bool = True) -> Optional[FlopCount]:
        """The counted step's FLOPs; None while it may still come (or ``flops: false``); at the end (``final``),
        why there are none (``reached``: the schedule got as far as the count)."""
        counter = self.step_counter
        if counter is not None and (counter.completed or not final):
            return counter.count
        if counter is not None:
            return FlopCount(skipped=Reason(Why.LEFT_STEP))
        g, synthetic = self.config.general, self.config.synthetic
        if not g.flops:
            return None
        if self.world > 1:
            return FlopCount(skipped=Reason(Why.FLOPS_RANKS, steps=self.world))
        if not (synthetic.run_benchmark and synthetic.ntrials != 0):
            return FlopCount(skipped=Reason(Why.NO_SYNTHETIC))
        if final:
            return FlopCount(skipped=Reason(Why.NO_ROOM if reached else Why.ENDED_BEFORE))
        return None

    def start_count(self) -> StepCounter:
        """The FLOP counter for the untimed step handed out now, entered."""
        counter = StepCounter(self.synthetic_samples or 0, "FLOPS_1")
        self.step_counter = counter
        counter.enter()
        return counter

    def startup(self, results: RunResults, workers: int, persistent: bool, epoch_batches: Optional[int]) -> Optional[Startup]:
        """The loader's start-up per pass, against an ordinary batch (IO's median period) and an epoch at the FULL rate
        (FULL's mean period: a loader whose workers deliver in bursts has a median period far below it)."""
        medians = [t.median_period for t in results.trials if t.mode is Mode.IO and t.median_period is not None]
        full = [t.seconds / len(t.step_seconds) for t in results.measured(Mode.FULL) if len(t.step_seconds)]
        return startup(
            self.startups,
            workers=workers,
            persistent=persistent,
            epoch_batches=epoch_batches,
            batch_seconds=float(statistics.median(medians)) if medians else None,
            full_batch_seconds=float(statistics.median(full)) if full else None,
            started=[self.unix(t) for t in self.pass_starts],
        )

    def close(self) -> None:
        """The benchmark is over: benchy's own pass (if one is open) is let go and the cached batch dropped."""
        self.close_own()
        self.cached = NOTHING

    # --- around the clock ---------------------------------------------------------------------

    def _begin(self, spec: TrialSpec, sync: Callable[[], None]) -> Callable[[], None]:
        """What runs just before a trial's clock: the device sync, the ranks' barrier (``use_distributed_barrier``),
        the system sampler's baseline reading."""
        barrier, sampler, tokens = self.barrier, self.sampler, self.tokens

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
        system = msgspec.structs.replace(system, disturbed=disturbed(system, self.config.general.busy_machine_share))
        readings = self.sampler.readings()
        if readings is not None:
            readings["time"] += self.unix_offset
        return dataclasses.replace(result, system=system, started=started, readings=readings)

    def finish(self, result: TrialResult) -> TrialResult:
        """A scheduled trial's result with its system metrics and, with ``count: tokens``, its tokens."""
        result = self.with_system(result)
        if self.tokens is None:
            return result
        found = self.synthetic_tokens() if result.mode is Mode.SYNTHETIC else self.tokens.take()
        return dataclasses.replace(result, tokens=found)

    # --- trials -------------------------------------------------------------------------------

    def _say_rate(
        self, out: Output, label: str, i: int, n: int, stamps: Stamps, sizes: Counts, pauses: Pauses, paused: float
    ) -> None:
        """The periodic line at step ``i``: throughput over the ``report_freq`` steps since the last line, less
        ``paused`` (benchy's own time among them), written to ``out``; the line's own time goes into ``pauses``, out of
        the trial."""
        low = i - self.config.general.report_freq
        taken = stamps.get(i)
        span = taken - stamps.get(low) - paused
        rate = sizes.total(low, i) / span if span > 0 else float("inf")
        out.line(lines.iteration(label, i, n, rate))
        out.trial_progress(i, rate)
        pauses.append((i, self.clock() - taken))

    def _io_reporter(self, out: Output) -> Optional[Callable[[TrialSpec, int, Stamps, Counts, Pauses], None]]:
        """The IO trials' periodic line every ``report_freq`` steps (:meth:`_say_rate`)."""
        freq = self.config.general.report_freq
        if freq <= 0:
            return None

        def report(spec: TrialSpec, i: int, stamps: Stamps, sizes: Counts, pauses: Pauses) -> None:
            paused = sum(d for k, d in pauses if i - freq <= k < i)
            self._say_rate(out, spec.label, i, spec.nbatches, stamps, sizes, pauses, paused)

        return report

    def _window_reporter(self, out: Output) -> Optional[Callable[[WindowRun, int], None]]:
        """A window's periodic line, as the IO trials', leaving out also the periods the window leaves out (an epoch's
        end in between)."""
        freq = self.config.general.report_freq
        if freq <= 0:
            return None

        def report(w: WindowRun, i: int) -> None:
            if w.discarded:
                return
            low = i - freq
            paused = sum(d for k, d in w.pauses if low <= k < i) + sum(d for k, d in w.gaps if low <= k < i)
            paused += sum(w.stamps.period(k) for k in w.left_out if low <= k < i - 1)
            self._say_rate(out, w.spec.label, i, w.n, w.stamps, w.sizes, w.pauses, paused)

        return report

    def io(self, spec: TrialSpec, out: Output, ranges: Any = None, drain: bool = False) -> TrialResult:
        """One scheduled IO trial on benchy's own pass; ``ranges``: the profiler's in place of the NVTX ones;
        ``drain``: the workers' ready batches taken first (:meth:`drain`), by the trial's loop, after all else that
        runs before its clock (the sampler's baseline takes milliseconds). System metrics: :meth:`finish`."""
        sync = synchronizer()
        source = self.open_own()
        if not self.counter_known:  # the first batch benchy sees: the counting rule, and IO's first batch
            batch = source.fetch()
            source.keep(batch)
            self.decide(batch)
        return io_trial(
            IOArgs(
                spec,
                source,
                self.counter(),
                self._clock(sync),
                sync,
                self._io_reporter(out),
                self.config.general.report_freq,
                self._begin(spec, sync),
                self.constant,
                self.ranges if ranges is None else ranges,
                self.drain if drain else None,
            )
        )

    def side(self, spec: TrialSpec, source: Any, counter: Callable[[Any], int]) -> TrialResult:
        """One IO trial outside the schedule (IO_H2D, a sweep setting), with its system metrics."""
        sync = synchronizer()
        try:
            result = io_trial(IOArgs(spec, source, counter, self._clock(sync), sync, begin=self._begin(spec, sync)))
        except BaseException:
            self.sampler.stop()
            raise
        return self.with_system(result)

    def window(self, spec: TrialSpec, out: Output, ranges: Any = None) -> WindowRun:
        """A SYNTHETIC or FULL window, ready for its first segment; ``ranges``: the profiler's in place of
        the NVTX ones (the profiled warm-up)."""
        sync = synchronizer()
        constant = self.constant if spec.mode is Mode.FULL else self.synthetic_samples  # SYNTHETIC: the cached batch's
        args = WindowArgs(
            spec,
            self.counter(),
            constant,
            self._clock(sync),
            sync,
            self._begin(spec, sync),
            self._window_reporter(out),
            self.config.general.report_freq,
            self.ranges if ranges is None else ranges,
        )
        return WindowRun(args)
