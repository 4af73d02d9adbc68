"""The two wrappers a script swaps in: glue between a loader and a :class:`Session`."""

from __future__ import annotations

import collections.abc
import inspect
import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple, TypeVar

from torch.utils.data import DataLoader

from ..core.config import Config, ConfigLike
from ..core.sweep import Setting, queue_depth
from ..measure.rng import loader_streams
from ..measure.stages import Instrumented, instrument
from ..results.configfile import resolve_config
from ..session.registry import creation_site
from ..session.session import LoaderFacts, Session
from ..session.trials import OwnPasses

T = TypeVar("T")
WORKER_TIMEOUT = 120.0  # seconds a batch the copy of a loader without workers may take in a worker of its own


@dataclass(frozen=True)
class _Made:
    """What a wrapper was built with, kept so that a copy can be built the same way."""

    config: Config
    where: str
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)
    finished: bool = False  # a copy's: the original's benchmark was over when it was copied


class _Wrapped:
    """What both wrappers share: their session, built from what they were made with, and copies.

    The rule for what a copy measures (``copy.copy``, ``copy.deepcopy``, ``pickle``): a copy is a
    new wrapper over the same loader with the same config and no measurements of its own. Copied
    before the original's benchmark ran (a loader pickled to the processes
    ``torch.multiprocessing.spawn`` starts), it runs the benchmark when it is iterated first, under
    the one-benchmark-per-process rule (see ``session.registry``). Copied while the benchmark runs,
    it is plain unless that benchmark finishes first; copied after it finished, it is the plain
    loader for good. The session itself (clocks, threads, open iterators) is never copied.
    """

    _benchy: Session
    _benchy_made: _Made

    def _new_session(self, made: _Made) -> Session:
        raise NotImplementedError

    def _benchy_start(self, made: _Made) -> None:
        self._benchy_made = made
        self._benchy = self._new_session(made)
        if made.finished:
            self._benchy.retire()

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        session = state.pop("_benchy")
        made = state["_benchy_made"]
        state["_benchy_made"] = replace(made, finished=made.finished or session.copied())
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        made = state.pop("_benchy_made")
        self.__dict__.update(state)
        where = made.where if made.where.endswith(" (a copy)") else made.where + " (a copy)"
        self._benchy_start(replace(made, where=where))

    def __iter__(self) -> Iterator[Any]:
        return self._benchy.iterate()

    @property
    def benchy(self) -> Session:
        """The benchmark session (results, schedule, state)."""
        return self._benchy


class BenchmarkDataLoader(_Wrapped, DataLoader):  # type: ignore[misc]
    """A ``torch.utils.data.DataLoader`` that runs benchy's trials in the loop that iterates it.

    Takes exactly the DataLoader's arguments (plus an optional ``benchy_config``: a
    :class:`benchy.Config`, a mapping of overrides, or a YAML path; by default
    ``$BENCHY_CONFIG_FILE`` or the defaults). The config is validated here, before any
    trial runs. The IO trials run on passes of benchy's own before the first batch; the
    SYNTHETIC and FULL trials are windows of steps in the loop's epochs, which keep their
    length; ``len()`` is the DataLoader's own throughout.
    """

    def __init__(self, *args: Any, benchy_config: ConfigLike = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._benchy_start(_Made(resolve_config(benchy_config), creation_site(), args, kwargs))

    def _new_session(self, made: _Made) -> Session:
        return dataloader_session(self, made.config, made.args, made.kwargs, type(self).__name__, made.where, DataLoader.__iter__)


def weakly(target: Any, call: Callable[[Any], T]) -> Callable[[], T]:
    """``call(target)``, holding ``target`` by a weak reference only.

    A session must not keep its loader alive: a plain DataLoader that the script drops is freed at
    once, and with it its persistent workers; a session holding the loader would make a cycle that
    only the cyclic garbage collector breaks, at an arbitrary later moment (inside someone's timing).
    """
    ref = weakref.ref(target)

    def bound() -> T:
        found = ref()
        if found is None:
            raise ReferenceError("benchy: the loader this benchmark reads was garbage-collected")
        return call(found)

    return bound


def dataloader_session(
    loader: DataLoader,
    config: Config,
    args: Tuple[Any, ...],
    kwargs: Dict[str, Any],
    kind: str,
    where: str,
    plain_iter: Callable[[Any], Iterator[Any]],
) -> Session:
    """The benchmark session of a DataLoader (the drop-in wrapper's, or the one ``benchy run`` chose):
    what the DataLoader says of its workers and batches, and its constructor arguments for a sweep.
    ``plain_iter(loader)``: the loader's own iterator (the DataLoader's ``__iter__``)."""
    try:
        variants: Optional[LoaderSweeper] = LoaderSweeper(loader, args, kwargs)
    except TypeError:  # arguments DataLoader's own signature does not take (a subclass's): no variants
        if config.sweep.enabled:
            raise
        variants = None
    facts = LoaderFacts(
        weakly(loader, plain_iter),
        loader.batch_size,
        kind,
        where,
        queue_depth=_queue_depth(loader),
        workers=_workers(loader),
        persistent=bool(getattr(loader, "persistent_workers", False)),
        length=weakly(loader, lambda found: _length(found, DataLoader.__len__)),
        batch_samples=_fixed_batch(loader),
        sweeper=variants if config.sweep.enabled else None,
        instrument=None if variants is None else variants.instrumented,
        own=weakly(loader, lambda found: own_passes(found, plain_iter)),
        streams=weakly(loader, loader_streams),
        owner=weakref.ref(loader),
    )
    return Session(config, facts)


def own_passes(loader: DataLoader, plain_iter: Callable[[Any], Iterator[Any]]) -> OwnPasses:
    """benchy's own passes over a DataLoader, apart from the loop's. A loader with persistent workers
    keeps one iterator for all of the loop's epochs (its ``iter()`` resets it): benchy's passes get an
    iterator of their own (``DataLoader._get_iterator``), reset for each further pass and shut down when
    benchy is done with it, so the loop's is never reset under it and its workers' seeds are drawn as
    without benchy."""
    found: Callable[[], DataLoader] = weakly(loader, lambda got: got)

    def shutdown(iterator: Iterator[Any]) -> None:
        stop = getattr(iterator, "_shutdown_workers", None)
        if callable(stop):
            stop()

    persistent = bool(getattr(loader, "persistent_workers", False)) and _workers(loader) > 0
    if persistent and callable(getattr(loader, "_get_iterator", None)):
        return OwnPasses(
            lambda: found()._get_iterator(),
            lambda it: it._reset(found()),  # type: ignore[attr-defined]
            shutdown,
        )
    return OwnPasses(lambda: plain_iter(found()), None, shutdown)


class LoaderSweeper:
    """The loader's variants: the same constructor arguments (dataset, sampler, collate function, ...)
    with other ``num_workers``, ``pin_memory`` and ``prefetch_factor`` for a sweep, or with timed
    pieces for the stage trials."""

    def __init__(self, loader: DataLoader, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        # The session must not keep the loader alive (see weakly); a reference, not a proxy: a dead proxy
        # raises on isinstance() in code that walks gc.get_objects().
        self._ref = weakref.ref(loader)
        bound = inspect.signature(DataLoader.__init__).bind(loader, *args, **kwargs)
        self._arguments = {k: v for k, v in bound.arguments.items() if k != "self"}

    @property
    def _loader(self) -> DataLoader:
        loader = self._ref()
        if loader is None:
            raise RuntimeError("the benchmarked DataLoader no longer exists: its sweep and stage trials cannot run")
        return loader

    def own(self) -> Setting:
        workers = _workers(self._loader)
        factor = getattr(self._loader, "prefetch_factor", None)
        return Setting(workers, bool(self._loader.pin_memory), (factor or 2) if workers > 0 else None)

    def _arguments_with(self, setting: Setting, **more: Any) -> Dict[str, Any]:
        """The loader's constructor arguments with ``setting`` (and ``more``) in place of its own."""
        found = {"num_workers": setting.num_workers, "pin_memory": setting.pin_memory, "prefetch_factor": setting.prefetch_factor}
        return dict(self._arguments, **found, **more)

    def make(self, setting: Setting) -> DataLoader:
        return DataLoader(**self._arguments_with(setting, persistent_workers=False))

    def instrumented(self, workers: Optional[int] = None) -> Instrumented:
        """An instrumented copy with the loader's current settings (``measure.stages.instrument``); ``workers``:
        with that many workers instead (the what-if model's other setting). A loader without workers given one
        gets a timeout of :data:`WORKER_TIMEOUT` seconds a batch where it has none: a dataset that never ran in a
        worker may hang there (a lock held at the fork), and the diagnosis must not hang the run."""
        own, more = self.own(), {}
        if workers is not None and workers != own.num_workers:
            if own.num_workers == 0 and workers > 0 and not self._arguments.get("timeout"):
                more["timeout"] = WORKER_TIMEOUT
            own = Setting(workers, own.pin_memory, (own.prefetch_factor or 2) if workers > 0 else None)
        return instrument(self._arguments_with(own, **more))

    def apply(self, setting: Setting) -> None:
        """The wrapper itself takes the setting (DataLoader allows these three after construction)."""
        self._loader.num_workers = setting.num_workers
        self._loader.pin_memory = setting.pin_memory
        self._loader.prefetch_factor = setting.prefetch_factor


def _length(loader: Any, length: Callable[[Any], int]) -> Optional[int]:
    """The wrapped loader's own number of batches per epoch, or None where it has none."""
    try:
        n = length(loader)
    except (TypeError, NotImplementedError):
        return None
    return n if isinstance(n, int) and n > 0 else None


def _fixed_batch(loader: DataLoader) -> Optional[int]:
    """The samples in every batch but the last of a pass, when the DataLoader guarantees it.

    A map-style dataset batched by torch's own ``BatchSampler`` and the default collate makes
    batches of exactly ``batch_size`` samples until the last one of a pass; the trials then
    count only those last batches (a sample count per batch costs ~100 ns, most of a step's
    overhead). Anything else (an IterableDataset, a custom sampler or collate) is counted.
    """
    from torch.utils.data import BatchSampler, IterableDataset, default_collate

    size = getattr(loader, "batch_size", None)
    if (
        type(getattr(loader, "batch_sampler", None)) is BatchSampler
        and loader.collate_fn is default_collate
        and not isinstance(loader.dataset, IterableDataset)
        and isinstance(size, int)
        and size >= 1
    ):
        return size
    return None


def _workers(loader: Any) -> int:
    """A loader's ``num_workers`` (0 when it has none or does not say)."""
    workers = getattr(loader, "num_workers", 0)
    return workers if isinstance(workers, int) and workers > 0 else 0


def _queue_depth(loader: Any) -> int:
    """Batches a DataLoader's workers hold ready: ``num_workers x prefetch_factor`` (0 without workers)."""
    factor = getattr(loader, "prefetch_factor", None)
    return queue_depth(_workers(loader), factor if isinstance(factor, int) else None)


def _batch_size_of(iterable: Any) -> Optional[int]:
    """The per-step batch size a loader declares: ``batch_size``, else its batch sampler's."""
    for owner in (iterable, getattr(iterable, "batch_sampler", None)):
        value = getattr(owner, "batch_size", None)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None


def one_iterator(iterable: Any) -> Optional[str]:
    """How ``iterable`` hands out one iterator to every ``iter()`` (None: it makes a new one each pass, as far as can
    be told without calling it): an iterator is its own iterable, and an object that holds an iterator in an attribute
    may return it (a torch DataLoader's, the iterator of its persistent workers, is not handed out to benchy)."""
    if isinstance(iterable, DataLoader):
        return None
    if isinstance(iterable, collections.abc.Iterator):
        return f"a {type(iterable).__name__} is an iterator: iter() returns the object itself"
    for name, value in getattr(iterable, "__dict__", {}).items():
        if isinstance(value, collections.abc.Iterator):
            return f"a {type(iterable).__name__} holds an iterator in .{name}, which iter() may return"
    return None


class BenchmarkGenericIteratorWrapper(_Wrapped):
    """Wrap any re-iterable loader (DALI iterators, generators' factories, a framework's loader).

    ``batch_size`` is used only when a batch holds nothing with a leading dimension to count;
    by default it is read from the loader (``loader.batch_size``, else its batch sampler's, as
    for Accelerate's prepared loaders). ``len()`` and other attributes (e.g. DALI's ``reset``)
    are forwarded: the loop's epochs are the loader's own.
    """

    def __init__(self, iterable: Iterable[Any], batch_size: Optional[int] = None, *, benchy_config: ConfigLike = None) -> None:
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size: got {batch_size!r}; expected an integer >= 1 (or None to count from batches)")
        if not hasattr(iterable, "__iter__"):
            raise TypeError(f"iterable: got {type(iterable).__name__}, which has no __iter__; expected a re-iterable loader")
        self._iterable = iterable
        self.batch_size = batch_size if batch_size is not None else _batch_size_of(iterable)
        self._benchy_start(_Made(resolve_config(benchy_config), creation_site()))

    def _new_session(self, made: _Made) -> Session:
        iterable = self._iterable
        facts = LoaderFacts(
            weakly(self, lambda wrapper: iter(wrapper._iterable)),
            self.batch_size,
            type(self).__name__,
            made.where,
            queue_depth=_queue_depth(iterable),
            workers=_workers(iterable),
            persistent=bool(getattr(iterable, "persistent_workers", False)),
            length=weakly(self, lambda wrapper: _length(wrapper._iterable, len)),
            # A DataLoader: benchy's passes are its own, as for a BenchmarkDataLoader (a persistent one is not reset).
            own=weakly(self, lambda wrapper: own_passes(wrapper._iterable, iter)) if isinstance(iterable, DataLoader) else None,
            shared=weakly(self, lambda wrapper: one_iterator(wrapper._iterable)),
            streams=lambda: loader_streams(iterable),
            owner=weakref.ref(self),
        )
        return Session(made.config, facts)

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_iterable", "_benchy", "_benchy_made"):
            raise AttributeError(name)
        return getattr(self._iterable, name)
