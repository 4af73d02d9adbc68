"""Stage timing of a DataLoader: an instrumented copy of it, and the diagnostic trial loop that reads it.

The copy is a new DataLoader over the same dataset, sampler and collate function (the loader's own is never
touched): the dataset's items are timed, its transforms step by step on a shallow copy of it, and ``collate_fn``
hands back ``(Arrival, batch, Done)``: the worker's sums, and marks that stamp their unpickling and pinning in the
main process. Every clock is ``time.perf_counter`` (CLOCK_MONOTONIC on Linux: one clock for all processes).
"""

from __future__ import annotations

import copy
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from torch.utils.data import IterableDataset

from ..core.stages import StageTrial

_clock = time.perf_counter
_cpu = time.thread_time


class _Sums:
    """One process's running sums for the batch being made (seconds per stage slot)."""

    __slots__ = ("cpu", "items", "seconds", "start")

    def __init__(self, slots: int) -> None:
        self.seconds = [0.0] * slots
        self.cpu = 0.0
        self.start = 0.0  # the first item's start (0: none yet)
        self.items = 0

    def add(self, t0: float, t1: float, cpu: float, items: int) -> None:
        self.seconds[0] += t1 - t0
        self.cpu += cpu
        self.items += items
        if not self.start:
            self.start = t0

    def reset(self) -> None:
        self.seconds[:] = [0.0] * len(self.seconds)
        self.cpu = 0.0
        self.start = 0.0
        self.items = 0


class Done:
    """Last element of an instrumented batch: stamps the end of its unpickling and of its pinning."""

    __slots__ = ("pinned", "received", "received_cpu")

    def __init__(self) -> None:
        self.received = float("nan")  # when the main process (or the pin thread) unpickled it
        self.received_cpu = float("nan")  # ... that thread's CPU time then
        self.pinned = float("nan")  # when pin_memory reached it

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_unpickled, (Done,))

    def pin_memory(self, *_: Any) -> Any:
        self.pinned = _clock()
        return self


class Arrival(Done):
    """First element of an instrumented batch: the worker's sums for it; stamps its unpickling."""

    __slots__ = ("cpu", "end", "items", "seconds", "start", "worker")

    def __init__(self, worker: int, start: float, end: float, seconds: Tuple[float, ...], cpu: float, items: int) -> None:
        super().__init__()
        self.worker, self.start, self.end, self.seconds, self.cpu, self.items = worker, start, end, seconds, cpu, items

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_unpickled, (Arrival, self.worker, self.start, self.end, self.seconds, self.cpu, self.items))


def _unpickled(kind: Any, *args: Any) -> Done:
    mark = kind(*args)
    mark.received_cpu = _cpu()
    mark.received = _clock()
    return mark


class _TimedStep:
    """One transform (or one step of a Compose) timed into a slot."""

    def __init__(self, fn: Callable[..., Any], sums: _Sums, slot: int) -> None:
        self.fn, self.sums, self.slot = fn, sums, slot

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0 = _clock()
        out = self.fn(*args, **kwargs)
        self.sums.seconds[self.slot] += _clock() - t0
        return out

    def __repr__(self) -> str:
        return repr(self.fn)


def step_name(fn: Any) -> str:
    """A transform's name: its class's, or a function's own."""
    name = getattr(fn, "__name__", None)
    return (
        str(name)
        if isinstance(name, str)
        and not isinstance(fn, type)
        and callable(fn)
        and type(fn).__name__ in ("function", "builtin_function_or_method", "method", "partial")
        else type(fn).__name__
    )


class StagePlan:
    """The stage slots of an instrumented loader: 0 the dataset's ``__getitem__`` in all, then each transform step."""

    def __init__(self) -> None:
        self.names: List[str] = []  # transform steps, in slot order from 1
        self.split = ""  # how the dataset's transforms were found, or why not

    def add(self, name: str) -> int:
        taken = set(self.names)
        unique, k = name, 2
        while unique in taken:
            unique, k = f"{name}#{k}", k + 1
        self.names.append(unique)
        return len(self.names)  # slot (0 is the dataset)


_TRANSFORM_ATTRS = ("transform", "target_transform")
_UNWRAP_DEPTH = 3  # Subset(ConcatDataset-free wrappers) of a dataset with the transforms


def _split_transforms(dataset: Any, plan: StagePlan, sums: _Sums, depth: int = 0) -> Any:
    """A shallow copy of ``dataset`` (or of the one a ``Subset`` wraps) whose transforms are timed steps; what
    cannot be copied is left as it is, its transforms in the dataset's own time (:attr:`StagePlan.split` says so)."""
    found = [a for a in _TRANSFORM_ATTRS if callable(getattr(dataset, a, None))]
    if not found:
        inner = getattr(dataset, "dataset", None)
        if inner is not None and depth < _UNWRAP_DEPTH and hasattr(inner, "__getitem__"):
            new_inner = _split_transforms(inner, plan, sums, depth + 1)
            if new_inner is inner:
                return dataset
            try:
                outer = copy.copy(dataset)
                outer.dataset = new_inner
                return outer
            except Exception as err:
                plan.split = f"its wrapper {type(dataset).__name__} could not be copied ({type(err).__name__})"
                return dataset
        if not plan.split:
            plan.split = f"{type(dataset).__name__} has no transform or target_transform attribute"
        return dataset
    try:
        copied = copy.copy(dataset)
    except Exception as err:
        plan.split = f"{type(dataset).__name__} could not be copied ({type(err).__name__}: {err})"
        return dataset
    replaced: List[str] = []
    for attr in found:
        fn = getattr(dataset, attr)
        steps = getattr(fn, "transforms", None)
        if isinstance(steps, (list, tuple)) and steps and all(callable(s) for s in steps):
            try:
                composed = copy.copy(fn)
                base = len(plan.names) + 1
                timed = [_TimedStep(s, sums, base + k) for k, s in enumerate(steps)]
                composed.transforms = timed if isinstance(steps, list) else tuple(timed)
                setattr(copied, attr, composed)
            except Exception:  # a Compose that cannot be copied or changed: timed whole, below
                pass
            else:
                for step in steps:
                    plan.add(f"{attr} {step_name(step)}")
                replaced.append(attr)
                continue
        name = attr if attr == "target_transform" else f"{attr} {step_name(fn)}"
        try:
            setattr(copied, attr, _TimedStep(fn, sums, len(plan.names) + 1))
        except Exception:  # a read-only attribute (a property without a setter): left in the dataset's time
            continue
        plan.add(name)
        replaced.append(attr)
    if not replaced:
        plan.split = f"{type(dataset).__name__}'s {' and '.join(found)} could not be replaced (read-only)"
        return dataset
    plan.split = f"{type(dataset).__name__}'s " + " and ".join(replaced)
    return copied


class _Forwarding:
    """A timed wrapper of a dataset: its other attributes are the dataset's."""

    def __init__(self, inner: Any, sums: _Sums) -> None:
        self.inner, self.sums = inner, sums

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "sums", "seconds") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)


class _TimedMap(_Forwarding):
    """A map-style dataset whose ``__getitem__`` is timed (wall and this thread's CPU)."""

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, index: Any) -> Any:
        c0, t0 = _cpu(), _clock()
        out = self.inner[index]
        t1 = _clock()
        self.sums.add(t0, t1, _cpu() - c0, 1)
        return out


class _TimedBatchedMap(_TimedMap):
    """A map-style dataset with ``__getitems__``: the whole call is the dataset's time."""

    def __getitems__(self, indices: Sequence[Any]) -> Any:
        c0, t0 = _cpu(), _clock()
        out = self.inner.__getitems__(indices)
        t1 = _clock()
        self.sums.add(t0, t1, _cpu() - c0, len(indices))
        return out


class _TimedIterableDataset(_Forwarding, IterableDataset):
    """An iterable dataset, each item timed (module-level, so that a ``spawn`` worker can unpickle it)."""

    def __iter__(self) -> Iterator[Any]:
        sums = self.sums
        it = iter(self.inner)
        while True:
            c0, t0 = _cpu(), _clock()
            try:
                item = next(it)
            except StopIteration:
                return
            t1 = _clock()
            sums.add(t0, t1, _cpu() - c0, 1)
            yield item


class _TimedCollate:
    """The loader's collate function; closes the batch's record (see the module's docstring)."""

    def __init__(self, fn: Callable[[Any], Any], sums: _Sums) -> None:
        self.fn, self.sums = fn, sums

    def __call__(self, samples: Any) -> Tuple[Arrival, Any, Done]:
        from torch.utils.data import get_worker_info

        t0 = _clock()
        batch = self.fn(samples)
        t1 = _clock()
        sums = self.sums
        info = get_worker_info()
        mark = Arrival(
            -1 if info is None else int(info.id), sums.start or t0, t1, tuple(sums.seconds) + (t1 - t0,), sums.cpu, sums.items
        )
        sums.reset()
        return (mark, batch, Done())


class _TimedSampler(_Forwarding):
    """The (batch) sampler, iterated in the main process: time per index (batch) handed out."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, _Sums(0))
        self.seconds = 0.0

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[Any]:
        it = iter(self.inner)
        while True:
            t0 = _clock()
            try:
                item = next(it)
            except StopIteration:
                return
            self.seconds += _clock() - t0
            yield item


class Instrumented:
    """An instrumented copy of a DataLoader: the loader to drain, its plan and its sampler's timer."""

    def __init__(self, loader: Any, plan: StagePlan, sampler: Optional[_TimedSampler], workers: int, pin_memory: bool) -> None:
        self.loader, self.plan, self.sampler = loader, plan, sampler
        self.workers, self.pin_memory = workers, pin_memory


def instrument(arguments: Dict[str, Any]) -> Instrumented:
    """A new DataLoader from a DataLoader's bound constructor ``arguments``, with timed pieces; never persistent."""
    from torch.utils.data import DataLoader, default_collate

    dataset = arguments["dataset"]
    iterable = isinstance(dataset, IterableDataset)
    plan = StagePlan()
    sums = _Sums(1)
    split = _split_transforms(dataset, plan, sums)
    sums.seconds = [0.0] * (1 + len(plan.names))
    timed_ds: Any
    if iterable:
        timed_ds = _TimedIterableDataset(split, sums)
    else:
        timed_ds = (_TimedBatchedMap if callable(getattr(split, "__getitems__", None)) else _TimedMap)(split, sums)
    collate = arguments.get("collate_fn") or default_collate
    if arguments.get("batch_size", 1) is None and arguments.get("batch_sampler") is None and arguments.get("collate_fn") is None:
        from torch.utils.data import default_convert

        collate = default_convert  # what DataLoader uses without automatic batching
    made = dict(arguments, dataset=timed_ds, collate_fn=_TimedCollate(collate, sums), persistent_workers=False)
    loader = DataLoader(**made)
    timed_sampler: Optional[_TimedSampler] = None
    if not iterable:
        attr = "batch_sampler" if loader.batch_sampler is not None else "sampler"
        timed_sampler = _TimedSampler(getattr(loader, attr))
        object.__setattr__(loader, attr, timed_sampler)  # DataLoader forbids it after __init__; this copy is ours
    workers = int(getattr(loader, "num_workers", 0) or 0)
    return Instrumented(loader, plan, timed_sampler, workers, bool(getattr(loader, "pin_memory", False)))


def stage_trial(
    label: str, warmup: bool, nbatches: int, fetch: Callable[[], Any], counter: Callable[[Any], int], made: Instrumented
) -> StageTrial:
    """Drain ``nbatches`` instrumented batches (``fetch`` starts passes as needed)."""
    slots = 1 + len(made.plan.names) + 1  # dataset, transform steps, collate
    asked = np.empty(nbatches)
    got = np.empty(nbatches)
    samples = 0
    sampler_before = made.sampler.seconds if made.sampler is not None else 0.0
    marks: List[Tuple[Arrival, Done]] = []
    begin = _clock()
    for k in range(nbatches):
        a = _clock()
        item = fetch()
        g = _clock()
        asked[k], got[k] = a, g
        if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], Arrival)):
            raise TypeError(
                f"benchy: an instrumented batch should be (Arrival, batch, Done); got {type(item).__name__} "
                f"(a loader that rebuilds its batches after collate_fn cannot be timed stage by stage)"
            )
        arrival, batch, done = item
        samples += counter(batch)
        marks.append((arrival, done))
    seconds = _clock() - begin
    work = np.zeros((nbatches, slots))
    for k, (arrival, _) in enumerate(marks):
        work[k, : len(arrival.seconds)] = arrival.seconds

    def each(name: str, dtype: Any = np.float64) -> np.ndarray[Any, Any]:
        return np.array([getattr(arrival, name) for arrival, _ in marks], dtype=dtype).reshape(nbatches)

    def both(name: str) -> np.ndarray[Any, Any]:
        return np.array([(getattr(arrival, name), getattr(done, name)) for arrival, done in marks]).reshape(nbatches, 2)

    sampler = (made.sampler.seconds - sampler_before) if made.sampler is not None else 0.0
    return StageTrial(
        label=label,
        warmup=warmup,
        seconds=seconds,
        samples=samples,
        names=tuple(made.plan.names),
        asked=asked,
        got=got,
        worker=each("worker", np.int64),
        start=each("start"),
        end=each("end"),
        work=work,
        dataset_cpu=each("cpu"),
        received=both("received"),
        pinned=both("pinned"),
        items=each("items", np.int64),
        sampler_seconds=sampler,
        workers=made.workers,
        pin_memory=made.pin_memory,
        received_cpu=both("received_cpu"),
    )


def has_in_order() -> bool:
    """Whether the installed torch's DataLoader takes ``in_order`` (torch 2.6 and later)."""
    import inspect

    from torch.utils.data import DataLoader

    return "in_order" in inspect.signature(DataLoader.__init__).parameters


class Steps:
    """A torchvision-style ``Compose``, as the stage trials find it: what :func:`timer_cost` times."""

    def __init__(self, transforms: List[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x


def timer_cost(steps: int, n: int = 2000) -> float:
    """The timers' own cost per sample (seconds) with ``steps`` timed transform steps (best of three)."""

    class _Plain:
        def __init__(self, transform: Callable[[Any], Any]) -> None:
            self.transform = transform

        def __len__(self) -> int:
            return n

        def __getitem__(self, i: int) -> Any:
            return self.transform(i)

    plain = _Plain(Steps([lambda x: x] * steps))
    plan, sums = StagePlan(), _Sums(1)
    timed = _TimedMap(_split_transforms(plain, plan, sums), sums)
    sums.seconds = [0.0] * (1 + len(plan.names))

    def read(ds: Any) -> float:
        best = float("inf")
        for _ in range(3):
            t0 = _clock()
            for i in range(n):
                ds[i]
            best = min(best, _clock() - t0)
        return best

    return max(0.0, (read(timed) - read(plain)) / n)
