"""The user's random streams, kept through benchy's own work (needs torch).

benchy's own passes over the loader (the IO trials, the stage trials, IO_H2D, the sweep) make
iterators as the loop does, and a DataLoader's iterator draws from random streams when it is made
(its workers' base seed) and when it starts (a shuffling sampler's permutation): from the loader's
``generator`` where it has one, else from torch's global generator. A dataset loaded in the main
process may draw from Python's, NumPy's or torch's global streams for each sample. Without care, a
seeded run would see other batches after the benchmark than without it.

:func:`kept` saves every one of those streams before benchy's own work and puts them back after it,
so the training draws exactly what it would have drawn: torch's global CPU generator (and each CUDA
device's, where CUDA is initialised), Python's ``random``, NumPy's global generator (where NumPy is
imported), and the ``torch.Generator`` objects the loader holds (its own, its sampler's, its batch
sampler's sampler's).
"""

from __future__ import annotations

import contextlib
import random
import sys
from typing import Any, Iterator, List

import torch

__all__ = ["kept", "loader_generators"]


def loader_generators(loader: Any) -> List[torch.Generator]:
    """The ``torch.Generator`` objects a loader draws from: its own, its sampler's, its batch sampler's
    and that one's sampler's (each once)."""
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
