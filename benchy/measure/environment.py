"""The run's environment, recorded in the JSON so results can be compared later."""

from __future__ import annotations

import datetime
import os
import platform
import socket
import sys
from typing import Any, Dict

from ..core.version import __version__
from .device import describe_device


def environment(world_size: int) -> Dict[str, Any]:
    """Versions, device, host and command line of this run."""
    import torch

    return {
        "benchy_version": __version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "device": describe_device(),
        "world_size": world_size,
        "argv": list(sys.argv),
        "time_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
