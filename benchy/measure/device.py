"""Device synchronization at trial boundaries: CUDA, MPS, XPU where in use; nothing on CPU.

Only a device the program has already started is synchronized, so benchy never creates a
CUDA context itself and makes no CUDA call on CPU-only builds or CPU-only runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, List, Optional


def cuda_active() -> bool:
    """CUDA is built and already initialised by the program (never initialises it)."""
    import torch

    cuda = getattr(torch, "cuda", None)
    # is_initialized() is a plain flag read: it makes no CUDA call and is False on CPU builds.
    return bool(cuda is not None and torch.backends.cuda.is_built() and cuda.is_initialized())


def _mps_active() -> bool:
    import torch

    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_built() and mps.is_available())


def _xpu_active() -> bool:
    import torch

    xpu = getattr(torch, "xpu", None)
    return bool(xpu is not None and xpu.is_available() and getattr(xpu, "is_initialized", lambda: True)())


def active_devices() -> List[str]:
    """Accelerators with work to wait for, in the order they are synchronized."""
    checks = (("cuda", cuda_active), ("mps", _mps_active), ("xpu", _xpu_active))
    return [name for name, active in checks if active()]


def synchronizer() -> Callable[[], None]:
    """The synchronize call for the devices in use now, resolved once (a no-op on CPU)."""
    import torch

    calls = [getattr(torch, name).synchronize for name in active_devices()]
    if len(calls) == 1:
        return calls[0]

    def all_devices() -> None:
        for call in calls:
            call()

    return all_devices


def accelerator_in_use() -> Optional[str]:
    """The device the program computes on, when it is an accelerator it has started (``cuda:0``)."""
    found = active_devices()
    if found[:1] == ["cuda"]:
        import torch

        return f"cuda:{torch.cuda.current_device()}"
    return found[0] if found else None


def describe_device() -> str:
    """What the run computes on, for the JSON environment block."""
    found = accelerator_in_use()
    if found is not None and found.startswith("cuda"):
        import torch

        return f"{found} ({torch.cuda.get_device_name(torch.cuda.current_device())})"
    return found or "cpu"


def to_device(batch: Any, device: Any) -> Any:
    """Every tensor of ``batch`` copied to ``device`` (non-blocking from pinned memory), the structure kept."""
    if hasattr(batch, "to") and hasattr(batch, "is_pinned"):
        return batch.to(device, non_blocking=bool(batch.is_pinned()))
    if isinstance(batch, dict):
        return type(batch)((k, to_device(v, device)) for k, v in batch.items())
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        return dataclasses.replace(
            batch, **{f.name: to_device(getattr(batch, f.name), device) for f in dataclasses.fields(batch) if f.init}
        )
    return batch
