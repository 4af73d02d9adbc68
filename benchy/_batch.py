"""How many samples a batch holds (no torch import: tensors are recognised by ``shape``).

Handles tensors and arrays, tuples and lists (``(inputs, labels)``), dicts
(``{"image": ..., "label": ...}``) and DALI's list of per-pipeline dicts. A counter is
specialised once, from the first batch, so the per-step call is one small function; a
batch of another shape falls back to the general walk.
"""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Union

__all__ = ["count_samples", "make_counter"]

Counter = Callable[[Any], int]
_Path = List[Union[int, str]]


def _leading_dim(obj: Any) -> Optional[int]:
    shape = getattr(obj, "shape", None)
    if shape is None or isinstance(obj, type):
        return None
    try:
        return int(shape[0]) if len(shape) > 0 else None
    except (TypeError, IndexError, ValueError):
        return None


def _is_list_of_mappings(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and len(obj) > 0 and all(isinstance(x, Mapping) for x in obj)


def _find_path(obj: Any, depth: int = 0) -> Optional[_Path]:
    """Path (keys / indices) to the first object with a leading dimension."""
    if _leading_dim(obj) is not None:
        return []
    if depth > 8:
        return None
    if isinstance(obj, Mapping):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    else:
        return None
    for key, value in items:
        sub = _find_path(value, depth + 1)
        if sub is not None:
            return [key] + sub
    return None


def count_samples(batch: Any, fallback: Optional[int] = None) -> int:
    """Samples in ``batch``: the leading dimension of its first tensor-like leaf.

    A list of dicts (DALI, one dict per pipeline) counts the samples of every dict.
    A batch with no tensor-like leaf counts as ``fallback`` (the configured batch size),
    or as its length when it is a plain list or tuple.
    """
    if _is_list_of_mappings(batch):
        return sum(count_samples(part, fallback) for part in batch)
    path = _find_path(batch)
    if path is not None:
        obj = batch
        for key in path:
            obj = obj[key]
        return int(obj.shape[0])
    if fallback is not None:
        return int(fallback)
    if isinstance(batch, (list, tuple)):
        return len(batch)
    raise TypeError(
        f"cannot count the samples in a batch of type {type(batch).__name__}: expected a tensor or "
        f"array, a tuple/list/dict holding one, or a known batch_size to fall back on"
    )


def make_counter(first_batch: Any, fallback: Optional[int] = None) -> Counter:
    """A fast counter specialised to the structure of ``first_batch``."""

    def general(batch: Any) -> int:
        return count_samples(batch, fallback)

    if _is_list_of_mappings(first_batch):
        return general
    path = _find_path(first_batch)
    if path is None:
        count_samples(first_batch, fallback)  # raises a clear TypeError if not countable at all
        return general
    if len(path) == 0:
        def direct(batch: Any) -> int:
            try:
                return batch.shape[0]
            except (AttributeError, IndexError, TypeError):
                return general(batch)
        return direct
    if len(path) == 1:
        key = path[0]

        def one(batch: Any) -> int:
            try:
                return batch[key].shape[0]
            except (AttributeError, IndexError, KeyError, TypeError):
                return general(batch)
        return one
    if len(path) == 2:
        k0, k1 = path

        def two(batch: Any) -> int:
            try:
                return batch[k0][k1].shape[0]
            except (AttributeError, IndexError, KeyError, TypeError):
                return general(batch)
        return two
    return general
