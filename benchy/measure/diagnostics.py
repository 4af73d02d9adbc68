"""What runs beside the two diagnostic windows at the schedule's end (needs torch; never in a counted trial).

* ``PARTS_1``: the step on the cached batch, with hooks on every module's forward (the outermost
  call timed), on ``torch.autograd.backward`` and on every optimizer's ``step``
  (:class:`StepHooks`): the step's time split into forward, backward, optimizer step and the rest
  of the loop, zero edit. Hooks cost microseconds a call, so only this window has them.
* ``CONTENTION_1``: the step on the cached batch while a thread takes batches from benchy's own
  pass over the real loader as fast as it gives them, and drops them (:class:`Drainer`): the loader's
  workers and the main process's receiving run beside the step, as in FULL, without the step
  waiting for them. Its step time against SYNTHETIC's is how much the loader slows the step.

With an accelerator in use the hooks synchronize it, so that each part holds its device work.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, List, Optional

from .device import synchronizer

__all__ = ["Drainer", "PartTimes", "StepHooks"]


class PartTimes:
    """Seconds spent in each part while the hooks were on, and for how long they were on."""

    __slots__ = ("backward", "backwards", "forward", "forwards", "optimizer", "seconds", "steps")

    def __init__(self) -> None:
        self.forward = self.backward = self.optimizer = self.seconds = 0.0
        self.forwards = self.backwards = self.steps = 0


class StepHooks:
    """Global hooks that time the outermost forward, each backward and each optimizer step."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.times = PartTimes()
        self._clock = clock
        self._handles: List[Any] = []
        self._depth = 0
        self._t_forward = 0.0
        self._t_optimizer = 0.0
        self._original: Any = None
        self._wrapper: Any = None
        self._installed_at: Optional[float] = None
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
        self._installed_at = self._clock()

    def remove(self) -> PartTimes:
        """Take the hooks off; the times they gathered."""
        if self._installed_at is None:
            return self.times
        import torch

        for handle in self._handles:
            handle.remove()
        self._handles = []
        if torch.autograd.backward is self._wrapper:
            torch.autograd.backward = self._original
        self.times.seconds = self._clock() - self._installed_at
        self._installed_at = None
        return self.times

    def _forward_pre(self, module: Any, args: Any) -> None:
        if self._depth == 0:
            self._sync()
            self._t_forward = self._clock()
        self._depth += 1

    def _forward_post(self, module: Any, args: Any, output: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0:
            self._sync()
            self.times.forward += self._clock() - self._t_forward
            self.times.forwards += 1

    def _backward(self, *args: Any, **kwargs: Any) -> Any:
        self._sync()
        began = self._clock()
        try:
            return self._original(*args, **kwargs)
        finally:
            self._sync()
            self.times.backward += self._clock() - began
            self.times.backwards += 1

    def _optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._sync()
        self._t_optimizer = self._clock()

    def _optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._sync()
        self.times.optimizer += self._clock() - self._t_optimizer
        self.times.steps += 1


class Drainer:
    """A thread that takes batches from ``next_batch`` (benchy's own pass, its iterator made by the caller
    on the main thread) until stopped or the pass ends, and drops them."""

    JOIN_SECONDS = 30.0

    def __init__(self, next_batch: Callable[[], Any], clock: Callable[[], float] = time.perf_counter) -> None:
        self._next = next_batch
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="benchy-contention", daemon=True)
        self.batches = 0
        self.seconds = 0.0
        self.ended: Optional[str] = None  # why it stopped before it was told to

    def start(self) -> None:
        self._began = self._clock()
        self._thread.start()

    def _run(self) -> None:
        take, stop = self._next, self._stop
        try:
            while not stop.is_set():
                take()
                self.batches += 1
        except StopIteration:
            self.ended = "the loader's pass ended"
        except Exception as err:  # the loader failing here costs only this diagnosis
            self.ended = f"the loader raised {type(err).__name__}: {err}"
        self.seconds = self._clock() - self._began

    def stop(self) -> None:
        """Tell the thread to stop after the batch it waits for; wait for it (at most :data:`JOIN_SECONDS`)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.JOIN_SECONDS)
        if not self.seconds:
            self.seconds = self._clock() - self._began

    @property
    def rate(self) -> float:
        """Batches a second it took."""
        return self.batches / self.seconds if self.seconds > 0 else 0.0
