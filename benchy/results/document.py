"""Reading a result file: its text parsed within bounds that hold for any input (size, nesting, digits, memory
within three times the file's size), then decoded into the model (pure, no torch). Everything that renders a
saved run reads a checked document, so none of them meets a string where a number belongs.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import typing
from typing import Any, List, Optional, Tuple

import msgspec

from ..core.errors import BenchyError
from .model import MAX_MAGNITUDE, Document, describe, inner


class ResultFileError(BenchyError, ValueError):
    """A result file that cannot be read: not JSON, not benchy's, from a newer benchy, or damaged."""


# A result file holds a run's summary figures and, per counted trial, its per-step throughputs
# (about 20 bytes a step); the per-step times themselves live in .npy files beside it. 512 MiB is
# some 25 million steps in ``rates``: far past any run, and at most 1.5 GiB of memory to read.
MAX_FILE_BYTES = 512 << 20
MAX_DEPTH = 32  # benchy writes at most 6 levels; config and environment values at most 4
MAX_DIGITS = 30  # an integer benchy writes (bytes, counts, FLOPs) has at most 20 digits
MEMORY_FACTOR = 3  # reading or refusing a file takes at most this many times its size ...
MEMORY_FLOOR = 1 << 20  # ... or its size and a MiB, for a small file (Python's objects have fixed costs)
_SHOWN = 60


def _shown(value: Any) -> str:
    """A value as the error message quotes it: JSON, cut to 60 characters."""
    if isinstance(value, dict):
        text = "an object" if len(value) > 3 else json.dumps(value)
    elif isinstance(value, list):
        text = f"a list of {len(value)}" if len(value) > 6 else json.dumps(value)
    elif isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    else:
        text = json.dumps(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]{1,60}")


def _key(path: str, key: str) -> str:
    """``path.key``; a key that is not a plain name as a quoted, cut JSON string: ``path["a b"]``."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    shown = json.dumps(key if len(key) <= 40 else key[:37] + "...")
    return f"{path}[{shown}]"


_MISSING: Any = object()  # a key the document lacks


def check(document: Any, where: str) -> Document:
    """``document`` (JSON values, upgraded to the current version) as the :class:`~benchy.results.model.Document`
    it holds, or :class:`ResultFileError` naming ``where``, the first key path that is wrong
    (``FULL.system[2].rss_max_bytes``), what the model expects there and what was found."""
    _check_depth(document, where)
    try:
        return msgspec.convert(document, Document)
    except msgspec.ValidationError as err:
        try:
            found = _error(document, str(err), where)
        except (LookupError, StopIteration, TypeError, ValueError):  # a path this walk does not follow
            found = ResultFileError(f"{where}: {err}")
        raise found from None


def _check_depth(document: Any, where: str) -> None:
    """Refuses values nested more than :data:`MAX_DEPTH` levels (in a configuration or an undeclared key: the
    model bounds its own)."""
    stack: List[Tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ResultFileError(f"{where}: {path}: expected at most {MAX_DEPTH} levels of nesting, got {_shown(value)}")
        if isinstance(value, dict):
            stack.extend((x, _key(path, k), depth + 1) for k, x in value.items() if isinstance(x, (dict, list)))
        elif isinstance(value, list):
            stack.extend((x, f"{path}[{i}]", depth + 1) for i, x in enumerate(value) if type(x) in (dict, list))


_AT = re.compile(r" - at `\$(.*)`$")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]|(\[\.\.\.\])")


def _error(document: Any, message: str, where: str) -> ResultFileError:
    """The one line for msgspec's ``message``: its path walked through the document and the model together (an
    open object's key, which msgspec shows as ``[...]``, found by converting each of its values)."""
    found = _AT.search(message)
    steps: List[Tuple[str, str, str]] = _STEP.findall(found.group(1) if found else "")
    missing = re.match(r"Object missing required field `([^`]+)`", message)
    if missing:
        steps.append((missing.group(1), "", ""))
    value: Any = document
    hint: Any = Document
    path = ""
    for name, index, _ in steps:
        held = inner(hint)
        if name:
            field = next(f for f in msgspec.structs.fields(held) if f.encode_name == name)
            hint, path = field.type, _key(path, name)
            value = value.get(name, _MISSING) if isinstance(value, dict) else _MISSING
        elif index:
            hint, path = typing.get_args(held)[0], f"{path}[{index}]"
            value = value[int(index)]
        else:  # an open object: the first key whose value the model refuses
            hint = typing.get_args(held)[1]
            key = next(k for k, x in value.items() if not _fits(x, hint))
            path, value = _key(path, key), value[key]
    expected = describe(msgspec.inspect.type_info(hint))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_MAGNITUDE:
        base, null, _ = expected.partition(" or null")
        expected = base + f" of at most {MAX_MAGNITUDE:.0e} in size" + (" or null" if null else "")
    shown = "nothing" if value is _MISSING else _shown(value)
    return ResultFileError(f"{where}: {path or 'the document'}: expected {expected}, got {shown}")


def _fits(value: Any, hint: Any) -> bool:
    try:
        msgspec.convert(value, hint)
    except msgspec.ValidationError:
        return False
    return True


# --- parsing within bounds ------------------------------------------------------------------

# Upper bounds of what parsed values take in memory (CPython 3.11, 64-bit): a float and its list slot
# (24 + 9, lists over-allocate by an eighth as they grow); an int (at most 32 below 10**30) and its
# slot; a dict entry beside its value (its key is memoised: 8 * 3 in the table, 8 of index, 40 spare);
# a list or a dict itself, empty.
_PER_FLOAT, _PER_ITEM, _PER_ENTRY, _PER_CONTAINER = 33, 41, 72, 96


def parse_cost(text: str) -> int:
    """An upper bound of the bytes ``text`` and the values parsed from it take together, reckoned from counts
    of characters alone so that a text too dense to read within the bound is refused unparsed."""
    containers = text.count("[") + text.count("{")
    entries = text.count(":")
    items = text.count(",") + containers
    floats = min(items, text.count("."))
    return (
        _PER_FLOAT * floats
        + _PER_ITEM * (items - floats)
        + _PER_ENTRY * entries
        + _PER_CONTAINER * containers
        + sys.getsizeof(text)
    )


def text_size(data: bytes) -> int:
    """The bytes the str decoded from the UTF-8 ``data`` takes (CPython keeps 1, 2 or 4 bytes a character,
    by the widest one), found without decoding it."""
    if data.isascii():
        return len(data) + 49
    wide = data.translate(None, _NARROW)  # the bytes >= 0x80 alone
    chars = len(data) - sum(wide.count(bytes([b])) for b in range(0x80, 0xC0))  # less continuation bytes
    width = (
        4
        if any(wide.count(bytes([b])) for b in range(0xF0, 0xF5))
        else (2 if any(wide.count(bytes([b])) for b in range(0xC4, 0xF0)) else 1)
    )
    return width * chars + 80


_NARROW = bytes(range(0x80))


def memory_budget(size: int) -> int:
    """The most memory reading a file of ``size`` bytes may take."""
    return max(MEMORY_FACTOR * size, size + MEMORY_FLOOR)


def _too_big(where: str, size: int, cost: int, what: str) -> ResultFileError:
    return ResultFileError(
        f"{where}: {size} bytes that would take about {cost} bytes of memory to read ({what}), more "
        f"than {MEMORY_FACTOR} times its size: not a file benchy writes"
    )


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise ValueError(f"an integer of {digits} digits (benchy writes at most {MAX_DIGITS})")
    return int(text)


def _constant(name: str) -> float:
    raise ValueError(f"{name} (JSON has no NaN or Infinity; benchy writes null)")


def parse(text: str, where: str, size: Optional[int] = None) -> Any:
    """The JSON value of ``text`` (a file of ``size`` bytes), or :class:`ResultFileError` naming ``where`` and
    why not."""
    size = len(text.encode("utf-8", "surrogatepass")) if size is None else size
    cost = parse_cost(text)
    if cost > memory_budget(size):
        raise _too_big(where, size, cost, "masses of tiny values or empty containers")
    try:
        return json.loads(text, parse_int=_int, parse_constant=_constant)
    except RecursionError:
        raise ResultFileError(
            f"{where}: not a result file: nested deeper than Python's JSON reader goes (benchy writes at most 6 levels)"
        ) from None
    except json.JSONDecodeError as err:
        if text.strip() and (err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")):
            raise ResultFileError(
                f"{where}: cut short: the JSON ends at character {len(text)} before the document does "
                f"(a copy cut off, or a file still being written)"
            ) from err
        raise ResultFileError(f"{where}: not a JSON file ({err})") from err
    except ValueError as err:
        raise ResultFileError(f"{where}: not a result file: {err}") from err


def _read_stream(handle: Any) -> bytes:
    """All of a pipe or a special file (no size to go by), a MiB at a time, stopping past the cap."""
    parts: List[bytes] = []
    total = 0
    while total <= MAX_FILE_BYTES:
        part = handle.read(1 << 20)
        if not part:
            break
        parts.append(part)
        total += len(part)
    return b"".join(parts)


def read_file(path: str) -> Any:
    """The JSON value in the file at ``path``, read within :func:`memory_budget` of its size; else
    :class:`ResultFileError`."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise ResultFileError(
                f"{path}: {size} bytes; a result file is at most {MAX_FILE_BYTES} bytes (512 MiB: "
                f"some 25 million per-step throughputs, far past any run benchy writes)"
            )
        with open(path, "rb") as handle:
            data = handle.read(size + 1) if size > 0 else _read_stream(handle)
    except OSError as err:
        raise ResultFileError(f"{path}: cannot read it: {err.strerror or err}") from err
    size = len(data)
    if size > MAX_FILE_BYTES:  # it grew while being read (a pipe, a file being written)
        raise ResultFileError(f"{path}: more than {MAX_FILE_BYTES} bytes; a result file is at most that")
    wide = text_size(data)
    if size + wide > memory_budget(size):
        raise _too_big(path, size, size + wide, "characters past U+00FF make its text 2 or 4 bytes a character")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ResultFileError(f"{path}: not a JSON file (not UTF-8: {err.reason} at byte {err.start})") from None
    del data
    return parse(text, path, size)
