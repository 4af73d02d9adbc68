"""How many steps the training loop takes in all, where a framework that runs it knows ahead (no torch import):
:func:`loop_horizon` looks up the call stack for a Hugging Face or Lightning ``Trainer`` that planned its length
(a script's own loop sets ``global.loop_steps``).
"""

from __future__ import annotations

import math
import os
import sys
from types import FrameType
from typing import Any, Optional

_DEPTH = 64  # frames looked at, from the loader's iter() up


def _classes(obj: Any) -> set[str]:
    return {f"{c.__module__}.{c.__qualname__}" for c in type(obj).__mro__}


def _hugging_face(obj: Any) -> Optional[int]:
    if "transformers.trainer.Trainer" not in _classes(obj):
        return None
    state, args = getattr(obj, "state", None), getattr(obj, "args", None)
    planned = getattr(state, "max_steps", 0) or 0
    if planned <= 0 or args is None:
        return None
    accum = max(1, int(getattr(args, "gradient_accumulation_steps", 1) or 1))
    done = int(getattr(state, "global_step", 0) or 0)
    return max(0, (int(planned) - done) * accum)


def _lightning(obj: Any) -> Optional[int]:
    trainer = obj if _is_lightning(obj) else getattr(obj, "trainer", None)
    if trainer is None or not _is_lightning(trainer):
        return None
    try:
        planned = trainer.estimated_stepping_batches
    except Exception:  # no length to estimate from (an IterableDataset without max_steps)
        return None
    if not isinstance(planned, (int, float)) or not math.isfinite(planned) or planned <= 0:
        return None
    accum = max(1, int(getattr(trainer, "accumulate_grad_batches", 1) or 1))
    done = int(getattr(trainer, "global_step", 0) or 0)
    return max(0, (int(planned) - done) * accum)


def _is_lightning(obj: Any) -> bool:
    names = _classes(obj)
    return "lightning.pytorch.trainer.trainer.Trainer" in names or "pytorch_lightning.trainer.trainer.Trainer" in names


# Only a framework's own frames are read: reading a frame's locals makes a snapshot of them that the frame keeps
# (Python 3.11), and a script's frame would then keep alive what the script drops later (a loader it deletes, and
# with it the loader's workers).
_FRAMEWORKS = (f"{os.sep}transformers{os.sep}", f"{os.sep}lightning{os.sep}", f"{os.sep}pytorch_lightning{os.sep}")


def loop_horizon(frame: Optional[FrameType] = None) -> Optional[int]:
    """The loop's batches from the start of its current epoch to its planned end, from the framework running it;
    None: unknown."""
    found: Optional[FrameType] = frame if frame is not None else sys._getframe(1)
    for _ in range(_DEPTH):
        if found is None:
            return None
        code = found.f_code
        if code.co_varnames[:1] != ("self",) or not any(part in code.co_filename for part in _FRAMEWORKS):
            found = found.f_back
            continue
        owner = found.f_locals.get("self")
        if owner is not None:
            for read in (_hugging_face, _lightning):
                try:
                    steps = read(owner)
                except Exception:
                    steps = None
                if steps is not None:
                    return steps
        found = found.f_back
    return None
