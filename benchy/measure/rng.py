"""The user's random streams, kept through benchy's own work (needs torch): benchy's own passes over the loader
draw from the loader's own streams (its sampler's, its dataset's) and the global ones (torch's, Python's, NumPy's,
each CUDA device's), so :func:`kept` puts them all back after, and a seeded run sees the batches it would see
without benchy.
"""

from __future__ import annotations

import contextlib
import random
import sys
from typing import Any, Iterator, List

import torch


def _state(stream: Any) -> Any:
    if isinstance(stream, random.Random):
        return stream.getstate()
    if isinstance(stream, torch.Generator):
        return stream.get_state()
    if hasattr(stream, "bit_generator"):  # numpy.random.Generator
        return stream.bit_generator.state
    return stream.get_state()  # numpy.random.RandomState


def _restore(stream: Any, state: Any) -> None:
    if isinstance(stream, random.Random):
        stream.setstate(state)
    elif isinstance(stream, torch.Generator):
        stream.set_state(state)
    elif hasattr(stream, "bit_generator"):
        stream.bit_generator.state = state
    else:
        stream.set_state(state)


def _is_stream(value: Any) -> bool:
    if isinstance(value, (random.Random, torch.Generator)):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.random.Generator, numpy.random.RandomState))


def loader_streams(loader: Any) -> List[Any]:
    """The random streams of their own (``torch.Generator``, ``random.Random``, NumPy's ``Generator`` and
    ``RandomState``) that a loader, its dataset, its sampler, its batch sampler and that one's sampler hold as
    attributes: what benchy's own passes draw from beside the global streams (each once)."""
    places = [loader] + [getattr(loader, name, None) for name in ("dataset", "sampler", "batch_sampler")]
    places.append(getattr(places[3], "sampler", None))
    found: List[Any] = []
    for place in places:
        values = list(vars(place).values()) if hasattr(place, "__dict__") else []
        for value in values:
            if _is_stream(value) and not any(value is s for s in found):
                found.append(value)
    return found


@contextlib.contextmanager
def kept(streams: List[Any]) -> Iterator[None]:
    """Inside: benchy's own draws. After: every stream as it was before (see the module)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    cpu, python, own = torch.get_rng_state(), random.getstate(), [(s, _state(s)) for s in streams]
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        random.setstate(python)
        if numpy is not None and numpy_state is not None:
            numpy.random.set_state(numpy_state)
        for stream, state in own:
            _restore(stream, state)
