"""The user's random streams, kept through benchy's own work (needs torch): benchy's own passes over the loader
draw from the loader's generators and the global streams (torch's, Python's, NumPy's, each CUDA device's), so
:func:`kept` puts them all back after, and a seeded run sees the batches it would see without benchy.
"""

from __future__ import annotations

import contextlib
import random
import sys
from typing import Any, Iterator, List

import torch


def loader_generators(loader: Any) -> List[torch.Generator]:
    """The ``torch.Generator`` objects a loader and its samplers draw from (each once)."""
    found: List[torch.Generator] = []
    places = [loader, getattr(loader, "sampler", None), getattr(loader, "batch_sampler", None)]
    batch_sampler = places[2]
    if batch_sampler is not None:
        places.append(getattr(batch_sampler, "sampler", None))
    for place in places:
        generator = getattr(place, "generator", None) if place is not None else None
        if isinstance(generator, torch.Generator) and not any(generator is g for g in found):
            found.append(generator)
    return found


@contextlib.contextmanager
def kept(generators: List[torch.Generator]) -> Iterator[None]:
    """Inside: benchy's own draws. After: every stream as it was before (see the module)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    cpu, python, own = torch.get_rng_state(), random.getstate(), [(g, g.get_state()) for g in generators]
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        random.setstate(python)
        if numpy is not None and numpy_state is not None:
            numpy.random.set_state(numpy_state)
        for generator, state in own:
            generator.set_state(state)
