"""The result JSON's declared types, and the one reader that checks a file against them (pure, no torch).

:data:`DOCUMENT` declares every key of a result document (schema 4, after
:func:`benchy.results.schema.upgrade`) at every depth: what it holds, as a tree of kinds
(:class:`Num`, :class:`Text`, :class:`Flag`, :class:`Opt`, :class:`ListOf`, :class:`MapOf`,
:class:`Obj`, :class:`OneOf`). :func:`check` walks a document against it once, when the file is
read; a value of the wrong type anywhere gives one :class:`ResultFileError` naming the file, the key
path (``FULL.system[2].rss_max_bytes``), what was expected and what was found. Everything that
renders a saved run (summary, report, HTML, compare, plot, trace) reads a checked document, so none
of them meets a string where a number belongs.

:func:`parse` turns a file's text into a document within bounds that hold for any input: at most
:data:`MAX_DEPTH` levels of nesting, integers of at most :data:`MAX_DIGITS` digits, no NaN or
Infinity, and a memory use within three times the file's size (a text whose values would take more
is refused before it is parsed: see :func:`parse_cost`). The documentation's page of what a result
file may contain is generated from :data:`DOCUMENT` (:func:`rows`).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..core.errors import BenchyError

__all__ = [
    "DOCUMENT",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_FILE_BYTES",
    "MAX_MAGNITUDE",
    "Kind",
    "ResultFileError",
    "check",
    "parse",
    "parse_cost",
    "read_file",
    "rows",
]


class ResultFileError(BenchyError, ValueError):
    """A result file that cannot be read: not JSON, not benchy's, from a newer benchy, or damaged."""


# A result file holds a run's summary figures and, per counted trial, its per-step throughputs
# (about 20 bytes a step); the per-step times themselves live in .npy files beside it. 512 MiB is
# some 25 million steps in ``rates``: far past any run, and at most 1.5 GiB of memory to read.
MAX_FILE_BYTES = 512 << 20
MAX_DEPTH = 32  # benchy writes at most 6 levels; config and environment values at most 4
MAX_DIGITS = 30  # an integer benchy writes (bytes, counts, FLOPs) has at most 20 digits
MAX_MAGNITUDE = 1e30  # no figure benchy writes comes near it; beyond, statistics overflow (x**4 past 1e308)
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


class Kind:
    """What one value of the document may be."""

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        raise NotImplementedError

    def text(self) -> str:
        """The kind in words, for error messages and the documentation."""
        raise NotImplementedError

    def shallow(self, value: Any) -> bool:
        """Whether ``value`` is of this kind at its own level (its items unchecked)."""
        try:
            self.check(value, "", _raise, MAX_DEPTH)
        except _Wrong:
            return False
        return True

    def children(self) -> Iterator[Tuple[str, Kind]]:
        """(suffix, kind) of the values inside this one (``.key``, ``[]``), for the documentation."""
        return iter(())


class Num(Kind):
    """A finite number (JSON has no NaN or Infinity), an integer with ``integer``, within bounds."""

    def __init__(
        self, *, integer: bool = False, low: Optional[float] = None, high: Optional[float] = None, what: str = ""
    ) -> None:
        self.integer, self.low, self.high, self.what = integer, low, high, what

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(path, value, self.text())
        if isinstance(value, float) and (not math.isfinite(value) or (self.integer and not value.is_integer())):
            raise fail(path, value, self.text())
        if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:
            raise fail(path, value, self.text() + f" of at most {MAX_MAGNITUDE:.0e} in size")
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise fail(path, value, self.text())

    def text(self) -> str:
        base = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            base += f" from {self.low:g} to {self.high:g}"
        elif self.low is not None:
            base += f" >= {self.low:g}"
        return base + (f" ({self.what})" if self.what else "")


class Text(Kind):
    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if not isinstance(value, str):
            raise fail(path, value, self.text())

    def text(self) -> str:
        return "a string"


class Flag(Kind):
    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if not isinstance(value, bool):
            raise fail(path, value, self.text())

    def text(self) -> str:
        return "true or false"


class OneOf(Kind):
    """One of a few strings."""

    def __init__(self, *values: str) -> None:
        self.values = values

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if not isinstance(value, str) or value not in self.values:
            raise fail(path, value, self.text())

    def text(self) -> str:
        return "one of " + ", ".join(json.dumps(v) for v in self.values)


class Opt(Kind):
    """``kind``, or null."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if value is None:
            return
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not self.kind.shallow(value) and not (number and isinstance(self.kind, Num)):
            raise fail(path, value, self.text())
        if number and isinstance(self.kind, Num):  # a number out of bounds: the bound named, and null allowed

            def or_null(where: str, found: Any, expected: str) -> ResultFileError:
                return fail(where, found, expected + " or null")

            self.kind.check(value, path, or_null, depth)
            return
        self.kind.check(value, path, fail, depth)

    def shallow(self, value: Any) -> bool:
        return value is None or self.kind.shallow(value)

    def text(self) -> str:
        return self.kind.text() + " or null"

    def children(self) -> Iterator[Tuple[str, Kind]]:
        return self.kind.children()


class ListOf(Kind):
    """A list whose every item is ``item`` (of ``size`` items when given)."""

    def __init__(self, item: Kind, size: Optional[int] = None) -> None:
        self.item, self.size = item, size

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if not isinstance(value, list) or (self.size is not None and len(value) != self.size):
            raise fail(path, value, self.text())
        item = self.item
        if isinstance(item, Num) and not item.integer and item.low is None and item.high is None:
            for i, x in enumerate(value):  # the long lists (per-step rates): the check inlined
                if type(x) is not float or not -MAX_MAGNITUDE <= x <= MAX_MAGNITUDE:  # NaN fails both
                    item.check(x, f"{path}[{i}]", fail, depth + 1)
            return
        for i, x in enumerate(value):
            item.check(x, f"{path}[{i}]", fail, depth + 1)

    def shallow(self, value: Any) -> bool:
        return isinstance(value, list) and (self.size is None or len(value) == self.size)

    def text(self) -> str:
        return (f"a list of {self.size} " if self.size is not None else "a list of ") + _plural(self.item)

    def children(self) -> Iterator[Tuple[str, Kind]]:
        yield "[]", self.item


class MapOf(Kind):
    """An object with keys of the writer's choosing (dtype names, op names) and ``value`` values."""

    def __init__(self, value: Kind, keys: str = "names") -> None:
        self.value, self.keys = value, keys

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if not isinstance(value, dict):
            raise fail(path, value, self.text())
        for key, x in value.items():
            self.value.check(x, _key(path, key), fail, depth + 1)

    def shallow(self, value: Any) -> bool:
        return isinstance(value, dict)

    def text(self) -> str:
        return f"an object of {self.keys} to {_plural(self.value)}"

    def children(self) -> Iterator[Tuple[str, Kind]]:
        yield ".<name>", self.value


class Any_(Kind):
    """Any JSON value (a configuration or environment value benchy does not read back), nested at most
    :data:`MAX_DEPTH` levels."""

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise fail(path, value, f"at most {MAX_DEPTH} levels of nesting")
        if isinstance(value, float) and not math.isfinite(value):
            raise fail(path, value, "a finite number (JSON has no NaN or Infinity)")
        if isinstance(value, dict):
            for key, x in value.items():
                self.check(x, _key(path, key), fail, depth + 1)
        elif isinstance(value, list):
            for i, x in enumerate(value):
                self.check(x, f"{path}[{i}]", fail, depth + 1)

    def shallow(self, value: Any) -> bool:
        return True  # any value is one at its own level (its nesting is checked by check)

    def text(self) -> str:
        return "any JSON value"


class Obj(Kind):
    """An object with declared keys; a key it lacks reads as null unless it is ``required``. Keys it
    does not declare (from a hand edit, or a development version) are kept, unread, as any JSON value."""

    def __init__(
        self, fields: Mapping[str, Kind], required: Sequence[str] = (), what: str = "an object", plural: str = ""
    ) -> None:
        self.fields, self.required, self.what = dict(fields), tuple(required), what
        self.plural = plural or (what[3:] if what.startswith("an ") else what[2:] if what.startswith("a ") else what) + "s"

    def check(self, value: Any, path: str, fail: Callable[[str, Any, str], ResultFileError], depth: int) -> None:
        if not isinstance(value, dict):
            raise fail(path or "the document", value, self.text())
        for key in self.required:
            if key not in value:
                raise fail(_key(path, key), _MISSING, self.fields[key].text())
        fields = self.fields
        for key, x in value.items():
            kind = fields.get(key, ANY)
            kind.check(x, _key(path, key), fail, depth + 1)

    def shallow(self, value: Any) -> bool:
        return isinstance(value, dict)

    def text(self) -> str:
        return self.what

    def children(self) -> Iterator[Tuple[str, Kind]]:
        for key, kind in self.fields.items():
            yield f".{key}", kind


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]{1,60}")


def _key(path: str, key: str) -> str:
    """``path.key``; a key that is not a plain name as a quoted, cut JSON string: ``path["a b"]``."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    shown = json.dumps(key if len(key) <= 40 else key[:37] + "...")
    return f"{path}[{shown}]"


class _Wrong(Exception):
    pass


def _raise(path: str, value: Any, expected: str) -> ResultFileError:
    raise _Wrong


class _Missing:
    def __repr__(self) -> str:
        return "nothing"


_MISSING = _Missing()
ANY = Any_()


def _plural(kind: Kind) -> str:
    if isinstance(kind, Opt):
        return _plural(kind.kind) + " (or nulls)"
    if isinstance(kind, Obj):
        return kind.plural
    if isinstance(kind, Any_):
        return "any JSON values"
    text = kind.text()
    for article in ("an ", "a "):
        if text.startswith(article):
            first, _, rest = text[len(article) :].partition(" ")
            plural = {
                "number": "numbers",
                "integer": "integers",
                "string": "strings",
                "object": "objects",
                "list": "lists",
                "loader": "loaders",
                "window": "windows",
                "trial": "trials",
                "stage": "stages",
                "setting": "settings",
            }.get(first, first)
            return f"{plural} {rest}".rstrip()
    return text


# --- the document ---------------------------------------------------------------------------

NUMBER = Num()
UNIX_TIME = Num(low=0, high=1e11, what="Unix seconds")  # up to the year 5138: a clock's reading, not a date
SECONDS = Num(low=0, high=1e9, what="seconds")  # a duration: up to some 31 years
COUNT = Num(integer=True, low=0)
INDEX = Num(integer=True, low=0)
TEXT = Text()
FLAG = Flag()
NUMBERS = ListOf(NUMBER)
NUMBERS_OR_NULL = ListOf(Opt(NUMBER))
DURATIONS = ListOf(SECONDS)
COUNTS = ListOf(COUNT)
MODE_NAMES = ("IO", "SYNTHETIC", "FULL")

SYSTEM = Obj(
    {
        "seconds": NUMBER,
        "readings": COUNT,
        "cpu_cores_busy": Opt(NUMBER),
        "cpu_cores": Opt(NUMBER),
        "cpu_util": Opt(NUMBER),
        "processes": Opt(COUNT),
        "rss_max_bytes": Opt(NUMBER),
        "read_bytes_per_s": Opt(NUMBER),
        "loader_read_chars_per_s": Opt(NUMBER),
        "other_cores_busy": Opt(NUMBER),
        "disturbed": Opt(FLAG),
        "gpu_util": Opt(NUMBER),
        "gpu_memory_bytes": Opt(NUMBER),
        "gpu_power_w": Opt(NUMBER),
        "gpu_energy_j": Opt(NUMBER),
        "gpu_energy_source": Opt(TEXT),
        "cpu_energy_j": Opt(NUMBER),
        "cpu_energy_source": Opt(TEXT),
        "energy_missing": Opt(TEXT),
    },
    what="an object of system figures",
    plural="objects of system figures",
)
SYSTEMS = ListOf(Opt(SYSTEM))
WARMUP = Obj({"trial_throughput": NUMBERS_OR_NULL, "trial_time": DURATIONS, "trial_samples": COUNTS, "system": SYSTEMS})
STEPS = Obj(
    {
        "steps": COUNT,
        "p50_s": Opt(NUMBER),
        "p90_s": Opt(NUMBER),
        "p99_s": Opt(NUMBER),
        "stall_factor": Opt(NUMBER),
        "stalls": Opt(COUNT),
        "stall_share": Opt(NUMBER),
        "stall_period": Opt(COUNT),
    }
)
RANK_SUMMARY = Obj(
    {
        "ranks": COUNT,
        "slowest_rank": INDEX,
        "slowest_time": NUMBER,
        "fastest_rank": INDEX,
        "fastest_time": NUMBER,
        "mean_time": NUMBER,
        "spread": Opt(NUMBER),
    }
)
RANKS = Obj(
    {
        "trial_throughput": ListOf(NUMBERS_OR_NULL),
        "trial_time": ListOf(NUMBERS),
        "trial_samples": ListOf(COUNTS),
        "spread": NUMBERS_OR_NULL,
        "mean_trial_time": NUMBERS_OR_NULL,
        "straggler": Opt(TEXT),
        "summarised": FLAG,
        "trials": ListOf(Opt(RANK_SUMMARY)),
    }
)
TRIAL_TOKENS = Obj(
    {
        "samples": COUNT,
        "tokens": COUNT,
        "sampled_tokens": COUNT,
        "real_tokens": COUNT,
        "batches": COUNT,
        "sampled_batches": COUNT,
        "every": COUNT,
        "masked": FLAG,
    }
)
DATA_WAIT = Obj(
    {
        "mean": Opt(NUMBER),
        "interval": Opt(NUMBER),
        "confidence": Opt(NUMBER),
        "trials": NUMBERS_OR_NULL,
        "labels": ListOf(TEXT),
        "wait_median_s": NUMBERS_OR_NULL,
        "step_median_s": NUMBERS_OR_NULL,
    }
)
MODE_BLOCK = Obj(
    {
        "rates": Opt(ListOf(NUMBERS_OR_NULL)),
        "avg_iter_throughput": NUMBERS_OR_NULL,
        "trial_throughput": NUMBERS_OR_NULL,
        "trial_time": DURATIONS,
        "trial_samples": COUNTS,
        "nbatches": COUNTS,
        "mean": Opt(NUMBER),
        "interval": Opt(NUMBER),
        "confidence": Opt(Num(low=0, high=1)),
        "n": Opt(COUNT),
        "warmup": Opt(WARMUP),
        "steps": Opt(STEPS),
        "system": SYSTEMS,
        "tokens": ListOf(Opt(TRIAL_TOKENS)),
        "data_wait": Opt(DATA_WAIT),
        "ranks": Opt(RANKS),
        "batch_samples": Opt(COUNT),
    },
    what="an object with the mode's trials",
)
SETTING = Obj(
    {"num_workers": COUNT, "pin_memory": FLAG, "prefetch_factor": Opt(COUNT)},
    required=("num_workers", "pin_memory"),
    what="a loader setting",
)
WINDOW = Obj(
    {key: COUNT for key in ("start_epoch", "start_step", "end_epoch", "end_step", "segments", "left_out")},
    required=("start_epoch", "start_step", "end_epoch", "end_step"),
    what="a window",
)
TIMELINE_TRIAL = Obj(
    {
        "trial": TEXT,
        "mode": OneOf(*MODE_NAMES),
        "group": TEXT,
        "warmup": FLAG,
        "profiled": FLAG,
        "started": Opt(UNIX_TIME),
        "own_seconds": Opt(SECONDS),
        "seconds": Opt(SECONDS),
        "nbatches": Opt(COUNT),
        "samples": Opt(COUNT),
        "steps_file": FLAG,
        "rank_started": Opt(ListOf(UNIX_TIME)),
        "rank_seconds": Opt(DURATIONS),
        "window": Opt(WINDOW),
        "setting": Opt(SETTING),
    },
    required=("trial", "mode"),
    what="a trial of the timeline",
    plural="trials of the timeline",
)
TIMELINE = Obj({"clock": TEXT, "trials": ListOf(TIMELINE_TRIAL)}, required=("trials",))
SWEEP_SETTING = Obj(
    {
        "settings": SETTING,
        "trial_throughput": NUMBERS_OR_NULL,
        "trial_time": DURATIONS,
        "trial_samples": COUNTS,
        "warmup": Obj({"trial_throughput": NUMBERS_OR_NULL}),
        "mean": Opt(NUMBER),
        "interval": Opt(NUMBER),
        "n": Opt(COUNT),
        "error": Opt(TEXT),
        "workers_memory_bytes": Opt(NUMBER),
        "over_memory_cap": Opt(FLAG),
    },
    required=("settings",),
    what="a setting with its trials",
    plural="settings with their trials",
)
SWEEP = Obj(
    {
        "own": Opt(SETTING),
        "settings": ListOf(SWEEP_SETTING),
        "best": Opt(SETTING),
        "smallest_within_5pct": Opt(SETTING),
        "feeds_synthetic": Opt(SETTING),
        "applied": Opt(SETTING),
        "memory_cap_bytes": Opt(NUMBER),
    }
)
STARTUP = Obj(
    {
        "seconds": DURATIONS,
        "started": ListOf(UNIX_TIME),
        "typical": Opt(NUMBER),
        "basis": Opt(TEXT),
        "batch_seconds": Opt(NUMBER),
        "extra": Opt(NUMBER),
        "epoch_batches": Opt(COUNT),
        "epoch_seconds": Opt(NUMBER),
        "share": Opt(NUMBER),
        "workers": Opt(COUNT),
        "persistent_workers": Opt(FLAG),
    }
)
FIRST_PASS = Obj(
    {
        "first_trial": Opt(TEXT),
        "first_throughput": Opt(NUMBER),
        "steady_throughput": Opt(NUMBER),
        "ratio": Opt(NUMBER),
        "files_read_bytes": Opt(NUMBER),
        "storage_read_bytes": Opt(NUMBER),
        "warm_cache": Opt(FLAG),
    }
)
STAGE = Obj(
    {
        "name": TEXT,
        "where": TEXT,
        "seconds_per_batch": Opt(NUMBER),
        "share": Opt(NUMBER),
        "note": Opt(TEXT),
        "off_cpu_share": Opt(NUMBER),
    },
    what="a stage",
)
STAGES = Obj(
    {
        "skipped": Opt(TEXT),
        "period_seconds": Opt(NUMBER),
        "throughput": Opt(NUMBER),
        "batches": Opt(COUNT),
        "workers": Opt(COUNT),
        "trials": ListOf(TEXT),
        "stages": ListOf(STAGE),
        "unexplained_share": Opt(NUMBER),
        "workers_busy_share": Opt(NUMBER),
        "largest": Opt(TEXT),
        "advice": Opt(TEXT),
        "transforms": Opt(TEXT),
        "per_worker": ListOf(
            Obj(
                {
                    "worker": INDEX,
                    "batches": COUNT,
                    "busy_seconds": NUMBER,
                    "idle_seconds": NUMBER,
                    "busy_share": NUMBER,
                    "seconds_per_batch": NUMBER,
                }
            )
        ),
        "slow_worker": Opt(Obj({"worker": INDEX, "ratio": NUMBER})),
        "slowest_worker_cost": Opt(Obj({"worker": INDEX, "ratio": NUMBER, "io_share": NUMBER})),
        "out_of_order_batches": Opt(COUNT),
        "head_of_line_share": Opt(NUMBER),
        "in_order_available": Opt(FLAG),
        "first_throughput": Opt(NUMBER),
        "worker_memory": ListOf(
            Obj({"worker": INDEX, "uss_bytes": Opt(NUMBER), "pss_bytes": Opt(NUMBER), "rss_bytes": Opt(NUMBER)})
        ),
        "instrumentation_seconds_per_sample": Opt(NUMBER),
        "instrumentation_share": Opt(NUMBER),
    }
)
COMPUTE_MODE = Obj({"flops_per_s": Opt(NUMBER), "interval": Opt(NUMBER), "mfu": Opt(NUMBER), "mfu_interval": Opt(NUMBER)})
COMPUTE = Obj(
    {
        "flops_per_step": Opt(NUMBER),
        "flops_per_sample": Opt(NUMBER),
        "samples": Opt(COUNT),
        "counted_in": Opt(TEXT),
        "device": Opt(TEXT),
        "device_type": Opt(TEXT),
        "by_dtype": MapOf(NUMBER, "dtypes"),
        "by_op": MapOf(NUMBER, "op names"),
        "unknown_ops": ListOf(TEXT),
        "tf32": Opt(FLAG),
        "world": Opt(COUNT),
        "peak_flops": Opt(NUMBER),
        "peak_basis": Opt(TEXT),
        "no_mfu": Opt(TEXT),
        "skipped": Opt(TEXT),
        **{mode: Opt(COMPUTE_MODE) for mode in MODE_NAMES},
    }
)
TOKENS_MODE = Obj(
    {"tokens_per_s": Opt(NUMBER), "interval": Opt(NUMBER), "n": Opt(COUNT), "padding": Opt(NUMBER), "mask_every": Opt(COUNT)}
)
TOKENS = Obj({"source": Opt(TEXT), **{mode: Opt(TOKENS_MODE) for mode in MODE_NAMES}})
ENERGY_MODE = Obj({"joules_per_trial": MapOf(NUMBER, "energy figures"), "joules_per_sample": Opt(NUMBER)})
ENERGY = Obj({"sources": ListOf(TEXT), "missing": Opt(TEXT), **{mode: Opt(ENERGY_MODE) for mode in MODE_NAMES}})
TRIPLE = ListOf(Opt(NUMBER), 3)
WHATIF_CHANGE = {"workers": COUNT, "cores": NUMBER, "speedup": NUMBER, "free_stage": Opt(TEXT)}
WHATIF = Obj(
    {
        "basis": Opt(TEXT),
        "inputs": Obj(
            {
                "samples_per_batch": Opt(NUMBER),
                "workers": Opt(COUNT),
                "cores": Opt(NUMBER),
                "other_cores_busy": Opt(NUMBER),
                "io": Opt(TRIPLE),
                "step_seconds": Opt(TRIPLE),
                "step_cores": Opt(NUMBER),
                "worker_seconds_per_batch": Opt(NUMBER),
                "worker_cpu_share": Opt(NUMBER),
                "main_seconds_per_batch": Opt(NUMBER),
                "main_seconds_per_batch_no_workers": Opt(NUMBER),
                "main_cpu_share": Opt(NUMBER),
                "slow_worker_ratio": Opt(NUMBER),
                "worker_handover_seconds": Opt(NUMBER),
                "full": Opt(TRIPLE),
                "full_step_seconds": Opt(NUMBER),
                "step_fixed_share": Opt(NUMBER),
                "contention": Opt(NUMBER),
                "contention_loader_rate": Opt(NUMBER),
                "full_contention": Opt(NUMBER),
                "full_loader_rate": Opt(NUMBER),
            }
        ),
        "scale": Opt(NUMBER),
        "own": Opt(Obj({**WHATIF_CHANGE, "io": TRIPLE, "full": TRIPLE, "limit": TEXT, "naive_full": Opt(NUMBER)})),
        "flip_speedup": Opt(NUMBER),
        "needs": ListOf(Obj({"speedup": NUMBER, "workers": Opt(COUNT), "cores": Opt(NUMBER), "full": Opt(NUMBER)})),
        "predictions": ListOf(
            Obj({**WHATIF_CHANGE, "io": TRIPLE, "full": TRIPLE, "limit": TEXT, "naive_full": Opt(NUMBER)}, what="a prediction")
        ),
        "checks": ListOf(
            Obj(
                {
                    "what": TEXT,
                    "kind": TEXT,
                    "change": Obj(WHATIF_CHANGE),
                    "predicted": TRIPLE,
                    "measured": Opt(NUMBER),
                    "measured_half_width": Opt(NUMBER),
                    "error": Opt(NUMBER),
                    "agree": Opt(FLAG),
                },
                what="a check",
            )
        ),
        "accelerator_utilization": Opt(NUMBER),
        "contention": Opt(NUMBER),
        "price_per_hour": Opt(NUMBER),
        "wait_cost_per_epoch": Opt(NUMBER),
        "wait_cost_per_1000_steps": Opt(NUMBER),
    }
)
DIAGNOSTICS = Obj(
    {
        "trials": ListOf(Obj({"label": TEXT, "throughput": Opt(NUMBER), "seconds": SECONDS})),
        "parts": Opt(
            Obj(
                {
                    "label": TEXT,
                    "period_seconds": NUMBER,
                    "forward_seconds": NUMBER,
                    "backward_seconds": NUMBER,
                    "optimizer_seconds": NUMBER,
                    "rest_seconds": NUMBER,
                    "forwards": COUNT,
                    "backwards": COUNT,
                    "optimizer_steps": COUNT,
                    "steps": COUNT,
                }
            )
        ),
        "contention": Opt(
            Obj(
                {
                    "label": TEXT,
                    "period_seconds": NUMBER,
                    "steps": COUNT,
                    "loader_batches": COUNT,
                    "loader_seconds": SECONDS,
                    "loader_batches_per_second": NUMBER,
                    "ended": Opt(TEXT),
                    "synthetic_period_seconds": Opt(NUMBER),
                    "slowdown": Opt(NUMBER),
                }
            )
        ),
        "skipped": ListOf(TEXT),
    }
)
EMULATED = Obj(
    {
        "speedup": Opt(NUMBER),
        "skipped": Opt(TEXT),
        "step_seconds": Opt(NUMBER),
        "trial_throughput": NUMBERS_OR_NULL,
        "trial_time": DURATIONS,
        "trial_samples": COUNTS,
        "mean": Opt(NUMBER),
        "interval": Opt(NUMBER),
        "n": Opt(COUNT),
    }
)
COMPARISON = Obj(
    {
        "method": Opt(TEXT),
        "ratio": Opt(TEXT),
        "value": Opt(NUMBER),
        "interval": Opt(ListOf(Opt(NUMBER), 2)),
        "confidence": Opt(NUMBER),
        "t": Opt(NUMBER),
        "df": Opt(NUMBER),
        "p": Opt(NUMBER),
        "inputs": MapOf(NUMBERS_OR_NULL, "modes"),
    }
)
DECISION = Obj(
    {"io_vs_synthetic": Opt(COMPARISON), "full_vs_slower": Opt(COMPARISON), "outcome": Opt(TEXT), "inconsistent": Opt(FLAG)}
)
PROFILER = Obj(
    {
        "nvtx_tool_attached": Opt(FLAG),
        "profiler": Opt(TEXT),
        "profiler_mode": Opt(TEXT),
        "capture": ListOf(TEXT),
        "events": ListOf(TEXT),
        "torch_trace_dir": Opt(TEXT),
        "torch_traces": ListOf(TEXT),
        "torch_trace_write_s": MapOf(NUMBER, "trace files"),
    }
)
SCHEDULE = Obj(
    {
        "adaptive": Opt(FLAG),
        "precision": Opt(NUMBER),
        "windows_needed": Opt(COUNT),
        "windows_fewest": Opt(COUNT),
        "epochs_needed": Opt(COUNT),
        "epochs_fewest": Opt(COUNT),
        "order": ListOf(TEXT),
        "warmups": MapOf(COUNT, "modes"),
        "decision_confidence": Opt(NUMBER),
        "stop_reason": Opt(TEXT),
        "stop": Opt(TEXT),
        "extras": ListOf(TEXT),
        "extras_not_run": MapOf(TEXT, "extras"),
        "loop_steps": Opt(COUNT),
        "measuring_steps": Opt(COUNT),
    }
)
H2D = Obj(
    {
        "device": Opt(TEXT),
        "skipped": Opt(TEXT),
        "trial_throughput": NUMBERS_OR_NULL,
        "trial_time": DURATIONS,
        "trial_samples": COUNTS,
        "mean": Opt(NUMBER),
        "interval": Opt(NUMBER),
        "n": Opt(COUNT),
        "vs_io": Opt(NUMBER),
        "system": SYSTEMS,
    }
)
ENVIRONMENT = Obj(
    {
        "benchy_version": Opt(TEXT),
        "torch_version": Opt(TEXT),
        "python_version": Opt(TEXT),
        "platform": Opt(TEXT),
        "host": Opt(TEXT),
        "cpu_count": Opt(COUNT),
        "device": Opt(TEXT),
        "world_size": Opt(COUNT),
        "argv": ListOf(TEXT),
        "time_utc": Opt(TEXT),
    }
)

DOCUMENT = Obj(
    {
        "schema_version": Num(integer=True, low=1),
        "run_name": TEXT,
        "source": OneOf("run", "log"),
        "parsed_from": Opt(TEXT),
        "complete": FLAG,
        "exit_status": Opt(Num(integer=True, low=0, high=255)),
        "nranks": Num(integer=True, low=1, what="the number of ranks"),
        "steps_needed": Opt(COUNT),
        "epoch_length": Opt(COUNT),
        "epochs_needed": Opt(COUNT),
        "steps_taken": Opt(COUNT),
        "epochs_started": Opt(COUNT),
        "interrupted": ListOf(
            Obj(
                {"trial": TEXT, "batches_done": COUNT, "nbatches": COUNT, "reason": TEXT},
                what="a trial that did not count",
                plural="trials that did not count",
            )
        ),
        "rerun": ListOf(ANY),
        "peeks": Opt(COUNT),
        "side_iterators": Opt(COUNT),
        "failed_ranks": ListOf(Obj({"rank": INDEX, "reason": TEXT}, what="a rank that failed", plural="ranks that failed")),
        "disturbed": ListOf(TEXT),
        "verdict": Opt(TEXT),
        "decision": Opt(DECISION),
        "config": Opt(MapOf(ANY, "sections")),
        "environment": Opt(ENVIRONMENT),
        "profiler": Opt(PROFILER),
        "steps_dir": Opt(TEXT),
        "schedule": Opt(SCHEDULE),
        "lookahead": Opt(FLAG),
        "counting": Opt(TEXT),
        "loader": Opt(TEXT),
        "other_loaders": ListOf(TEXT),
        "sweep": Opt(SWEEP),
        "loader_startup": Opt(STARTUP),
        "first_pass": Opt(FIRST_PASS),
        "stages": Opt(STAGES),
        "compute": Opt(COMPUTE),
        "tokens": Opt(TOKENS),
        "energy": Opt(ENERGY),
        "whatif": Opt(WHATIF),
        "summary": Opt(ListOf(TEXT)),
        "timeline": Opt(TIMELINE),
        **{mode: Opt(MODE_BLOCK) for mode in MODE_NAMES},
        "IO_H2D": Opt(H2D),
        "EMULATED": Opt(EMULATED),
        "diagnostics": Opt(DIAGNOSTICS),
    },
    required=("schema_version", "run_name"),
    what="a JSON object (benchy's result)",
)


def check(document: Any, where: str) -> None:
    """Raise :class:`ResultFileError` unless ``document`` holds what :data:`DOCUMENT` declares, at every depth."""

    def fail(path: str, value: Any, expected: str) -> ResultFileError:
        found = "nothing" if value is _MISSING else _shown(value)
        return ResultFileError(f"{where}: {path}: expected {expected}, got {found}")

    DOCUMENT.check(document, "", fail, 0)


# --- parsing within bounds ------------------------------------------------------------------

# Upper bounds of what parsed values take in memory (CPython 3.11, 64-bit): a float and its list slot
# (24 + 9, lists over-allocate by an eighth as they grow); an int (at most 32 below 10**30) and its
# slot; a dict entry beside its value (its key is memoised: 8 * 3 in the table, 8 of index, 40 spare);
# a list or a dict itself, empty.
_PER_FLOAT, _PER_ITEM, _PER_ENTRY, _PER_CONTAINER = 33, 41, 72, 96


def parse_cost(text: str) -> int:
    """An upper bound of the bytes ``text`` and the values parsed from it take together (strings at
    the text's own size, every comma a value, a float for each ``.``, every colon an object entry,
    every bracket a container), reckoned from counts of characters alone so that a text too dense to
    read within the bound is refused unparsed."""
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
    """The most memory reading a file of ``size`` bytes may take: :data:`MEMORY_FACTOR` times its size,
    or its size and :data:`MEMORY_FLOOR` for a small one."""
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
    """The JSON value of ``text``, or :class:`ResultFileError` naming ``where`` and why not.

    ``size``: the file's size in bytes (the text's UTF-8 length when not given). A text that, with
    the values parsed from it, would take more than :func:`memory_budget` of that is refused before
    it is parsed."""
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
    """The JSON value in the file at ``path``, read within :func:`memory_budget` of its size (a file over
    :data:`MAX_FILE_BYTES` is refused unread); :class:`ResultFileError` naming the file and why not."""
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


# --- the documentation ----------------------------------------------------------------------


def rows(kind: Kind = DOCUMENT, path: str = "") -> List[Tuple[str, str, bool]]:
    """(key path, what it may hold, whether a file must have it) for every key :data:`DOCUMENT`
    declares, depth first (``[]``: each item of a list; ``.<name>``: each key of an open object)."""
    out: List[Tuple[str, str, bool]] = []
    for suffix, child in kind.children():
        key = (path + suffix) if path else suffix.lstrip(".")
        required = isinstance(kind, Obj) and suffix.lstrip(".") in kind.required
        out.append((key, child.text(), required))
        out.extend(rows(child, key))
    return out
