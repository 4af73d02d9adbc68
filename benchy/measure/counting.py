"""How many samples a batch holds (no torch import: tensors are recognised by ``shape``), by the numbered rules of
the manual's "Counting samples" (docs/guide/wrapping.md); and ``count: tokens``. A counter is specialised once, from
the first batch, so the per-step call is one small function; a batch of another shape falls back to the general walk.
"""

from __future__ import annotations

import dataclasses
import math
import time
import timeit
from typing import Any, Callable, List, Mapping, Optional, Tuple

from ..core.results import TokenCount

Counter = Callable[[Any], int]
# One step of a path to the counted leaf: ("item", key) or ("attr", name).
_Step = Tuple[str, Any]
_MAX_DEPTH = 8


def _leading_dim(obj: Any) -> Optional[int]:
    shape = getattr(obj, "shape", None)
    if shape is None or isinstance(obj, type):
        return None
    try:
        return int(shape[0]) if len(shape) > 0 else None
    except (TypeError, IndexError, ValueError):
        return None


def _per_device(obj: Any) -> bool:
    """Rule 2: two or more dicts with the same keys, holding tensors (one per device or pipeline)."""
    if not isinstance(obj, (list, tuple)) or len(obj) < 2 or not isinstance(obj[0], Mapping):
        return False
    keys = set(obj[0].keys())
    if not all(isinstance(part, Mapping) and set(part.keys()) == keys for part in obj[1:]):
        return False
    return _find_path(obj[0]) is not None  # dicts without tensors are per-sample items (rule 4)


def _children(obj: Any) -> List[_Step]:
    """The steps into ``obj``'s parts, in the order they are searched."""
    if isinstance(obj, Mapping):
        return [("item", k) for k in obj.keys()]
    if isinstance(obj, (list, tuple)):
        return [("item", i) for i in range(len(obj))]
    if isinstance(obj, (str, bytes, int, float, bool)) or obj is None:
        return []
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [("attr", f.name) for f in dataclasses.fields(obj)]
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict) and not callable(obj):
        names = list(attrs)
        return [("attr", n) for n in names if not n.startswith("_")] + [("attr", n) for n in names if n.startswith("_")]
    return []


def _get(obj: Any, step: _Step) -> Any:
    kind, key = step
    return obj[key] if kind == "item" else getattr(obj, key)


def _find_path(obj: Any, depth: int = 0) -> Optional[List[_Step]]:
    """Path to the first tensor-like leaf (rule 3), or None."""
    if _leading_dim(obj) is not None:
        return []
    if depth > _MAX_DEPTH:
        return None
    for step in _children(obj):
        try:
            sub = _find_path(_get(obj, step), depth + 1)
        except Exception:  # a property that raises, an odd mapping: not a leaf
            continue
        if sub is not None:
            return [step] + sub
    return None


def _no_leaf_count(batch: Any) -> Optional[int]:
    """Rule 4: a list or tuple without tensors (a tuple of equal-length lists: columns, ``(texts, labels)``)."""
    if not isinstance(batch, (list, tuple)) or len(batch) == 0:
        return None
    if isinstance(batch, tuple) and all(isinstance(x, (list, tuple)) for x in batch) and len({len(x) for x in batch}) == 1:
        return len(batch[0])
    return len(batch)


def count_samples(batch: Any, fallback: Optional[int] = None) -> int:
    """Samples in ``batch`` by the rules (see the module)."""
    if _per_device(batch):
        return sum(count_samples(part, fallback) for part in batch)
    path = _find_path(batch)
    if path is not None:
        obj = batch
        for step in path:
            obj = _get(obj, step)
        return int(obj.shape[0])
    counted = _no_leaf_count(batch)
    if counted is not None:
        return counted
    if fallback is not None:
        return int(fallback)
    raise TypeError(
        f"cannot count the samples in a batch of type {type(batch).__name__}: expected a tensor or "
        f"array, a tuple/list/dict/dataclass/object holding one, a list of per-sample items, or a "
        f"known batch_size to fall back on"
    )


def describe_rule(batch: Any, fallback: Optional[int] = None) -> str:
    """How a batch like ``batch`` is counted, for the JSON and the start-up line."""
    if _per_device(batch):
        return f"sum over {len(batch)} per-device dicts"
    path = _find_path(batch)
    if path is not None:
        where = "".join(f"[{k!r}]" if kind == "item" else f".{k}" for kind, k in path)
        return f"leading dimension of batch{where}" if where else "leading dimension of the batch"
    if _no_leaf_count(batch) is not None:
        if isinstance(batch, tuple) and _no_leaf_count(batch) != len(batch):
            return "length of the first column (no tensor in the batch)"
        return "length of the list (no tensor in the batch)"
    return f"batch_size {fallback} (no tensor in the batch)"


def make_counter(
    first_batch: Any,
    fallback: Optional[int] = None,
    on_fallback: Optional[Callable[[str], None]] = None,
) -> Counter:
    """A fast counter specialised to the structure of ``first_batch``; ``on_fallback(message)`` is called once, the
    first time a batch is counted as ``fallback`` because it holds nothing countable."""
    warned = [False]

    def general(batch: Any) -> int:
        if not warned[0] and on_fallback is not None and fallback is not None:
            if not _per_device(batch) and _find_path(batch) is None and _no_leaf_count(batch) is None:
                warned[0] = True
                on_fallback(
                    f"batches of type {type(batch).__name__} hold no tensor or array to count; each is "
                    f"counted as batch_size = {fallback} samples, so a short or variable batch is "
                    f"over-counted. Yield tensors (or a dict/tuple/dataclass holding them) to count exactly."
                )
        return count_samples(batch, fallback)

    count_samples(first_batch, fallback)  # raises a clear TypeError if not countable at all
    if _per_device(first_batch):
        key_path = _find_path(first_batch[0])
        if key_path is not None and len(key_path) == 1 and key_path[0][0] == "item":
            key = key_path[0][1]

            def per_device(batch: Any) -> int:
                try:
                    return sum(part[key].shape[0] for part in batch)
                except (AttributeError, IndexError, KeyError, TypeError):
                    return general(batch)

            return per_device
        return general
    path = _find_path(first_batch)
    if path is None:
        if type(first_batch) is list and first_batch:

            def length(batch: Any) -> int:  # rule 4: one item per sample, nothing to walk
                return len(batch) if type(batch) is list and batch else general(batch)

            return length
        general(first_batch)  # says once that batch_size is used, before any trial
        return general
    if len(path) == 0:

        def direct(batch: Any) -> int:
            try:
                return batch.shape[0]
            except (AttributeError, IndexError, TypeError):
                return general(batch)

        return direct
    kind, key = path[0]
    if len(path) == 1 and kind == "item":

        def item(batch: Any) -> int:
            try:
                return batch[key].shape[0]
            except (AttributeError, IndexError, KeyError, TypeError):
                return general(batch)

        return item
    if len(path) == 1:

        def attr(batch: Any) -> int:
            try:
                return getattr(batch, key).shape[0]
            except (AttributeError, IndexError, TypeError):
                return general(batch)

        return attr
    if len(path) == 2 and kind == "item" and path[1][0] == "item":
        inner = path[1][1]

        def two(batch: Any) -> int:
            try:
                return batch[key][inner].shape[0]
            except (AttributeError, IndexError, KeyError, TypeError):
                return general(batch)

        return two
    return general


# The attention mask's sum is taken on 1 in ``every`` batches, chosen from its measured cost so that it adds at most
# this much a batch on average (a 32 x 512 mask's sum costs several microseconds: more than benchy's per-batch cost).
MASK_BUDGET_S = 1e-6
_MASK_NAMES = ("attention_mask",)
_TOKEN_NAMES = ("input_ids",)


def _dims(obj: Any) -> int:
    shape = getattr(obj, "shape", None)
    try:
        return len(shape) if shape is not None and not isinstance(obj, type) else -1
    except TypeError:
        return -1


def _integers(obj: Any) -> bool:
    """A tensor or array of integers (token ids are; features and images are not)."""
    dtype = getattr(obj, "dtype", None)
    if dtype is None:
        return False
    kind = getattr(dtype, "kind", None)  # numpy
    if isinstance(kind, str):
        return kind in "iu"
    return (
        not getattr(dtype, "is_floating_point", True) and not getattr(dtype, "is_complex", False) and str(dtype) != "torch.bool"
    )


def _is_mask(obj: Any, like: Any) -> bool:
    """A 0/1 (or boolean) tensor of ``like``'s shape: an attention mask."""
    try:
        if tuple(obj.shape) != tuple(like.shape) or obj is like:
            return False
        low, high = obj.min(), obj.max()
        return bool(low >= 0) and bool(high <= 1)
    except Exception:
        return False


def _named_step(batch: Any, key: Any) -> Optional[_Step]:
    if isinstance(batch, Mapping):
        return ("item", key) if key in batch else None
    if isinstance(batch, (list, tuple)):
        return ("item", key) if isinstance(key, int) and key < len(batch) else None
    return ("attr", key) if isinstance(key, str) and hasattr(batch, key) else None


def _where(step: Optional[_Step]) -> str:
    if step is None:
        return "batch"
    kind, key = step
    return f"batch[{key!r}]" if kind == "item" else f"batch.{key}"


class TokenTally:
    """``count: tokens``: a sample counter that also adds up, per trial, every batch's token positions (exact) and,
    on 1 in :attr:`every` batches, the non-padding tokens by the attention mask's sum."""

    def __init__(
        self,
        samples: Counter,
        first_batch: Any,
        token_key: Any = "auto",
        mask_key: Any = "auto",
        budget: float = MASK_BUDGET_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.token_step, self.mask_step = _token_steps(first_batch, token_key, mask_key)
        self.source = f"tokens: the positions of {_where(self.token_step)}" + (
            f", non-padding by {_where(self.mask_step)}"
            if self.mask_step is not None
            else ", no attention mask (every position counts)"
        )
        self.every = 1
        if self.mask_step is not None and budget != float("inf"):
            mask = _get(first_batch, self.mask_step)
            took = min(timeit.repeat(lambda: int(mask.sum()), timer=clock, repeat=5, number=1))
            self.every = max(1, math.ceil(took / budget)) if budget > 0 else 1
        self._acc = [0, 0, 0, 0, 0, 0]  # TokenCount's first fields: samples, tokens, sampled and real tokens, batches, sampled
        self.count: Counter = self._make(samples)

    def _make(self, samples: Counter) -> Counter:
        acc, every = self._acc, self.every
        tokens_of = _getter(self.token_step)
        mask_of = None if self.mask_step is None else _getter(self.mask_step)

        def positions(batch: Any) -> int:  # the general path: a batch of another structure
            try:
                return _size(tokens_of(batch))
            except _MISSING:
                return 0

        step = self.token_step
        key = step[1] if step is not None and step[0] == "item" else None

        def count(batch: Any) -> int:
            n = samples(batch)
            try:
                t = batch[key].numel() if key is not None else positions(batch)
            except _MISSING:
                t = positions(batch)
            acc[0] += n
            acc[1] += t
            acc[4] += 1
            if (acc[4] - 1) % every == 0:
                real = t
                if mask_of is not None:
                    try:
                        real = int(mask_of(batch).sum())
                    except _MISSING:
                        real = t
                acc[2] += t
                acc[3] += real
                acc[5] += 1
            return n

        return count

    def reset(self) -> None:
        """A trial's clock is about to start: its batches count from zero."""
        self._acc[:] = [0, 0, 0, 0, 0, 0]

    def take(self) -> TokenCount:
        a = self._acc
        out = TokenCount(a[0], a[1], a[2], a[3], a[4], a[5], every=self.every, masked=self.mask_step is not None)
        self.reset()
        return out

    def exact(self, batch: Any, samples: int) -> TokenCount:
        """One batch counted in full (SYNTHETIC's one cached batch)."""
        t = _size(_getter(self.token_step)(batch))
        real = t if self.mask_step is None else int(_getter(self.mask_step)(batch).sum())
        return TokenCount(samples, t, t, real, 1, 1, masked=self.mask_step is not None)


_MISSING = (AttributeError, IndexError, KeyError, TypeError, ValueError)


def _size(ids: Any) -> int:
    return int(ids.numel()) if callable(getattr(ids, "numel", None)) else int(ids.size)


def _getter(step: Optional[_Step]) -> Callable[[Any], Any]:
    if step is None:
        return lambda batch: batch
    kind, key = step
    if kind == "item":
        return lambda batch: batch[key]
    return lambda batch: getattr(batch, key)


def _token_steps(batch: Any, token_key: Any, mask_key: Any) -> Tuple[Optional[_Step], Optional[_Step]]:
    """Where the token ids and the attention mask are in a batch like ``batch``."""
    # The batch's parts, its private attributes aside (none: the batch itself is a tensor).
    steps = [s for s in _children(batch) if not (s[0] == "attr" and str(s[1]).startswith("_"))] if _dims(batch) < 0 else []
    if token_key != "auto":
        token = _named_step(batch, token_key)
        if token is None:
            raise TypeError(
                f"count: tokens: token_key {token_key!r} is not in the batch (a {type(batch).__name__} "
                f"with {', '.join(_where(s) for s in steps) or 'no parts'})"
            )
    elif _dims(batch) >= 2 and _integers(batch):
        token = None  # the batch itself is the token tensor
    else:
        named = [s for s in steps if s[1] in _TOKEN_NAMES and _dims(_get(batch, s)) >= 2]
        found = named or [s for s in steps if _dims(_get(batch, s)) >= 2 and _integers(_get(batch, s))]
        if not found:
            raise TypeError(
                f"count: tokens: no tensor of integer token ids of two or more dimensions (batch, sequence) "
                f"in a batch of type {type(batch).__name__}: expected token ids such as "
                f"batch['input_ids'], or name them with global.token_key"
            )
        token = found[0]
    ids = batch if token is None else _get(batch, token)
    if _dims(ids) < 2:
        raise TypeError(
            f"count: tokens: {_where(token)} has shape {tuple(getattr(ids, 'shape', ()))}; expected (batch, sequence) token ids"
        )
    if mask_key == "none":
        return token, None
    if mask_key != "auto":
        mask = _named_step(batch, mask_key)
        if mask is None:
            raise TypeError(f"count: tokens: mask_key {mask_key!r} is not in the batch (a {type(batch).__name__})")
        return token, mask
    named = [s for s in steps if s[1] in _MASK_NAMES]
    if named:
        return token, named[0]
    shaped = [s for s in steps if s != token and _is_mask(_get(batch, s), ids)]
    return token, (shaped[0] if shaped else None)
