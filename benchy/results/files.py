"""Files: atomic writes (a temporary file in the same directory, then a rename), the JSON written
piece by piece, and removal of the temporaries a killed writer left (pure: no torch)."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
import uuid
from typing import IO, Any, Callable, List, Mapping, Optional

import msgspec
import numpy as np

from ..core.config_rules import PROBE_PREFIX, STEPS_TEMP_SUFFIX, TEMP_PREFIX, TEMP_SUFFIX

STALE_AFTER_S = 60.0  # a write takes milliseconds: an older temporary file is a killed writer's


def remove_stale_temporaries(directory: str, now: Optional[float] = None) -> List[str]:
    """Delete benchy's own temporary files in ``directory`` left by a process killed mid-write (only those older
    than a minute, so a run writing there at this moment keeps its file)."""
    now = time.time() if now is None else now
    removed: List[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        ours = (name.startswith(TEMP_PREFIX) and name.endswith((TEMP_SUFFIX, STEPS_TEMP_SUFFIX))) or name.startswith(PROBE_PREFIX)
        try:
            if ours and entry.is_file(follow_symlinks=False) and now - entry.stat().st_mtime > STALE_AFTER_S:
                os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed


def remove_matching(directory: str, pattern: re.Pattern[str]) -> List[str]:
    """Remove the files (not links or folders) in ``directory`` whose whole names match ``pattern``; the names
    removed. A directory that cannot be read removes nothing; a file that cannot be removed raises."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    removed = []
    for entry in entries:
        if pattern.match(entry.name) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
            removed.append(entry.name)
    return removed


def _builtin(value: Any) -> Any:
    """msgspec's enc_hook: a value it does not encode itself (numpy, a str subclass such as ``torch.__version__``)
    as JSON; ValueError for any other (the callers report a document that cannot be written rather than end the
    training)."""
    if isinstance(value, (np.generic, np.ndarray)):  # msgspec encodes enums itself
        return value.tolist()
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    raise ValueError(f"expected a JSON value, got {type(value).__name__}")


def write_document(handle: IO[str], document: Any) -> None:
    """The document (a :class:`~benchy.results.model.Document`, or JSON values read back) as indented JSON,
    non-finite numbers as null, each per-step list on one line.

    Each mode's per-step ``rates`` are written in place of a marker, one trial at a time and an array in slices
    of :data:`SLICE` values, so that neither the whole text nor a Python object per step is ever held.
    """
    marker = f"\0benchy-per-step-{uuid.uuid4().hex}-"
    lists: List[Any] = []

    def held(values: Any) -> str:
        lists.append(values)
        return f"{marker}{len(lists) - 1}"

    if isinstance(document, Mapping):
        document = {
            key: {**block, "rates": [held(values) for values in block["rates"]]}
            if isinstance(block, Mapping) and isinstance(block.get("rates"), list)
            else block
            for key, block in document.items()
        }
    text = msgspec.json.format(
        msgspec.json.encode(document, enc_hook=lambda v: held(v) if hasattr(v, "slice") else _builtin(v)), indent=1
    ).decode()
    # re.split with a group: text, index, text, index, ..., text
    parts = re.split(re.escape(json.dumps(marker)[:-1]) + r'([0-9]+)"', text) if lists else [text]
    for k, part in enumerate(parts):
        if k % 2 == 0:
            handle.write(part)
        elif isinstance(lists[int(part)], np.ndarray) or hasattr(lists[int(part)], "slice"):
            _write_array(handle, lists[int(part)])
        else:
            handle.write(json.dumps(lists[int(part)], allow_nan=False))
    handle.write("\n")


SLICE = 8_192  # values of a per-step array encoded at a time (a few hundred kB of text and floats)


def _write_array(handle: IO[str], values: Any) -> None:
    """A 1-d float array (or a :class:`~benchy.core.results.StepRates`) as a JSON list, non-finite values as null."""
    handle.write("[")
    for start in range(0, len(values), SLICE):
        part = values.slice(start, start + SLICE) if hasattr(values, "slice") else values[start : start + SLICE]
        items: List[Any] = part.tolist()
        if not np.isfinite(part).all():
            items = [v if math.isfinite(v) else None for v in items]
        text = json.dumps(items, allow_nan=False)[1:-1]
        handle.write(text if start == 0 else ", " + text)
    handle.write("]")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give: mkstemp's files are private (0600)


def write_atomic(path: str, write: Callable[[IO[Any]], object], *, binary: bool = False, suffix: str = TEMP_SUFFIX) -> None:
    """Write ``path`` through ``write(handle)`` into a temporary file in the same directory, then rename it into
    place; on any failure the old ``path`` stays."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as handle:
            write(handle)
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json_atomic(path: str, document: Any) -> None:
    """:func:`write_document` through :func:`write_atomic`."""
    write_atomic(path, lambda handle: write_document(handle, document))


def append_status(path: str, status: int) -> None:
    """One benchmark's advised exit status, appended to ``benchy run``'s record (every rank and process appends to
    the one file: a line this short is written whole by one ``write`` in append mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{int(status)}\n".encode("ascii"))
    finally:
        os.close(fd)


def read_statuses(path: str) -> List[int]:
    """The statuses :func:`append_status` recorded in ``path`` (a line cut by a killed writer is left out)."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    return [int(line) for line in text.split() if line.isdigit()]
