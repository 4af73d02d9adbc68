"""Every config key's rule: what it allows (checked value by value), the sections and how a layer
(YAML file, environment, Python overrides) merges into the defaults, and the checks across keys
(pure, no torch, no files). :mod:`benchy.core.config` builds the config with them; the file and the
output directory are :mod:`benchy.results.configfile`'s."""

from __future__ import annotations

import os
import reprlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .peaks import DTYPES, parse_peak

__all__ = [
    "ATTR_OF_SECTION",
    "AUTO",
    "GLOBAL_RULES",
    "MODE_NAMES",
    "PROBE_PREFIX",
    "RULES",
    "STEPS_TEMP_SUFFIX",
    "TEMP_PREFIX",
    "TEMP_SUFFIX",
    "canonical_section",
    "check_consistency",
    "describe",
    "merge_layer",
    "output_stem",
    "steps_name",
]

AUTO = "auto"
MAX_RUN_NAME = 200
PROFILER_MODES = ("single", "all", "none")
PROFILERS = ("cudaProfilerApi", "torch")  # the capture window: Nsight Systems' capture range, or torch.profiler
MAX_PROFILER_STEPS = 10_000
CONSOLE_MODES = ("auto", "rich", "plain")
COUNT_UNITS = ("samples", "tokens")

# Section name in the file -> attribute of Config. The original spells IO in capitals
# and the other two in lower case; section names are matched case-insensitively.
ATTR_OF_SECTION = {"global": "general", "IO": "io", "synthetic": "synthetic", "full": "full", "sweep": "sweep"}
SECTION_BY_LOWER = {name.lower(): name for name in ATTR_OF_SECTION}


def canonical_section(name: str) -> str:
    try:
        return SECTION_BY_LOWER[name.lower()]
    except (KeyError, AttributeError):
        raise KeyError(f"unknown benchy section {name!r} (allowed: {', '.join(ATTR_OF_SECTION)})") from None


# --- validation rules: key -> (check, description of what is allowed) -----------------------


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _int_at_least(low: int, high: Optional[int] = None) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low and (high is None or v <= high)


# Bounds that keep a run's memory and the checks themselves bounded whatever a file holds.
MAX_CONFIG_BYTES = 1 << 20
MAX_NBATCHES = 1_000_000  # per-step data of a trial is kept in memory
MAX_COUNT = 10_000  # trials or warm-ups per mode
MAX_AUTO = 1_000
MAX_DIST_TIMEOUT = 7 * 24 * 3600.0

# Names of benchy's own temporary files in the output directory (removed when stale, see results.files).
TEMP_PREFIX, TEMP_SUFFIX = ".benchy-", ".json.tmp"
STEPS_TEMP_SUFFIX = ".npy.tmp"  # a per-step file being written (in the steps directory)
PROBE_PREFIX = ".benchy-probe-"


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and v.strip() != ""


def _optional_dir(v: Any) -> bool:
    return v is None or _nonempty_str(v)


MODE_NAMES = ("IO", "SYNTHETIC", "FULL")


def _mode_list(v: Any) -> bool:
    return (
        isinstance(v, (list, tuple))
        and len(v) > 0
        and all(isinstance(x, str) and x.upper() in MODE_NAMES for x in v)
        and len({x.upper() for x in v}) == len(v)
    )


def _filename(v: Any) -> bool:
    return _nonempty_str(v) and os.path.basename(v) == v and v not in (".", "..")


def output_stem(output_filename: str) -> str:
    """The result file's name without ``.json``: what its per-step and profile directories are named after."""
    return output_filename[:-5] if output_filename.endswith(".json") else output_filename


def steps_name(output_filename: str) -> str:
    """The per-step directory's name: ``result.json`` -> ``result.steps``."""
    return output_stem(output_filename) + ".steps"


_Rule = Tuple[Callable[[Any], bool], str]


def _batch_key(v: Any) -> bool:
    """A dict key (a non-empty string) or a tuple index (an integer >= 0)."""
    return _nonempty_str(v) or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1024)


def _or_auto(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v == AUTO or check(v)


MODE_RULES: Dict[str, _Rule] = {
    "run_benchmark": (_is_bool, "true or false"),
    "nbatches": (
        _int_at_least(1, MAX_NBATCHES),
        f"an integer from 1 to {MAX_NBATCHES} (each trial keeps its per-step times in memory)",
    ),
    "ntrials": (
        _or_auto(_int_at_least(0, MAX_COUNT)),
        f"an integer from 0 to {MAX_COUNT}, or 'auto' (trials until the answer is known)",
    ),
    "nwarmup": (
        _or_auto(_int_at_least(0, MAX_COUNT)),
        f"an integer from 0 to {MAX_COUNT}, or 'auto' (warm-ups until the step time is steady)",
    ),
}

GLOBAL_RULES: Dict[str, _Rule] = {
    "report_freq": (_int_at_least(0), "an integer >= 0 (0 turns the periodic lines off)"),
    "exit_after_tests": (_is_bool, "true or false"),
    "profiler_mode": (lambda v: v in PROFILER_MODES, "one of " + ", ".join(repr(m) for m in PROFILER_MODES)),
    "output_filename": (_filename, "a non-empty file name without a directory part"),
    "output_dir": (_optional_dir, "a directory path (string), or null for the current directory"),
    "use_distributed_barrier": (_is_bool, "true or false"),
    "console": (lambda v: v in CONSOLE_MODES, "one of " + ", ".join(repr(m) for m in CONSOLE_MODES)),
    "profiler_capture": (
        _or_auto(_mode_list),
        "'auto' (every kind for cudaProfilerApi, FULL for torch), or a "
        "non-empty list of distinct trial kinds among IO, SYNTHETIC, FULL",
    ),
    "profiler": (lambda v: v in PROFILERS, "one of " + ", ".join(repr(m) for m in PROFILERS)),
    "profiler_steps": (
        _int_at_least(1, MAX_PROFILER_STEPS),
        f"an integer from 1 to {MAX_PROFILER_STEPS}: the steps profiled (profiler: torch)",
    ),
    "nvtx": (_is_bool, "true or false"),
    "sync_every_step": (_is_bool, "true or false"),
    "dist_timeout": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= MAX_DIST_TIMEOUT,
        f"a number of seconds > 0 and at most {MAX_DIST_TIMEOUT:g} (a week)",
    ),
    "dist_rank_lists": (
        _int_at_least(0, 1 << 20),
        "an integer from 0 to 1048576: ranks up to which each rank's figures are kept (past it, "
        "the slowest, fastest and mean rank)",
    ),
    "auto_precision": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1,
        "a share of the mean strictly between 0 and 1 (0.02 = 2 %)",
    ),
    "auto_figure_precision": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1,
        "a share of the mean above 0 and at most 1 (0.05 = 5 %; 1: the verdict alone stops measuring, as the intervals allow)",
    ),
    "auto_max_trials": (_int_at_least(2, MAX_AUTO), f"an integer from 2 to {MAX_AUTO}"),
    "auto_max_warmup": (_int_at_least(1, MAX_AUTO), f"an integer from 1 to {MAX_AUTO}"),
    "loop_steps": (
        _or_auto(_int_at_least(1, 1 << 40)),
        "'auto' (a Hugging Face or Lightning Trainer's planned steps, else unknown) or an integer >= 1: the steps "
        "the training loop takes in all",
    ),
    "save_steps": (lambda v: _is_bool(v) or v == "all", "true (rank 0's per-step files), 'all' (every rank's) or false"),
    "system_metrics": (_is_bool, "true or false"),
    "io_h2d": (_is_bool, "true or false"),
    "stages": (_is_bool, "true or false"),
    "system_metrics_hz": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0.1 <= v <= 100,
        "a number of readings per second from 0.1 to 100",
    ),
    "busy_machine_share": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1,
        "a share of the cores above 0 and at most 1 (0.25 = a quarter)",
    ),
    "sweep_apply": (_is_bool, "true or false"),
    "flops": (_is_bool, "true or false"),
    "peak_flops": (
        lambda v: parse_peak(v)[1] is None,
        "null, a positive number of FLOP/s a device (989.4e12, or a string such as '989.4 TFLOP/s'), "
        f"or a mapping of dtype ({', '.join(DTYPES)}) to such a figure",
    ),
    "whatif": (_is_bool, "true or false"),
    "count": (lambda v: v in COUNT_UNITS, "one of " + ", ".join(repr(m) for m in COUNT_UNITS)),
    "token_key": (
        lambda v: v == AUTO or _batch_key(v),
        "'auto' (input_ids, else the first 2-D integer tensor), a key of a dict batch or an index into a tuple batch",
    ),
    "mask_key": (
        lambda v: v in (AUTO, "none") or _batch_key(v),
        "'auto' (attention_mask, else a 0/1 tensor of the tokens' shape), 'none' (no mask: every token "
        "counts), a key of a dict batch or an index into a tuple batch",
    ),
    "run_name": (
        lambda v: v is None or (isinstance(v, str) and 0 < len(v.strip()) and len(v) <= MAX_RUN_NAME and v.isprintable()),
        f"a printable name of 1 to {MAX_RUN_NAME} characters, or null (the script's name and start time)",
    ),
}

# Keys of earlier versions that are gone, with what to do instead.
REMOVED = {
    "price_per_hour": (
        "removed after 0.2.0 (what the data wait costs at a price an hour); expected no such key: the "
        "DATA_WAIT line and the JSON's FULL.data_wait give the share of FULL's time spent waiting for the "
        "loader: that share of your job's price is what the wait costs"
    ),
}

# Normalisation of accepted values into the stored form.
_NORMALISE: Dict[str, Callable[[Any], Any]] = {
    "profiler_capture": lambda v: v if v == AUTO else tuple(x.upper() for x in v),
    "auto_precision": float,
    "auto_figure_precision": float,
    "system_metrics_hz": float,
    "busy_machine_share": float,
    "peak_flops": lambda v: parse_peak(v)[0],
    "num_workers": lambda v: v if isinstance(v, str) else tuple(v),
    "pin_memory": tuple,
    "prefetch_factor": tuple,
}

MAX_SWEEP_VALUES = 16  # per key; the product is bounded by MAX_SWEEP_SETTINGS


def _values(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A list of distinct values, each passing ``check`` (empty: the key is not swept)."""
    return lambda v: (
        isinstance(v, (list, tuple)) and len(v) <= MAX_SWEEP_VALUES and all(check(x) for x in v) and len(set(v)) == len(v)
    )


SWEEP_RULES: Dict[str, _Rule] = {
    "num_workers": (
        lambda v: v == AUTO or _values(_int_at_least(0, 256))(v),
        f"a list of distinct worker counts (0 to 256, at most {MAX_SWEEP_VALUES}), or 'auto' "
        f"(0, 1, 2, 4 ... up to the usable cores)",
    ),
    "pin_memory": (_values(_is_bool), "a list of distinct booleans: [false], [true] or [false, true]"),
    "prefetch_factor": (
        _values(_int_at_least(1, 64)),
        f"a list of distinct integers from 1 to 64 (at most {MAX_SWEEP_VALUES}), batches each worker keeps ready",
    ),
}

RULES = {"global": GLOBAL_RULES, "IO": MODE_RULES, "synthetic": MODE_RULES, "full": MODE_RULES, "sweep": SWEEP_RULES}


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 2, 4, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _name(key: Any) -> str:
    """A key as written (long or odd keys shortened)."""
    return key[:80] if isinstance(key, str) else _REPR.repr(key)


def describe(value: Any) -> str:
    """The value as the user wrote it, bounded: nested or aliased YAML is never expanded in full."""
    return f"{_REPR.repr(value)} ({type(value).__name__})"


def merge_layer(
    merged: Dict[str, Dict[str, Any]],
    layer: Any,
    source: str,
    problems: List[str],
) -> None:
    """Merge one layer (file contents or overrides) into ``merged``, key by key."""
    if layer is None:
        return
    if not isinstance(layer, Mapping):
        problems.append(
            f"benchy config {source}: expected a mapping of sections "
            f"({', '.join(ATTR_OF_SECTION)}) at the top level, got {describe(layer)}"
        )
        return
    seen: Dict[str, str] = {}
    for raw_section, body in layer.items():
        section = SECTION_BY_LOWER.get(raw_section.lower()) if isinstance(raw_section, str) else None
        if section is None:
            problems.append(
                f"benchy config {source}: {_REPR.repr(raw_section)}: unknown section (allowed: {', '.join(ATTR_OF_SECTION)})"
            )
            continue
        if section in seen:
            problems.append(f"benchy config {source}: {raw_section!r}: section given twice (also as {seen[section]!r})")
            continue
        seen[section] = raw_section
        if body is None:
            continue
        if not isinstance(body, Mapping):
            problems.append(f"benchy config {source}: {raw_section}: expected a mapping of keys, got {describe(body)}")
            continue
        rules = RULES[section]
        for key, value in body.items():
            if key in REMOVED:
                problems.append(f"benchy config {source}: {raw_section}.{key}: {REMOVED[key]}")
                continue
            if key not in rules:
                problems.append(f"benchy config {source}: {raw_section}.{_name(key)}: unknown key (allowed: {', '.join(rules)})")
                continue
            check, allowed = rules[key]
            if not check(value):
                problems.append(f"benchy config {source}: {raw_section}.{key}: got {describe(value)}; expected {allowed}")
                continue
            merged[section][key] = _NORMALISE.get(key, lambda x: x)(value)


def check_consistency(merged: Dict[str, Dict[str, Any]], source: str, problems: List[str]) -> None:
    enabled = [s for s in ("IO", "synthetic", "full") if merged[s]["run_benchmark"]]
    for section in enabled:
        if merged[section]["ntrials"] == 0:
            problems.append(
                f"benchy config {source}: {section}.ntrials: got 0 with run_benchmark: true, which "
                f"measures nothing; expected an integer >= 1, or set {section}.run_benchmark: false"
            )
    if not enabled:
        problems.append(
            f"benchy config {source}: every section has run_benchmark: false, so there is nothing to "
            f"measure; expected at least one of IO, synthetic, full enabled"
        )
