"""What ``benchy run`` tells the processes it starts through their environment: no torch, so that the parent that
only waits for a command (:mod:`benchy.cli.child`) starts without importing it."""

from __future__ import annotations

from typing import Optional

LOADER_ENV_VAR = "BENCHY_RUN_LOADER"  # "first" or N: set by `benchy run`; read by runner.install()
SWEEP_ENV_VAR = "BENCHY_RUN_SWEEP"  # "1": sweep num_workers (auto) unless the config has a sweep


def parse_loader(text: str) -> Optional[int]:
    """``first`` -> None; ``N`` (>= 1) -> N; anything else is a ValueError naming what is allowed."""
    if text == "first":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"--loader: got {text!r}; expected 'first' (the first DataLoader whose iterator runs a "
            f"loop) or N >= 1 (the N-th DataLoader the script creates)"
        )
    return value
