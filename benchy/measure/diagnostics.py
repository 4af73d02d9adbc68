"""What runs beside the two diagnostic windows at the schedule's end (needs torch; never in a counted trial):
``PARTS_1``'s hooks (:class:`StepHooks`: they cost microseconds a call, so only this window has them) and
``CONTENTION_1``'s loader beside the step (:class:`Drainer`); see docs/guide/whatif.md.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, List, Optional

from ..core.outcomes import Reason, Why, raised
from .device import synchronizer


class StepHooks:
    """Global hooks that time the outermost forward, each ``torch.autograd.backward`` and each optimizer step (zero
    edit); with an accelerator in use they synchronize it, so that each part holds its device work. Then the seconds
    spent in each part while the hooks were on, and how many of each ran."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.forward = self.backward = self.optimizer = 0.0
        self.forwards = self.backwards = self.steps = 0
        self._clock = clock
        self._handles: List[Any] = []
        self._depth = 0
        self._t_forward = 0.0
        self._t_optimizer = 0.0
        self._original: Any = None
        self._wrapper: Any = None
        self._installed = False
        self._sync: Callable[[], None] = lambda: None
        self.error: Optional[str] = None

    def install(self) -> None:
        import torch
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim

        self._sync = synchronizer()
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._forward_pre),
            nn_module.register_module_forward_hook(self._forward_post),
            optim.register_optimizer_step_pre_hook(self._optimizer_pre),
            optim.register_optimizer_step_post_hook(self._optimizer_post),
        ]
        self._original = torch.autograd.backward
        self._wrapper = self._backward  # one bound method: what remove() finds in its place
        torch.autograd.backward = self._wrapper  # Tensor.backward calls it by name
        self._installed = True

    def remove(self) -> StepHooks:
        if not self._installed:
            return self
        import torch

        for handle in self._handles:
            handle.remove()
        self._handles = []
        if torch.autograd.backward is self._wrapper:
            torch.autograd.backward = self._original
        self._installed = False
        return self

    def _forward_pre(self, module: Any, args: Any) -> None:
        if self._depth == 0:
            self._sync()
            self._t_forward = self._clock()
        self._depth += 1

    def _forward_post(self, module: Any, args: Any, output: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0:
            self._sync()
            self.forward += self._clock() - self._t_forward
            self.forwards += 1

    def _backward(self, *args: Any, **kwargs: Any) -> Any:
        self._sync()
        began = self._clock()
        try:
            return self._original(*args, **kwargs)
        finally:
            self._sync()
            self.backward += self._clock() - began
            self.backwards += 1

    def _optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._sync()
        self._t_optimizer = self._clock()

    def _optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._sync()
        self.optimizer += self._clock() - self._t_optimizer
        self.steps += 1


_PASS_ENDED = "<pass-ended>"  # what the child says when the pass ran out (an exception's ``Type: message`` never is)


def _no_accelerator() -> None:
    """In the forked child: CUDA cannot be used after a fork, so the child's pass sees no accelerator and takes its
    batches unpinned (pinning is the training process's work in FULL). Its warnings are not the user's."""
    import warnings

    warnings.simplefilter("ignore")
    torch = sys.modules.get("torch")
    if torch is None:
        return
    for owner in (getattr(torch, "accelerator", None), getattr(torch, "cuda", None)):
        if owner is not None and callable(getattr(owner, "is_available", None)):
            owner.is_available = lambda: False


class Drainer:
    """A forked process that takes batches from a new pass of the loader as fast as they come (or one every ``pace``
    seconds), and drops them. The training process runs no thread for it: its step meets the loader's workers on
    the cores and the memory bus as in FULL, and receiving the batches (FULL's, between steps) costs it nothing."""

    JOIN_SECONDS = 30.0

    def __init__(
        self, make: Callable[[], Any], clock: Callable[[], float] = time.perf_counter, *, workers: int = 0, pace: float = 0.0
    ) -> None:
        import multiprocessing

        self._make = make
        self.workers = workers  # the loader's workers in the child
        self.pace = pace  # seconds between the batches it takes (0: as fast as they come)
        self._clock = clock
        context = multiprocessing.get_context("fork")  # raises ValueError where fork does not exist
        self._stop = context.Event()
        self._count = context.Value("q", 0)
        self._ended: Any = context.Array("c", 512)  # a char array: its .value is the bytes up to the first NUL
        self._process = context.Process(target=self._run, name="benchy-contention", daemon=False)
        self.batches = 0
        self.seconds = 0.0
        self.ended: Optional[Reason] = None  # why it stopped before it was told to
        self._began = 0.0

    def start(self) -> None:
        self._began = self._clock()
        self._process.start()

    def _run(self) -> None:  # in the child
        import os

        why = ""
        iterator: Any = None
        try:
            _no_accelerator()
            iterator = iter(self._make())
            take, stop, count, pace, clock = iterator.__next__, self._stop, self._count, self.pace, self._clock
            due = clock()
            while not stop.is_set():
                take()
                with count.get_lock():
                    count.value += 1
                if pace > 0:  # one batch a step, as the loop takes them: the workers idle when they are ahead
                    due = max(due + pace, clock() - pace)
                    stop.wait(max(0.0, due - clock()))
        except StopIteration:
            why = _PASS_ENDED
        except BaseException as err:  # the loader failing here costs only this diagnosis
            why = raised(err)
        try:
            self._ended.value = why.encode("utf-8", "replace")[:511]
            shutdown = getattr(iterator, "_shutdown_workers", None)
            if callable(shutdown):
                shutdown()
        finally:
            os._exit(0)  # none of the training process's exit handlers run here

    def wait_running(self, batches: int = 1, timeout: float = 60.0) -> bool:
        """Wait until the process took ``batches`` batches or ended; False: neither in ``timeout`` seconds."""
        end = self._clock() + timeout
        while self._clock() < end:
            if self._count.value >= batches or not self._process.is_alive():
                return True
            time.sleep(0.005)
        return False

    def ended_by_itself(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to end without being told (its pass ended, or failed)."""
        self._process.join(timeout)
        return not self._process.is_alive()

    def stop(self) -> None:
        """Tell the process to stop after the batch it waits for; wait for it (at most :data:`JOIN_SECONDS`)."""
        self._stop.set()
        self.seconds = self._clock() - self._began
        self._process.join(self.JOIN_SECONDS)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        self.batches = int(self._count.value)
        found = self._ended.value.decode("utf-8", "replace")
        self.ended = (
            None
            if not found
            else Reason(Why.PASS_ENDED)
            if found == _PASS_ENDED
            else Reason(Why.DRAINER_RAISED, label="CONTENTION_1", error=found)
        )
