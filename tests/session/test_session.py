"""The session itself, in-process, with an injected clock, output and exit (no subprocess).

The fake clock advances only when the fake loader fetches, the fake step runs, or a line is
printed, so every rate and every excluded pause is known exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest
from helpers import FakeClock, Made, make_session, read_json, run_epoch

from benchy import EXIT_MISSING_MODE, Mode
from benchy.session.registry import Registry
from benchy.session.session import Session


def make(clock: FakeClock, *, fetch: float = 0.01, batches: int = 100, **sections: Any) -> Made:
    return make_session(clock, fetch=fetch, batches=batches, **sections)


def test_periodic_lines_report_exact_rates_and_their_time_is_excluded(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, exits = make(clock, IO={"nbatches": 6}, synthetic={"nbatches": 6}, full={"nbatches": 6},
                                  **{"global": {"report_freq": 2}})
    for _ in range(4):
        run_epoch(session, clock)
    text = stream.getvalue()
    # IO: 8 samples per 0.01 s fetch; FULL: a 0.02 s step and a 0.01 s fetch per batch; SYNTHETIC: the step only.
    assert "BENCHY::IO_1::Iteration 2/6 Throughput: 800.000" in text
    assert "BENCHY::IO_1::Iteration 4/6 Throughput: 800.000" in text
    assert "BENCHY::SYNTHETIC_1::Iteration 2/6 Throughput: 400.000" in text
    assert "BENCHY::FULL_2::Iteration 4/6 Throughput: 266.667" in text
    # Each line took 1 s of fake time; none of it is in a trial.
    assert "BENCHY::IO_1::Trial Throughput: 800.000" in text
    assert "BENCHY::SYNTHETIC_2::Trial Throughput: 400.000" in text
    assert "BENCHY::FULL_1::Trial Throughput: 266.667" in text
    assert exits == [0]


def test_len_follows_the_schedule(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, exits = make(clock, synthetic={"nbatches": 3}, full={"nbatches": 5},
                             **{"global": {"exit_after_tests": False}})
    lengths = [session.epoch_length()]
    for _ in range(4):
        it = session.iterate()
        lengths.append(session.epoch_length())
        for _ in it:
            clock.now += 0.01
    assert lengths == [3, 3, 5, 5, 3]  # SYNTHETIC_1, FULL_1, FULL_2, SYNTHETIC_2
    assert session.done and session.epoch_length() is None and exits == []


def test_exit_status_3_when_a_mode_has_no_counted_trial(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, exits = make(clock, synthetic={"nbatches": 3})
    # S S F F S: the loop breaks out of the SYNTHETIC trials (3 batches) after 2; SYNTHETIC_1 runs
    # again once (a break may be a one-off), then no trial runs again (the loop breaks every epoch).
    for _ in range(5):
        it = session.iterate()
        synthetic = session.epoch_length() == 3
        for k, _ in enumerate(it):
            clock.now += 0.01
            if synthetic and k == 1:
                break
        del it  # as a for loop drops its iterator
    assert exits == []
    session.iterate()  # SYNTHETIC_2 was the last trial and did not count: the next epoch ends the schedule
    assert exits == [EXIT_MISSING_MODE]
    assert "no counted trial for SYNTHETIC: the comparison is incomplete; exiting with status 3." in stream.getvalue()


def test_the_never_iterated_warning_needs_no_benchmarked_loader() -> None:
    lines: List[str] = []
    registry = Registry(write=lines.append)
    registry.register("BenchmarkDataLoader", "train.py:10")
    registry.at_exit()
    assert len(lines) == 1 and "BenchmarkDataLoader created at train.py:10 was never iterated" in lines[0]
    lines.clear()
    second = registry.register("BenchmarkDataLoader", "train.py:20")
    assert registry.claim(second) is True
    registry.at_exit()
    assert lines == []  # one loader was benchmarked: the unused copy is not an error


def test_one_benchmark_at_a_time_the_first_iterated_runs_it(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    registry = Registry(write=lambda _: None)
    train, _, _ = make(clock, registry=registry)
    val, _, _ = make(clock, registry=registry)
    assert val.epoch_length() == 4  # nobody iterated yet: either may run the benchmark
    run_epoch(train, clock)
    assert val.epoch_length() is None  # train runs it: val will be the plain loader
    assert train.benchmarked and not val.benchmarked
    assert run_epoch(val, clock) == 100 and val.done and val.epoch_length() is None
    for _ in range(4):
        run_epoch(train, clock)
        run_epoch(val, clock)
    assert train.done and not val.benchmarked  # decided at its first iter(): plain for good
    # After the benchmark has finished, a wrapper iterated for the first time may run a new one.
    later, _, exits = make(clock, registry=registry)
    for _ in range(4):
        run_epoch(later, clock)
    assert later.benchmarked and later.done and exits == [0]


@pytest.mark.parametrize("batches", [4, 9])
def test_synthetic_batch_is_fetched_once_for_all_its_trials(tmp_path, monkeypatch, batches: int) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(clock, batches=batches, synthetic={"nwarmup": 1}, full={"run_benchmark": False})
    seen = []
    for _ in range(3):
        for b in session.iterate():
            seen.append(id(b))
            clock.now += 0.01
    assert len(seen) == 12 and len(set(seen)) == 1


def ahead(session: Session, clock: FakeClock, step: float = 0.02) -> int:
    """A loop that asks for batch k + 1 before it runs step k (Lightning's prefetching fit loop)."""
    it = session.iterate()
    if next(it, None) is None:
        return 0
    steps = 0
    for _following in it:
        clock.now += step  # the step on the batch before `_following`, run after `_following` was fetched
        steps += 1
    clock.now += step  # the last batch's step
    return steps + 1


@pytest.mark.parametrize("loop, lookahead", [(run_epoch, False), (ahead, True)])
def test_a_loop_that_fetches_one_batch_ahead_is_timed_without_bias(tmp_path, monkeypatch, loop, lookahead) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, exits = make(clock, synthetic={"nbatches": 5}, full={"nbatches": 5})
    for _ in range(4):
        assert loop(session, clock) == 5
    results = session.results
    syn = [t.throughput for t in results.measured(Mode.SYNTHETIC)]
    full = [t.throughput for t in results.measured(Mode.FULL)]
    # 8 samples per 0.02 s step; FULL adds the 0.01 s fetch. Without the correction a loop that
    # fetches ahead would show 5/4 of these (five periods holding four steps).
    assert syn == pytest.approx([400.0, 400.0]) and full == pytest.approx([8 / 0.03] * 2)
    periods = 4 if lookahead else 5
    assert all(len(t.step_seconds) == periods for t in results.measured(Mode.FULL))
    assert ("fetches one batch ahead" in stream.getvalue()) is lookahead
    assert exits == [0]


def test_io_h2d_trials_copy_every_batch_and_are_compared_with_io(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    copied: List[Any] = []

    def copy(batch: Any) -> Any:  # stands in for batch.to("cuda", non_blocking=True): 15 ms per batch
        clock.now += 0.015
        copied.append(batch)
        return list(batch)  # the same structure, elsewhere

    session, stream, exits = make(clock, h2d_copy=copy, fetch=0.01, IO={"ntrials": 2},
                                  synthetic={"nbatches": 4}, full={"nbatches": 4})
    for _ in range(4):
        run_epoch(session, clock, step=0.005)
    text = stream.getvalue()
    # IO: 8 samples per 10 ms; with the copy, 8 per 25 ms: 320 samples/s, 0.40x IO.
    assert "BENCHY::H2D_1::Trial Throughput: 320.000" in text and "BENCHY::H2D_2::Trial Throughput: 320.000" in text
    assert len(copied) == 2 * (4 + 1)  # each trial: the batch received before its clock starts, and its 4
    assert ("BENCHY::SUMMARY::H2D IO with copies to the injected copy: 320.000 +/- 0.000 samples/s, 0.40x IO "
            "(this rank's loader)") in text
    # SYNTHETIC (1600/s) is above IO (800/s) and the copies take IO down to 40 %: the verdict says so.
    verdict = next(x for x in text.splitlines() if x.startswith("BENCHY::SUMMARY::VERDICT "))
    assert ("copying each batch to the injected copy lowers the loader's rate to 320.000 samples/s, 40 % of IO "
            "(pin_memory=True and non_blocking copies let them overlap the step)") in verdict
    # FULL trials got host batches, never a copied one.
    doc = json.loads((Path(session.config.output_path)).read_text())
    assert doc["IO_H2D"]["trial_throughput"] == pytest.approx([320.0, 320.0]) and doc["IO_H2D"]["vs_io"] == pytest.approx(0.4)
    assert exits == [0]


def test_io_h2d_is_skipped_and_said_on_a_cpu_run(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, _ = make(clock, synthetic={"nbatches": 4}, full={"nbatches": 4})
    for _ in range(4):
        run_epoch(session, clock)
    text = stream.getvalue()
    assert ("BENCHY::INFO::Message: IO_H2D: skipped: no accelerator in use at the first epoch (the run computes "
            "on the CPU).") in text
    assert "BENCHY::SUMMARY::H2D skipped: no accelerator in use at the first epoch" in text
    doc = json.loads((Path(session.config.output_path)).read_text())
    assert doc["IO_H2D"]["skipped"].startswith("no accelerator") and doc["IO_H2D"]["n"] == 0


def test_the_summary_works_out_the_verdict_once_for_its_lines_table_and_json(monkeypatch) -> None:
    from benchy.core import verdict as verdict_module
    from benchy.session import sink as sink_module

    clock = FakeClock()
    made = make(clock)
    calls: List[str] = []
    real_verdict, real_summary = verdict_module.verdict, sink_module.ResultSink.summary

    def counting_verdict(*args: Any, **kwargs: Any) -> Any:
        calls.append("verdict")
        return real_verdict(*args, **kwargs)

    def summary(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append("summary")
        real_summary(self, *args, **kwargs)
        calls.append("end of summary")

    monkeypatch.setattr(verdict_module, "verdict", counting_verdict)
    monkeypatch.setattr(sink_module.ResultSink, "summary", summary)
    while not made.session.done:
        run_epoch(made.session, clock)
    during = calls[calls.index("summary") + 1: calls.index("end of summary")]
    assert during == ["verdict"]  # lines, terminal table and JSON share one Reading
    doc = read_json(made.session)
    assert doc["verdict"] and doc["summary"][-1] == "BENCHY::SUMMARY::VERDICT " + doc["verdict"]


def test_a_peek_and_a_part_way_drop_run_their_trial_again_with_exact_rates(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, exits = make(clock, global_={"exit_after_tests": False})
    first = next(iter(session.iterate()))  # a peek before training: one batch, iterator dropped
    assert first is not None and session.epoch_length() == 4
    assert run_epoch(session, clock) == 4  # SYNTHETIC_1, in full
    it = session.iterate()  # FULL_1: the loop breaks after 2 of its 4 batches
    for k, _ in enumerate(it):
        clock.now += 0.02
        if k == 1:
            break
    del it
    for _ in range(4):  # FULL_1 again, FULL_2, SYNTHETIC_2, then plain
        run_epoch(session, clock)
    assert session.done and exits == []
    results = session.results
    assert results.interruptions == [] and results.peeks == 1
    assert [(i.spec.label, i.batches_done) for i in results.reruns] == [("FULL_1", 2)]
    assert [t.label for t in results.trials if t.mode is not Mode.IO] == ["SYNTHETIC_1", "FULL_1", "FULL_2",
                                                                          "SYNTHETIC_2"]
    # The re-run is a whole trial: 4 fetches of 0.01 s and 4 steps of 0.02 s, 8 samples each.
    full_1 = next(t for t in results.trials if t.label == "FULL_1")
    assert full_1.samples == 32 and full_1.seconds == pytest.approx(4 * 0.03)
    assert session.epochs_started == 5 == session.schedule.epochs_needed + 1  # the peek was no epoch
    doc = read_json(session)
    assert doc["complete"] is True and doc["peeks"] == 1 and doc["epochs_needed"] == 5
    out = stream.getvalue()
    assert "an iter() before the benchmark's first epoch took 1 batch" in out and "so it cost no trial" in out
    assert "trial FULL_1 stopped after 2 of 4 batches: the loop dropped its iterator part-way" in out


class Prefetching:
    """A loader whose workers make one batch every ``period`` seconds of fake time in the
    background and hold at most ``depth`` ready: a fetch takes a ready batch at once, else waits
    for the next one (what a DataLoader with workers does, on the fake clock)."""

    def __init__(self, clock: FakeClock, period: float, depth: int) -> None:
        self.clock, self.period, self.depth = clock, period, depth
        self.ready, self.next_ready = 0, period

    def _produce(self) -> None:
        while self.ready < self.depth and self.next_ready <= self.clock.now:
            self.ready += 1
            self.next_ready += self.period
        if self.ready == self.depth:  # the workers stall until a slot frees
            self.next_ready = max(self.next_ready, self.clock.now + self.period)

    def __call__(self) -> Any:
        def batches() -> Any:
            while True:
                self._produce()
                if self.ready == 0:
                    self.clock.now = self.next_ready
                    self._produce()
                full = self.ready == self.depth
                self.ready -= 1
                if full:
                    self.next_ready = self.clock.now + self.period
                yield [0] * 8
        return batches()


def test_every_io_trial_starts_with_the_workers_queue_drained(tmp_path, monkeypatch) -> None:
    # Between IO trials benchy builds results and prints (1 s a line on this slow stream): the
    # workers fill their queue. Each IO trial must still read their rate, 8 samples / 0.01 s.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session = make_session(clock, IO={"nbatches": 10, "ntrials": 3, "nwarmup": 1}, queue_depth=4, workers=2,
                           global_={"exit_after_tests": False}, make_iterator=Prefetching(clock, 0.01, 4)).session
    run_epoch(session, clock)
    io = [t for t in session.results.trials if t.mode is Mode.IO]
    assert [t.label for t in io] == ["IO_WARMUP_1", "IO_1", "IO_2", "IO_3"]
    assert [t.throughput for t in io[1:]] == pytest.approx([800.0] * 3, rel=1e-9)


def test_the_counted_step_leaves_its_trial_and_a_run_again_keeps_every_step(tmp_path, monkeypatch) -> None:
    # SYNTHETIC_1's first step is the FLOPs' count: left out of it. Dropped part-way after that step,
    # SYNTHETIC_1 runs again and is not counted again, so the run again keeps all its periods.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(clock, global_={"exit_after_tests": False}, synthetic={"nwarmup": 1, "ntrials": 2})
    labels: List[str] = []
    dropped = False
    while not session.done:
        it = session.iterate()
        label = session._current.spec.label if session._current is not None else ""
        labels.append(label)
        for k, _ in enumerate(it):
            clock.now += 0.02
            if label == "SYNTHETIC_1" and not dropped and k == 1:
                dropped = True
                break
        del it  # a loop that breaks out drops its iterator
    assert labels.count("SYNTHETIC_1") == 2
    synthetic = session.results.measured(Mode.SYNTHETIC)
    assert [len(t.step_seconds) for t in synthetic] == [4, 4]
    assert session.results.flops is not None and session.results.flops.label == "SYNTHETIC_1"
    assert session.results.flops.total == 0  # the fake step computes nothing: said, not guessed
    # Not dropped: the count's trial leaves out its first period.
    clock = FakeClock()
    session, _, _ = make(clock, global_={"exit_after_tests": False}, synthetic={"nwarmup": 1, "ntrials": 2})
    while not session.done:
        run_epoch(session, clock)
    assert [len(t.step_seconds) for t in session.results.measured(Mode.SYNTHETIC)] == [3, 4]
