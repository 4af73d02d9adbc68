"""The diagnostic windows' helpers: hooks that split the step, and the thread that drains the loader."""

from __future__ import annotations

import time

import pytest
import torch
from helpers import FakeClock

from benchy.core.diagnostics import StepParts
from benchy.core.outcomes import Reason, Why
from benchy.measure.diagnostics import Drainer, StepHooks


class _Slow(torch.autograd.Function):
    """Identity whose backward takes 5 ms of fake time."""

    clock: FakeClock

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x.clone()

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        _Slow.clock.now += 0.005
        return grad


class _Inner(torch.nn.Module):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock, self.lin = clock, torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += 0.001
        return self.lin(x)


class _Outer(torch.nn.Module):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock, self.inner = clock, _Inner(clock)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += 0.002
        return _Slow.apply(self.inner(x))


def test_the_hooks_time_the_outermost_forward_each_backward_and_each_optimizer_step() -> None:
    clock = FakeClock()
    _Slow.clock = clock
    model = _Outer(clock)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    hooks = StepHooks(clock)
    hooks.install()
    try:
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
            clock.now += 0.010  # the rest of the loop
    finally:
        times = hooks.remove()
    assert times.forwards == 3 and times.backwards == 3 and times.steps == 3  # the inner module is not counted apart
    assert abs(times.forward - 0.009) < 1e-9  # 2 ms + 1 ms inside, three times
    assert abs(times.backward - 0.015) < 1e-9
    assert times.optimizer == 0.0  # no fake time passes in SGD
    parts = StepParts.from_times("PARTS_1", 0.018, 3, 3, times.forward, times.backward, times.optimizer, (3, 3, 3))
    assert (parts.forward, parts.backward, parts.rest) == pytest.approx((0.003, 0.005, 0.010))  # a step's own
    assert torch.autograd.backward.__module__ == "torch.autograd"
    model(torch.ones(1, 2)).sum().backward()  # the hooks are gone: nothing more is counted
    assert times.forwards == 3 and times.backwards == 3


def test_the_drainer_takes_batches_in_a_process_of_its_own_until_told_to_stop_or_the_pass_ends() -> None:
    drainer = Drainer(lambda: iter(range(10**9)))
    drainer.start()
    time.sleep(0.3)
    drainer.stop()
    # margin: a fork and a range's items (a microsecond each): 100 of them in 0.3 s fails only if the forked process
    # waits 0.3 s for a core, which a spinning core and the suite's other worker leave it within milliseconds.
    assert drainer.batches > 100 and drainer.ended is None and drainer.seconds > 0
    short = Drainer(lambda: iter(range(5)))
    short.start()
    assert short.ended_by_itself(30)
    short.stop()
    assert short.batches == 5 and short.ended == Reason(Why.PASS_ENDED)
    assert short.ended.words() == "the loader's pass ended"
    failing = Drainer(lambda: (1 / 0 for _ in range(3)))
    failing.start()
    assert failing.ended_by_itself(30)
    failing.stop()
    assert failing.batches == 0 and failing.ended is not None and failing.ended.why is Why.DRAINER_RAISED
    assert failing.ended.words() == "the loader raised ZeroDivisionError: division by zero"


def test_a_paced_drainer_takes_at_most_a_batch_a_step() -> None:
    # Paced at 20 ms (a step's time), the drainer of an endless, instant pass takes a batch every 20 ms at most: its
    # loader's workers idle when they are ahead, as in FULL. A busy machine can only make it take fewer.
    drainer = Drainer(lambda: iter(range(10**9)), pace=0.02)
    drainer.start()
    time.sleep(0.4)
    drainer.stop()
    assert 1 <= drainer.batches <= drainer.seconds / 0.02 + 2, (drainer.batches, drainer.seconds)
    assert drainer.ended is None


def test_the_drainers_pass_sees_no_accelerator_in_its_forked_process() -> None:
    # After a fork, CUDA cannot be used (torch raises "Cannot re-initialize CUDA in forked subprocess" when a
    # DataLoader pins its batches): the child's pass sees no accelerator, and the training process still does.
    before = torch.accelerator.is_available()
    seen = Drainer(lambda: iter([1] if torch.accelerator.is_available() or torch.cuda.is_available() else range(3)))
    seen.start()
    assert seen.ended_by_itself(30)
    seen.stop()
    assert seen.batches == 3, "the child saw an accelerator"
    assert torch.accelerator.is_available() == before
