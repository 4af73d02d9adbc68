"""The diagnostic windows at the schedule's end (PARTS_1, CONTENTION_1) on virtual time and a real model."""

from __future__ import annotations

import pytest
import torch
from helpers import FakeClock, make_session, read_json


def _train(session, clock: FakeClock, stop_in_diagnostics: int = -1) -> int:
    """A loop with a real model over the fake loader; ``stop_in_diagnostics``: leave after that many steps of
    the diagnostic windows (as a script whose epochs end there). The steps taken."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.ones(2, 4)
    steps, inside = 0, 0
    while not session.done:
        for _batch in session.iterate():
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
            clock.now += 0.02
            steps += 1
            w = session.loop.window
            if w is not None and w.spec.variant in ("PARTS", "CONTENTION"):
                inside += 1
                if inside == stop_in_diagnostics:
                    return steps
        assert steps < 10_000
    return steps


def test_the_step_is_split_into_forward_backward_optimizer_and_the_rest(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    made = make_session(clock, batches=40, global_={"whatif": True})
    _train(made.session, clock)
    text = made.stream.getvalue()
    assert "then the extras, most useful first: FLOPS, STAGES, H2D, PARTS, CONTENTION, EMULATED" in text
    assert "BENCHY::PARTS_1::Trial Throughput:" in text and "CONTENTION_1" not in text.split("Schedule:")[1].split("\n", 1)[1]
    parts = made.session.results.parts
    assert parts is not None and parts.forwards >= 5 and parts.backwards >= 5 and parts.optimizer_steps >= 5
    assert "BENCHY::SUMMARY::PARTS SYNTHETIC step" in text and "the rest of the loop" in text
    doc = read_json(made.session)
    assert doc["complete"] is True and doc["interrupted"] == []
    block = doc["diagnostics"]
    assert [t["label"] for t in block["trials"]] == ["PARTS_1"]
    assert block["skipped"] == [
        "CONTENTION_1: no loader workers (the loading runs on the training thread, in FULL only), and no copy of the "
        "loader to give some (not a DataLoader)"
    ]
    assert block["parts"]["forwards"] >= 5
    # The counted trials never hold a diagnostic window.
    assert not any(label.startswith(("PARTS", "CONTENTION")) for label in doc["schedule"]["order"])
    assert doc["SYNTHETIC"]["n"] == 2
    # The hooks are off again: torch's backward is its own.
    assert torch.autograd.backward.__module__ == "torch.autograd"


def test_a_script_that_ends_during_the_diagnostic_windows_keeps_a_complete_run(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    made = make_session(clock, batches=40, global_={"whatif": True})
    _train(made.session, clock, stop_in_diagnostics=2)
    made.session.at_exit()
    doc = read_json(made.session)
    assert doc["complete"] is True and doc["interrupted"] == [] and doc["verdict"]
    assert "PARTS_1: the script ended before it was complete" in doc["diagnostics"]["skipped"]
    assert made.exits == []  # at the interpreter's exit benchy ends nothing
    assert torch.autograd.backward.__module__ == "torch.autograd"


def test_whatif_false_has_no_diagnostic_window(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    made = make_session(clock, batches=40, global_={"whatif": False})
    _train(made.session, clock)
    doc = read_json(made.session)
    assert doc["diagnostics"] is None and doc["whatif"] is None and "PARTS" not in made.stream.getvalue()


def test_contention_where_no_process_can_be_forked_is_left_out_and_says_why(monkeypatch) -> None:
    # Where fork does not exist (Windows), multiprocessing raises ValueError when the drainer is made: the window is
    # left out with the error, and the user's loop goes on.
    from types import SimpleNamespace

    from benchy.core.results import RunResults
    from benchy.session.sides import windows

    class NoFork:
        def __init__(self, *args, **kwargs) -> None:
            raise ValueError("cannot find context for 'fork'")

    monkeypatch.setattr(windows, "Drainer", NoFork)
    env = SimpleNamespace(workers=2, runner=SimpleNamespace(queue_depth=4, own=SimpleNamespace(fresh=lambda: iter(()))))
    helper, results = windows.Contention().start(env, RunResults())
    assert helper is None
    assert [r.words() for r in results.diagnostics_skipped] == ["CONTENTION: raised ValueError: cannot find context for 'fork'"]


def test_contention_of_a_loop_that_takes_its_batches_in_bursts_is_the_windows_mean_step() -> None:
    # A loop that takes an update's micro-batches at once (a Trainer with gradient accumulation 2): its periods are a
    # fetch (30 us) and two steps (8.97 ms). Their median is a fetch; the window's mean, 4.5 ms, is the step's time.
    # A steady loop keeps the median (the waits for a core a loader flat out gives the step come in bursts).
    from array import array
    from types import SimpleNamespace

    from benchy.core.results import RunResults, TrialResult
    from benchy.core.schedule import Mode, TrialSpec
    from benchy.session.sides import windows

    def contention(periods: list) -> float:
        result = TrialResult(TrialSpec(Mode.SYNTHETIC, 1, False, 24, variant="CONTENTION"), 96, sum(periods), array("f", periods))
        helper = SimpleNamespace(stop=lambda: None, batches=20, seconds=sum(periods), ended=None, workers=2)
        found = windows.Contention().finish(SimpleNamespace(), helper, result, RunResults(), len(periods) + 1).contention
        assert found is not None and found.workers == 2
        return found.period

    assert contention([0.00003, 0.00897] * 12) == pytest.approx(0.0045, rel=1e-3)
    assert contention([0.008] * 18 + [0.020] * 6) == pytest.approx(0.008, rel=1e-3)  # the median, not the mean 0.011


def test_the_parts_are_a_step_s_own_however_slow_the_loader_is(tmp_path, monkeypatch) -> None:
    # On virtual time: forward 5 ms, backward 3 ms, the optimizer's step 1 ms and 2 ms more of the loop a step, beside a
    # loader that takes 0.2 s a batch. The PARTS window hands out the cached batch and takes the loader's own batches
    # it stands in for between its steps, in no period: the parts are a step's, not diluted by those fetches.
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    made = make_session(clock, fetch=0.2, batches=40, global_={"whatif": True})

    class Timed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            clock.now += 0.003
            return grad

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            clock.now += 0.005
            return Timed.apply(self.linear(x))

    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step_costs(*_: object) -> None:  # after the hooks' own pre-hook: inside the step they time
        clock.now += 0.001

    optimizer.register_step_pre_hook(step_costs)
    x = torch.ones(2, 4)
    while not made.session.done:
        for _batch in made.session.iterate():
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
            clock.now += 0.002
    parts = made.session.results.parts
    assert parts is not None and parts.period == pytest.approx(0.011)
    assert (parts.forward, parts.backward, parts.optimizer, parts.rest) == pytest.approx((0.005, 0.003, 0.001, 0.002))
