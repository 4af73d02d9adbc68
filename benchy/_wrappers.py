"""The two wrappers a script swaps in: glue between a loader and a :class:`Session`."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

from torch.utils.data import DataLoader

from ._config import ConfigLike, resolve_config
from ._session import Session

__all__ = ["BenchmarkDataLoader", "BenchmarkGenericIteratorWrapper"]


class BenchmarkDataLoader(DataLoader):
    """A ``torch.utils.data.DataLoader`` that runs benchy's trials at its epoch boundaries.

    Takes exactly the DataLoader's arguments (plus an optional ``benchy_config``: a
    :class:`benchy.Config`, a mapping of overrides, or a YAML path; by default
    ``$BENCHY_CONFIG_FILE`` or the defaults). The config is validated here, before any
    trial runs.
    """

    def __init__(self, *args: Any, benchy_config: ConfigLike = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._benchy = Session(resolve_config(benchy_config), self._plain_iter, self.batch_size)

    def _plain_iter(self) -> Iterator[Any]:
        return DataLoader.__iter__(self)

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        return self._benchy.iterate()

    @property
    def benchy(self) -> Session:
        """The benchmark session (results, schedule, state)."""
        return self._benchy


class BenchmarkGenericIteratorWrapper:
    """Wrap any re-iterable loader (DALI iterators, generators' factories, custom loaders).

    ``batch_size`` is used when a batch holds nothing with a leading dimension to count.
    ``len()`` and other attributes (e.g. DALI's ``reset``) are forwarded to the wrapped loader.
    """

    def __init__(self, iterable: Iterable[Any], batch_size: Optional[int], *, benchy_config: ConfigLike = None) -> None:
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size: got {batch_size!r}; expected an integer >= 1 (or None to count from batches)")
        if not hasattr(iterable, "__iter__"):
            raise TypeError(f"iterable: got {type(iterable).__name__}, which has no __iter__; expected a re-iterable loader")
        self._iterable = iterable
        self.batch_size = batch_size
        self._benchy = Session(resolve_config(benchy_config), lambda: iter(iterable), batch_size)

    def __iter__(self) -> Iterator[Any]:
        return self._benchy.iterate()

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_iterable", "_benchy"):
            raise AttributeError(name)
        return getattr(self._iterable, name)

    @property
    def benchy(self) -> Session:
        """The benchmark session (results, schedule, state)."""
        return self._benchy
