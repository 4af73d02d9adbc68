"""The session itself, in-process, with an injected clock, output and exit (no subprocess).

The fake clock advances only when the fake loader fetches, the fake step runs, or a line is
printed, so every rate and every excluded pause is known exactly. The loader's epochs are its own:
``batches`` a pass, and ``len()`` that many unless a test says otherwise.
"""

from __future__ import annotations

import io
import json
import signal
from pathlib import Path
from typing import Any, List

import pytest
from helpers import FakeClock, Made, make_session, read_json, run_epoch, workers_loader

from benchy import EXIT_MISSING_MODE, Mode
from benchy.results.logparse import split_runs
from benchy.session.registry import Registry
from benchy.session.session import Session


def make(clock: FakeClock, *, fetch: float = 0.01, batches: int = 100, length: Any = "same", **sections: Any) -> Made:
    """A session over ``batches`` batches a pass; ``length``: what ``len()`` says (default: ``batches``)."""
    if length == "same":
        length = batches
    return make_session(clock, fetch=fetch, batches=batches, length=lambda: length, **sections)


def until_done(session: Session, clock: FakeClock, step: float = 0.02, most: int = 200) -> List[int]:
    """Epochs of a plain ``for`` loop until the schedule is over; each epoch's steps."""
    steps = []
    for _ in range(most):
        if session.done:
            return steps
        steps.append(run_epoch(session, clock, step))
    raise AssertionError("the schedule did not end")


def windows(session: Session) -> List[str]:
    return [t.label for t in session.results.trials if t.mode is not Mode.IO]


def test_periodic_lines_report_exact_rates_and_their_time_is_excluded(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, exits = make(
        clock, IO={"nbatches": 6}, synthetic={"nbatches": 6}, full={"nbatches": 6}, **{"global": {"report_freq": 2}}
    )
    run_epoch(session, clock)  # 100 batches: the whole schedule runs inside this epoch
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


def test_the_loops_epochs_keep_their_length_during_and_after_the_schedule(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, exits = make(clock, batches=7, global_={"exit_after_tests": False})
    steps = until_done(session, clock) + [run_epoch(session, clock) for _ in range(2)]
    assert set(steps) == {7} and exits == []
    assert windows(session) == ["SYNTHETIC_1", "FULL_1", "FULL_2", "SYNTHETIC_2"]
    # Each window measured its 4 periods, whatever the epochs' ends left out; an IO trial that ran into a new pass of
    # benchy's own (7 batches each) leaves out the period that holds its start-up.
    assert all(len(t.step_seconds) == 4 for t in session.results.trials if t.mode is not Mode.IO)
    assert {len(t.step_seconds) for t in session.results.trials if t.mode is Mode.IO} <= {3, 4}
    assert all(t.throughput == pytest.approx(400.0) for t in session.results.measured(Mode.SYNTHETIC))
    assert all(t.throughput == pytest.approx(8 / 0.03) for t in session.results.measured(Mode.FULL))
    doc = read_json(session)
    assert doc["complete"] is True and doc["epoch_length"] == 7 and doc["steps_needed"] >= 16
    spans = {e["trial"]: e["window"] for e in doc["timeline"]["trials"]}
    # From the loop's first step (the FLOPs' count comes after the verdict).
    assert spans["IO_1"] is None and spans["SYNTHETIC_1"]["start_epoch"] == 1 and spans["SYNTHETIC_1"]["start_step"] == 0
    assert sum(spans[label]["left_out"] for label in windows(session)) >= 1  # a window crossed an epoch's end


def synthetic_only(clock: FakeClock, batches: int, nbatches: int, ntrials: int, **facts: Any) -> Any:
    """A session of SYNTHETIC windows only, over a fake loader of ``batches`` batches (``length=None``: no len())."""
    session, _, _ = make(
        clock,
        batches=batches,
        IO={"run_benchmark": False},
        full={"run_benchmark": False},
        synthetic={"nbatches": nbatches, "ntrials": ntrials},
        global_={"exit_after_tests": False, "flops": False},
        **facts,
    )
    return session


def test_synthetic_steps_take_the_epoch_s_places_and_ask_the_loader_for_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session = synthetic_only(clock, 20, 5, 2)
    assert run_epoch(session, clock) == 20 and session.done  # the loader's own length, though 11 steps got the cached batch
    # No fetch inside a window: each took its 5 steps of 0.02 s exactly (a fetch costs 0.01 s here). The pass is
    # still consumed as the plain loop consumes it: the batches the cached steps took the places of are taken
    # from it (and dropped) after the windows, before the loop's next real batch, so all 20 were made.
    assert [t.seconds for t in session.results.measured(Mode.SYNTHETIC)] == pytest.approx([0.1, 0.1])
    assert clock.fetches == 20


def test_an_epoch_without_a_length_keeps_its_own_length_too(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session = synthetic_only(clock, 20, 5, 2, length=None)
    # The cached steps took the places of the pass's batches, repaid after the windows: the pass's own 20 steps.
    assert run_epoch(session, clock) == 20 and clock.fetches == 20
    assert run_epoch(session, clock) == 20  # after the schedule: the loader's own


def test_a_loader_without_a_length_is_taken_to_be_as_long_as_its_last_pass(tmp_path, monkeypatch) -> None:
    # Without a length, the batches a cached stretch takes the place of are taken from the pass before it, so that
    # its end shows first: the second window's stretch stops at the end of the first pass of 12, and that epoch keeps
    # its length; later stretches stop at the length the first pass showed, and those epochs keep it too.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session = synthetic_only(clock, 12, 10, 3, length=None)
    assert run_epoch(session, clock) == 12
    later = [run_epoch(session, clock) for _ in range(4)]
    assert session.done and later == [12] * 4 and clock.fetches == 12 * 5


def test_exit_status_3_when_a_mode_has_no_counted_trial(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()

    class Broken:
        """A loader whose every pass fails at its 3rd batch."""

        def __iter__(self):
            for k in range(3):
                clock.now += 0.01
                if k == 2:
                    raise OSError("disk gone")
                yield [0] * 8

    session, stream, exits = make_session(
        clock,
        make_iterator=Broken().__iter__,
        IO={"run_benchmark": False},
        synthetic={"run_benchmark": False},
        full={"nbatches": 4, "ntrials": 2},
    )
    errors = 0
    while not session.done and errors < 10:
        try:
            run_epoch(session, clock)
        except OSError:  # a script that catches its loader's errors and goes on
            errors += 1
    assert exits == [EXIT_MISSING_MODE] and errors == 2  # the end comes with the second loss: no FULL trial is left
    text = stream.getvalue()
    assert "trial FULL_1 did not count" in text and "the data loader raised OSError: disk gone" in text
    assert "no counted trial for FULL: the comparison is incomplete; exiting with status 3." in text


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
    train, _, _ = make(clock, batches=10, registry=registry)
    val, _, _ = make(clock, batches=10, registry=registry)
    run_epoch(train, clock)
    assert train.record.benchmarked and not val.record.benchmarked
    assert run_epoch(val, clock) == 10 and val.done  # first iterated while train runs it: the plain loader
    until_done(train, clock)
    assert train.done and not val.record.benchmarked
    # After the benchmark has finished, a wrapper iterated for the first time may run a new one.
    later, _, exits = make(clock, batches=10, registry=registry)
    until_done(later, clock)
    assert later.record.benchmarked and later.done and exits == [0]


@pytest.mark.parametrize("batches", [4, 9])
def test_synthetic_batch_is_one_object_for_all_its_windows(tmp_path, monkeypatch, batches: int) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(
        clock, batches=batches, synthetic={"nwarmup": 1}, full={"run_benchmark": False}, global_={"flops": False}
    )
    seen = set()
    for _ in range(20):
        if session.done:
            break
        for b in session.iterate():
            if session.loop.window is not None and session.loop.window.spec.mode is Mode.SYNTHETIC:
                seen.add(id(b))
            clock.now += 0.01
    assert session.done and len(seen) == 1


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
    session, stream, exits = make(clock, batches=7, synthetic={"nbatches": 5}, full={"nbatches": 5})
    for _ in range(40):
        if exits:
            break
        assert loop(session, clock) == 7
    results = session.results
    syn = [t.throughput for t in results.measured(Mode.SYNTHETIC)]
    full = [t.throughput for t in results.measured(Mode.FULL)]
    # 8 samples per 0.02 s step; FULL adds the 0.01 s fetch. Without the correction a loop that
    # fetches ahead would count the period from an epoch's first batch to its second, which holds no step.
    assert syn == pytest.approx([400.0, 400.0]) and full == pytest.approx([8 / 0.03] * 2)
    assert ("fetches one batch ahead" in stream.getvalue()) is lookahead
    assert session.runner.lookahead is lookahead and exits == [0]


def test_io_h2d_trials_copy_every_batch_and_are_compared_with_io(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    copied: List[Any] = []

    def copy(batch: Any) -> Any:  # stands in for batch.to("cuda", non_blocking=True): 15 ms per batch
        clock.now += 0.015
        copied.append(batch)
        return list(batch)  # the same structure, elsewhere

    session, stream, exits = make(
        clock, h2d_copy=copy, fetch=0.01, IO={"ntrials": 2}, synthetic={"nbatches": 4}, full={"nbatches": 4}
    )
    until_done(session, clock, step=0.005)
    text = stream.getvalue()
    # IO: 8 samples per 10 ms; with the copy, 8 per 25 ms: 320 samples/s, 0.40x IO.
    assert "BENCHY::H2D_1::Trial Throughput: 320.000" in text and "BENCHY::H2D_2::Trial Throughput: 320.000" in text
    assert len(copied) == 2 * (4 + 1)  # each trial: the batch received before its clock starts, and its 4
    assert (
        "BENCHY::SUMMARY::H2D IO with copies to the injected copy: 320.000 +/- 0.000 samples/s, 0.40x IO (this rank's loader)"
    ) in text
    verdict = "; ".join(split_runs(io.StringIO(text))[-1].verdict)
    assert (
        "copying each batch to the injected copy lowers the loader's rate to 320.000 samples/s, 40 % of IO "
        "(pin_memory=True and non_blocking copies let them overlap the step)"
    ) in verdict
    doc = json.loads((Path(session.config.output_path)).read_text())
    assert doc["IO_H2D"]["trial_throughput"] == pytest.approx([320.0, 320.0]) and doc["IO_H2D"]["vs_io"] == pytest.approx(0.4)
    assert exits == [0]


def test_io_h2d_is_skipped_and_said_on_a_cpu_run(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, _ = make(clock, synthetic={"nbatches": 4}, full={"nbatches": 4})
    until_done(session, clock)
    text = stream.getvalue()
    assert ("BENCHY::INFO::Message: IO_H2D: skipped: no accelerator in use (the run computes on the CPU).") in text
    assert "BENCHY::SUMMARY::H2D skipped: no accelerator in use (the run computes on the CPU)" in text
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
    until_done(made.session, clock)
    during = calls[calls.index("summary") + 1 : calls.index("end of summary")]
    assert during == ["verdict"]  # lines, terminal table and JSON share one Reading
    doc = read_json(made.session)
    # The JSON's verdict is the whole of its lines (VERDICT, OVERLAP, WHY, ADVICE), the answer first, as a parser reads it.
    assert doc["summary"][-1].startswith("BENCHY::SUMMARY::ADVICE ")
    (run,) = split_runs(io.StringIO("\n".join(doc["summary"])))
    assert doc["verdict"] and doc["verdict"] == "; ".join(run.verdict)
    assert doc["verdict"].startswith(run.verdict[0]) and run.verdict[0].startswith(("data loading", "compute", "balanced"))


def test_a_peek_and_a_break_cost_no_trial_and_keep_the_rates_exact(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, exits = make(clock, batches=10, global_={"exit_after_tests": False})
    first = next(iter(session.iterate()))  # a peek before training: one batch, iterator dropped
    assert first is not None
    for epoch in range(30):
        if session.done:
            break
        for k, _ in enumerate(session.iterate()):
            clock.now += 0.02
            if epoch % 2 == 0 and k == 2:  # every other epoch, the loop breaks after 3 batches
                break
    assert session.done and exits == []
    assert session.outcomes.lost == () and session.outcomes.peeks == 1
    assert windows(session) == ["SYNTHETIC_1", "FULL_1", "FULL_2", "SYNTHETIC_2"]
    for t in session.results.trials:  # every window its 4 periods, each exactly a step (and a fetch)
        period = 0.02 + (0.01 if t.mode is Mode.FULL else 0.0)
        assert (len(t.step_seconds) == 4 and t.step_seconds == pytest.approx([period] * 4)) or t.mode is Mode.IO
    doc = read_json(session)
    assert doc["complete"] is True and doc["peeks"] == 1 and doc["interrupted"] == [] and doc["rerun"] == []
    assert "did not count" not in stream.getvalue()


def test_a_peek_before_every_epoch_is_not_an_epoch_in_the_numbers(tmp_path, monkeypatch) -> None:
    # The loop of PyTorch's DDP tutorial: `b_sz = len(next(iter(loader))[0])` at the start of each epoch.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(clock, batches=10, global_={"exit_after_tests": False})
    epochs = 0
    while not session.done:
        assert epochs < 30
        next(iter(session.iterate()))  # the peek
        epochs += 1
        for _ in session.iterate():
            clock.now += 0.02
    assert session.outcomes.peeks == epochs and session.loop.epochs_started == epochs
    doc = read_json(session)
    assert doc["epochs_started"] == epochs and doc["peeks"] == epochs and doc["interrupted"] == []
    spans = [e["window"] for e in doc["timeline"]["trials"] if e["window"]]
    # The loop's own epochs, from 1 (the FLOPs' count may take the last one, after the last window).
    assert spans[0]["start_epoch"] == 1 and epochs - 1 <= spans[-1]["end_epoch"] <= epochs
    assert all(a["end_epoch"] <= b["start_epoch"] for a, b in zip(spans, spans[1:]))


def test_an_iter_inside_the_loop_is_served_plain_and_its_time_counts_in_the_step(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, _ = make(
        clock,
        batches=100,
        IO={"run_benchmark": False},
        full={"run_benchmark": False},
        synthetic={"nbatches": 4, "ntrials": 1},
        global_={"flops": False},
    )
    it = session.iterate()
    for k, batch in enumerate(it):
        clock.now += 0.02
        next(iter(session.iterate()))  # a peek inside the loop: its fetch (0.01 s) is in the step
        if session.done:
            break
    (trial,) = session.results.measured(Mode.SYNTHETIC)
    assert trial.throughput == pytest.approx(8 / 0.03)
    assert session.outcomes.sides >= 4
    assert stream.getvalue().count("was served by the plain loader") == 1


def test_an_iterator_that_runs_a_loop_while_the_loops_epoch_is_held_takes_it_over(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(clock, batches=10, global_={"exit_after_tests": False})
    held = session.iterate()  # it = iter(loader); next(it): kept, never advanced again
    next(held)
    until_done(session, clock)
    assert windows(session) == ["SYNTHETIC_1", "FULL_1", "FULL_2", "SYNTHETIC_2"]
    assert held is not None


def test_every_io_trial_starts_with_the_workers_queue_drained(tmp_path, monkeypatch) -> None:
    # Between IO trials benchy builds results and prints (1 s a line on this slow stream): the
    # workers fill their queue. Each IO trial must still read their rate, 8 samples / 0.01 s.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session = make_session(
        clock,
        IO={"nbatches": 10, "ntrials": 3, "nwarmup": 1},
        queue_depth=4,
        workers=2,
        global_={"exit_after_tests": False},
        make_iterator=Prefetching(clock, 0.01, 4),
    ).session
    session.iterate()
    io = [t for t in session.results.trials if t.mode is Mode.IO]
    assert [t.label for t in io] == ["IO_WARMUP_1", "IO_1", "IO_2", "IO_3"]
    assert [t.throughput for t in io[1:]] == pytest.approx([800.0] * 3, rel=1e-7)  # periods kept in single precision


def test_full_windows_start_after_the_workers_ready_batches_were_taken(tmp_path, monkeypatch) -> None:
    # After a SYNTHETIC window the workers' queue is full: a FULL window begun on it would get 4 free
    # batches. The loop takes them first, untimed (the lead-in): FULL reads the loader's 800/s.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session = make_session(
        clock,
        IO={"run_benchmark": False},
        synthetic={"nbatches": 6, "ntrials": 1},
        full={"nbatches": 6, "ntrials": 2},
        queue_depth=4,
        workers=2,
        global_={"exit_after_tests": False, "flops": False},
        make_iterator=Prefetching(clock, 0.01, 4),
    ).session
    run_epoch(session, clock, step=0.001)
    assert [t.throughput for t in session.results.measured(Mode.FULL)] == pytest.approx([800.0] * 2, rel=1e-6)


def test_the_flops_step_is_untimed_and_every_window_keeps_its_periods(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(clock, global_={"exit_after_tests": False}, synthetic={"nwarmup": 1, "ntrials": 2})
    until_done(session, clock)
    assert [len(t.step_seconds) for t in session.results.measured(Mode.SYNTHETIC)] == [4, 4]
    assert session.results.flops is not None and session.results.flops.label == "FLOPS_1"  # after the verdict
    assert session.results.flops.total == 0  # the fake step computes nothing: said, not guessed


@pytest.mark.parametrize("length", [10_000, 9])
def test_the_schedule_s_steps_do_not_grow_with_the_epoch(tmp_path, monkeypatch, length: int) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, _, _ = make(clock, batches=length, modes={"nbatches": 50, "ntrials": 3, "nwarmup": 1})
    steps = 0
    for _ in range(200):
        if session.done:
            break
        for _ in session.iterate():
            clock.now += 0.001
            steps += 1
            if session.done:
                break
    # The estimate covers it (the step the schedule ended in was handed out plain, after it).
    assert session.done and 8 * 50 <= steps <= session.steps_needed() + 1, (steps, session.steps_needed())
    assert session.steps_needed() < 8 * 50 * 1.35


def test_a_signal_during_a_window_names_it_and_keeps_what_was_measured(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, _ = make(clock, batches=100)
    it = session.iterate()
    for _ in range(8):  # the FLOPs' 2 untimed steps, SYNTHETIC_1's 4, then into FULL_1
        next(it)
        clock.now += 0.02
    session.on_signal("SIGTERM")
    doc = read_json(session)
    assert [(i["trial"], i["reason"].split(" after")[0]) for i in doc["interrupted"]] == [("FULL_1", "interrupted by SIGTERM")]
    assert "SIGTERM received during trial FULL_1" in stream.getvalue()
    assert session.done and doc["complete"] is False
    assert signal.SIGTERM  # the handler is the session's (chained in the e2e test)


@pytest.mark.parametrize("batches", [8, 10])
def test_at_exit_a_window_part_way_is_lost_and_the_steps_needed_said(tmp_path, monkeypatch, batches: int) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    session, stream, _ = make(clock, batches=batches)
    run_epoch(session, clock)  # SYNTHETIC_1 (4 steps), then FULL_1 (and with 10 batches FULL_2 from the 9th)
    session.at_exit()
    # The process is left to end as the script ends it; the status advised for CI is EXIT_INCOMPLETE.
    assert session.advised == 4 and session.record.advised == 4
    text = stream.getvalue()
    assert "incomplete run: the script's exit status and exit handlers stay its own" in text
    needed = session.steps_needed()
    assert session.epochs_needed() == -(-needed // batches)  # what the examples run: loader.benchy.epochs_needed()
    # The FULL window running at the pass's end needs a fetch past it for its last period.
    running = "FULL_1" if batches == 8 else "FULL_2"
    during = f" during trial {running}"
    assert (
        f"the script stopped after 1 epoch(s), {batches} step(s) since the benchmark started{during}, before the "
        f"benchy schedule's end (about {needed} steps, {-(-needed // batches)} epoch(s) of {batches} batches in "
        f"all"
    ) in text
    doc = read_json(session)
    lost = [(i["trial"], i["reason"]) for i in doc["interrupted"]]
    not_run = f"not run: the script stopped after 1 epoch(s), {batches} step(s)"
    left = [("FULL_2", not_run)] if batches == 8 else []
    assert lost == [(running, "the script ended before the trial's window was complete"), *left, ("SYNTHETIC_2", not_run)]
    assert doc["complete"] is False
    assert doc["exit_status"] == 4


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
            for _ in range(10_000):
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


@pytest.mark.parametrize("step, truth", [(0.002, 800.0), (0.02, 400.0)])  # the loader limits (8 workers), the step
def test_a_loader_whose_workers_hand_out_in_rounds_reads_its_own_rate_with_the_defaults(
    tmp_path, monkeypatch, step: float, truth: float
) -> None:
    # 8 workers in step, 80 ms a batch each: 8 batches at once, then a wait (100 batches/s, 800 samples/s); epochs of
    # 150 batches (not whole rounds), the default anytime schedule, and benchy's pauses between windows 1 s of fake time
    # a line (the workers fill their queue meanwhile). IO and FULL read the rate the loop has without benchy, every
    # trial: whole rounds, a pass's start-up left out, the workers' ready batches taken before FULL.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    data = workers_loader(clock, 150, 8, 0.08, startup=0.3)
    auto = {"nbatches": 50, "ntrials": "auto", "nwarmup": "auto"}
    made = make_session(
        clock,
        modes=auto,
        queue_depth=16,
        workers=8,
        global_={"exit_after_tests": False, "flops": False, "stages": False},
        make_iterator=lambda: iter(data),
    )
    session = made.session
    for _ in range(60):
        if session.done:
            break
        run_epoch(session, clock, step)
    assert session.done
    results = session.results
    for mode, rate in ((Mode.IO, 800.0), (Mode.FULL, truth)):
        trials = results.measured(mode)
        assert trials and all(t.throughput == pytest.approx(rate, rel=1e-3) for t in trials), [t.throughput for t in trials]
        assert all(len(t.step_seconds) % 8 == 0 for t in trials)  # whole rounds
    assert results.estimate(Mode.SYNTHETIC).mean == pytest.approx(8 / step, rel=1e-6)
    doc = read_json(session)
    assert doc["schedule"]["loader_round"] == 8 and doc["schedule"]["decided_steps"] <= doc["schedule"]["measuring_steps"]
    assert doc["schedule"]["imprecise"] == {}
