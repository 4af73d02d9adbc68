"""Every config key, declared once: its default, what it allows (a check and its words) and what it does, as one
field of its section's dataclass; merging a layer into the defaults, and the checks across keys (pure, no torch, no
files). The validation and the manual's configuration reference are both read off these fields."""

from __future__ import annotations

import dataclasses
import math
import os
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from .peaks import DTYPES, parse_peak
from .record import Mode

AUTO = "auto"

# Section name in the file -> attribute of Config. The original spells IO in capitals
# and the other two in lower case; section names are matched case-insensitively.
ATTR_OF_SECTION = {"global": "general", "IO": "io", "synthetic": "synthetic", "full": "full", "sweep": "sweep"}
SECTION_BY_LOWER = {name.lower(): name for name in ATTR_OF_SECTION}


# Bounds that keep a run's memory and the checks themselves bounded whatever a file holds.
MAX_CONFIG_BYTES = 1 << 20
MAX_NBATCHES = 1_000_000  # per-step data of a trial is kept in memory
MAX_COUNT = 10_000  # trials or warm-ups per mode
MAX_AUTO = 1_000
MAX_DIST_TIMEOUT = 7 * 24 * 3600.0
MAX_RUN_NAME = 200
MAX_SWEEP_VALUES = 16  # per key; the product is bounded by MAX_SWEEP_SETTINGS

# Names of benchy's own temporary files in the output directory (removed when stale, see results.files).
TEMP_PREFIX, TEMP_SUFFIX = ".benchy-", ".json.tmp"
STEPS_TEMP_SUFFIX = ".npy.tmp"  # a per-step file being written (in the steps directory)
PROBE_PREFIX = ".benchy-probe-"


def output_stem(output_filename: str) -> str:
    """The result file's name without ``.json``: what its per-step and profile directories are named after."""
    return output_filename[:-5] if output_filename.endswith(".json") else output_filename


def steps_name(output_filename: str) -> str:
    """The per-step directory's name: ``result.json`` -> ``result.steps``."""
    return output_stem(output_filename) + ".steps"


_Check = Callable[[Any], bool]


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _ints(low: int, high: float = math.inf) -> _Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _number(test: _Check) -> _Check:
    return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and test(v)


def _or_auto(check: _Check) -> _Check:
    return lambda v: v == AUTO or check(v)


def _text(v: Any) -> bool:
    return isinstance(v, str) and v.strip() != ""


def _mode_list(v: Any) -> bool:
    kinds = tuple(m.value for m in Mode)
    return (
        isinstance(v, (list, tuple))
        and len(v) > 0
        and all(isinstance(x, str) and x.upper() in kinds for x in v)
        and len({x.upper() for x in v}) == len(v)
    )


def _batch_key(v: Any) -> bool:
    """A dict key (a non-empty string) or a tuple index (an integer >= 0)."""
    return _text(v) or _ints(0, 1023)(v)


def _values(check: _Check) -> _Check:
    """A list of distinct values, each passing ``check`` (empty: the key is not swept)."""
    return lambda v: (
        isinstance(v, (list, tuple)) and len(v) <= MAX_SWEEP_VALUES and all(check(x) for x in v) and len(set(v)) == len(v)
    )


@dataclass(frozen=True)
class Rule:
    """One key's rule: what it allows (``check``, said in ``allowed``), what it does (``does``: the manual's words)
    and how an accepted value is stored (``store``; None: as given)."""

    check: _Check
    allowed: str
    does: str
    store: Optional[Callable[[Any], Any]] = None


def _key(default: Any, check: _Check, allowed: str, does: str, store: Optional[Callable[[Any], Any]] = None) -> Any:
    """A config key's one declaration: a dataclass field with its ``default``, whose metadata holds its :class:`Rule`."""
    return dataclasses.field(default=default, metadata={"rule": Rule(check, allowed, does, store)})


def _flag(default: bool, does: str) -> Any:
    return _key(default, _is_bool, "true or false", does)


def _choice(words: Tuple[str, ...], does: str) -> Any:
    """One of ``words``, the first by default."""
    return _key(words[0], lambda v: v in words, "one of " + ", ".join(repr(w) for w in words), does)


@dataclass(frozen=True)
class ModeConfig:
    """One trial kind's section (IO, synthetic or full); each key's default, what it allows and what it does are
    declared in its field (``ntrials`` and ``nwarmup``: ``auto`` by default)."""

    run_benchmark: bool = _flag(True, "run this mode's trials (at least one mode must run)")
    nbatches: int = _key(
        50,
        _ints(1, MAX_NBATCHES),
        f"an integer from 1 to {MAX_NBATCHES} (each trial keeps its per-step times in memory)",
        "batches in each trial of the mode (and in each warm-up); with `ntrials: auto`, the longest (windows start at 8 "
        "and grow)",
    )
    ntrials: Union[int, str] = _key(
        AUTO,
        _or_auto(_ints(0, MAX_COUNT)),
        f"an integer from 0 to {MAX_COUNT}, or 'auto' (trials until the answer is known)",
        "counted trials of the mode; `auto`: trials until the verdict is decided, in short windows first",
    )
    nwarmup: Union[int, str] = _key(
        AUTO,
        _or_auto(_ints(0, MAX_COUNT)),
        f"an integer from 0 to {MAX_COUNT}, or 'auto' (warm-ups until the step time is steady)",
        "warm-up trials before the counted ones (not counted); `auto`: until the step time is steady",
    )


@dataclass(frozen=True)
class GlobalConfig:
    """The ``global`` section; each key's default, what it allows and what it does are declared in its field."""

    report_freq: int = _key(
        10,
        _ints(0),
        "an integer >= 0 (0 turns the periodic lines off)",
        "an `Iteration` line every this many steps; 0 turns them off",
    )
    exit_after_tests: bool = _flag(True, "end the process after the last trial (status 0, or 3 if a mode has no counted trial)")
    profiler_mode: str = _choice(
        ("single", "all", "none"), "which ranks open the capture window: `single` (rank 0), `all`, `none`"
    )
    output_filename: str = _key(
        "benchy_result.json",
        lambda v: _text(v) and os.path.basename(v) == v and v not in (".", ".."),
        "a non-empty file name without a directory part",
        "the result JSON's file name (no directory part); the per-step files go in `<name>.steps/` next to it",
    )
    output_dir: Optional[str] = _key(
        None,
        lambda v: v is None or _text(v),
        "a directory path (string), or null for the current directory",
        "the directory of the result JSON; null: the current directory",
    )
    use_distributed_barrier: bool = _flag(False, "a barrier across ranks at trial boundaries")
    # Ours (not in the original).
    console: str = _choice(
        ("auto", "rich", "plain"), "how to draw on a terminal: `auto` (rich on a terminal, plain lines in a log), `rich`, `plain`"
    )
    profiler_capture: Union[str, Tuple[str, ...]] = _key(
        AUTO,
        _or_auto(_mode_list),
        "'auto' (every kind for cudaProfilerApi, FULL for torch), or a non-empty list of distinct trial kinds among IO, "
        "SYNTHETIC, FULL",
        "the trial kinds captured; `auto`: IO, SYNTHETIC and FULL with cudaProfilerApi, FULL with torch",
        lambda v: v if v == AUTO else tuple(x.upper() for x in v),
    )
    profiler: str = _choice(
        ("cudaProfilerApi", "torch"),
        "the capture: `cudaProfilerApi` (Nsight Systems' capture range) or `torch` (torch.profiler on one extra, uncounted "
        "warm-up)",
    )
    profiler_steps: int = _key(
        5,
        _ints(1, 10_000),
        "an integer from 1 to 10000: the steps profiled (profiler: torch)",
        "with `profiler: torch`, the steps recorded in the profiled warm-up",
    )
    nvtx: bool = _flag(True, "NVTX ranges around trials, steps and fetches when a tool (Nsight Systems) is attached")
    sync_every_step: bool = _flag(False, "synchronize the device after every step (changes what is measured; for diagnosis)")
    dist_timeout: float = _key(
        600.0,
        _number(lambda v: 0 < v <= MAX_DIST_TIMEOUT),
        f"a number of seconds > 0 and at most {MAX_DIST_TIMEOUT:g} (a week)",
        "seconds a rank waits for the others at a trial's end before it names the missing ranks",
    )
    dist_rank_lists: int = _key(
        64,
        _ints(0, 1 << 20),
        "an integer from 0 to 1048576: ranks up to which each rank's figures are kept (past it, the slowest, fastest and "
        "mean rank)",
        "each rank's figures are kept in the JSON up to this many ranks; past it, reduced summaries (slowest, fastest and "
        "mean rank per trial)",
    )
    auto_precision: float = _key(
        0.02,
        _number(lambda v: 0 < v < 1),
        "a share of the mean strictly between 0 and 1 (0.02 = 2 %)",
        "with `ntrials: auto`, stop when the interval's half-width is this share of the mean",
        float,
    )
    auto_figure_precision: float = _key(
        0.05,
        _number(lambda v: 0 < v <= 1),
        "a share of the mean above 0 and at most 1 (0.05 = 5 %; 1: the verdict alone stops measuring, as the intervals allow)",
        "with `ntrials: auto`, a decided verdict stops measuring once each mode's interval's half-width is within this "
        "share of its mean (or at `auto_max_trials`)",
        float,
    )
    auto_max_trials: int = _key(
        8, _ints(2, MAX_AUTO), f"an integer from 2 to {MAX_AUTO}", "with `ntrials: auto`, at most this many trials per mode"
    )
    auto_max_warmup: int = _key(
        4,
        _ints(1, MAX_AUTO),
        f"an integer from 1 to {MAX_AUTO}",
        "with `nwarmup: auto`, at most this many warm-up trials per mode",
    )
    loop_steps: Union[int, str] = _key(
        AUTO,
        _or_auto(_ints(1, 1 << 40)),
        "'auto' (a Hugging Face or Lightning Trainer's planned steps, else unknown) or an integer >= 1: the steps the "
        "training loop takes in all",
        "the steps the training loop takes in all, so that the windows fit inside it; `auto`: a Hugging Face Trainer's "
        "`max_steps` or a Lightning Trainer's `estimated_stepping_batches` where one runs the loop, else unknown",
    )
    save_steps: Union[bool, str] = _key(
        True,
        lambda v: _is_bool(v) or v == "all",
        "true (rank 0's per-step files), 'all' (every rank's) or false",
        "each trial's per-step times in `<output name>.steps/<trial>.npy`, written once; `all`: every rank's (rank r in "
        "`rank<r>/`)",
    )
    system_metrics: bool = _flag(True, "sample CPU, memory, storage reads (and the GPU with nvidia-ml-py) during each trial")
    io_h2d: bool = _flag(True, "with an accelerator in use, IO trials that also copy each batch to it (IO_H2D)")
    stages: bool = _flag(True, "a DataLoader's stage trials: each stage and each worker timed (diagnostic, not counted)")
    system_metrics_hz: float = _key(
        10.0,
        _number(lambda v: 0.1 <= v <= 100),
        "a number of readings per second from 0.1 to 100",
        "readings per second of that sampler",
        float,
    )
    busy_machine_share: float = _key(
        0.25,
        _number(lambda v: 0 < v <= 1),
        "a share of the cores above 0 and at most 1 (0.25 = a quarter)",
        "flag a trial when other processes took more than this share of the cores",
        float,
    )
    sweep_apply: bool = _flag(False, "after a loader sweep, continue with its recommended setting")
    flops: bool = _flag(True, "count the FLOPs of one untimed extra SYNTHETIC step (the COMPUTE line, MFU)")
    peak_flops: Any = _key(  # noqa: RUF009 (None: immutable)
        None,
        lambda v: parse_peak(v)[1] is None,
        "null, a positive number of FLOP/s a device (989.4e12, or a string such as '989.4 TFLOP/s'), or a mapping of "
        f"dtype ({', '.join(DTYPES)}) to such a figure",
        "the device's peak FLOP/s for MFU: one figure, or one per dtype; null: the built-in table",
        lambda v: parse_peak(v)[0],
    )
    whatif: bool = _flag(
        True,
        "predict what a change would give (workers, cores, a faster step, a stage made free) and check it with "
        "emulated-step trials at the end (the WHATIF line)",
    )
    count: str = _choice(("samples", "tokens"), "`tokens`: also tokens per second and the padding share (sequence batches)")
    token_key: Union[str, int] = _key(
        AUTO,
        _or_auto(_batch_key),
        "'auto' (input_ids, else the first 2-D integer tensor), a key of a dict batch or an index into a tuple batch",
        "with `count: tokens`, where the token ids are in a batch",
    )
    mask_key: Union[str, int] = _key(
        AUTO,
        lambda v: v in (AUTO, "none") or _batch_key(v),
        "'auto' (attention_mask, else a 0/1 tensor of the tokens' shape), 'none' (no mask: every token counts), a key of "
        "a dict batch or an index into a tuple batch",
        "with `count: tokens`, where the attention mask is in a batch",
    )
    run_name: Optional[str] = _key(
        None,
        lambda v: v is None or (isinstance(v, str) and 0 < len(v.strip()) and len(v) <= MAX_RUN_NAME and v.isprintable()),
        f"a printable name of 1 to {MAX_RUN_NAME} characters, or null (the script's name and start time)",
        "the run's name in the JSON, `compare` and `report`; null: the script's name and start time",
    )

    @property
    def capture_kinds(self) -> Tuple[str, ...]:
        """The trial kinds the profiler captures (``profiler_capture`` with ``auto`` resolved)."""
        if self.profiler_capture == AUTO:
            return (Mode.FULL.value,) if self.profiler == "torch" else tuple(m.value for m in Mode)
        return tuple(self.profiler_capture)


@dataclass(frozen=True)
class SweepConfig:
    """The ``sweep`` section: loader settings tried with IO trials before the schedule (the product of the keys
    given; a key left out keeps the loader's own value; empty: no sweep)."""

    num_workers: Union[Tuple[int, ...], str] = _key(
        (),
        _or_auto(_values(_ints(0, 256))),
        f"a list of distinct worker counts (0 to 256, at most {MAX_SWEEP_VALUES}), or 'auto' (0, 1, 2, 4 ... up to the "
        "usable cores)",
        "worker counts to try in the loader sweep (empty: the loader's own)",
        lambda v: v if isinstance(v, str) else tuple(v),
    )
    pin_memory: Tuple[bool, ...] = _key(
        (),
        _values(_is_bool),
        "a list of distinct booleans: [false], [true] or [false, true]",
        "pin_memory settings to try (empty: the loader's own)",
        tuple,
    )
    prefetch_factor: Tuple[int, ...] = _key(
        (),
        _values(_ints(1, 64)),
        f"a list of distinct integers from 1 to 64 (at most {MAX_SWEEP_VALUES}), batches each worker keeps ready",
        "prefetch factors to try with workers (empty: the loader's own, else 2)",
        tuple,
    )

    @property
    def enabled(self) -> bool:
        return bool(self.num_workers or self.pin_memory or self.prefetch_factor)


# Each section's class, and its keys' rules read off the class's fields (in the order declared).
SECTION_CLASS = {"global": GlobalConfig, "IO": ModeConfig, "synthetic": ModeConfig, "full": ModeConfig, "sweep": SweepConfig}
RULES: Dict[str, Dict[str, Rule]] = {
    section: {f.name: f.metadata["rule"] for f in dataclasses.fields(cls)} for section, cls in SECTION_CLASS.items()
}

# Keys of earlier versions that are gone, with what to do instead.
REMOVED = {
    "price_per_hour": (
        "removed after 0.2.0 (what the data wait costs at a price an hour); expected no such key: the "
        "DATA_WAIT line and the JSON's FULL.data_wait give the share of FULL's time spent waiting for the "
        "loader: that share of your job's price is what the wait costs"
    )
}


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 2, 4, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _name(key: Any) -> str:
    """A key as written (long or odd keys shortened)."""
    return key[:80] if isinstance(key, str) else _REPR.repr(key)


def describe(value: Any) -> str:
    """The value as the user wrote it, bounded: nested or aliased YAML is never expanded in full."""
    return f"{_REPR.repr(value)} ({type(value).__name__})"


def merge_layer(merged: Dict[str, Dict[str, Any]], layer: Any, source: str, problems: List[str]) -> None:
    """Merge one layer (file contents or overrides) into ``merged``, key by key."""

    def problem(text: str) -> None:
        problems.append(f"benchy config {source}: {text}")

    if layer is None:
        return
    if not isinstance(layer, Mapping):
        problem(f"expected a mapping of sections ({', '.join(ATTR_OF_SECTION)}) at the top level, got {describe(layer)}")
        return
    seen: Dict[str, str] = {}
    for raw_section, body in layer.items():
        section = SECTION_BY_LOWER.get(raw_section.lower()) if isinstance(raw_section, str) else None
        if section is None:
            problem(f"{_REPR.repr(raw_section)}: unknown section (allowed: {', '.join(ATTR_OF_SECTION)})")
            continue
        if section in seen:
            problem(f"{raw_section!r}: section given twice (also as {seen[section]!r})")
            continue
        seen[section] = raw_section
        if body is not None and not isinstance(body, Mapping):
            problem(f"{raw_section}: expected a mapping of keys, got {describe(body)}")
            continue
        rules = RULES[section]
        for key, value in (body or {}).items():
            rule = rules.get(key)
            if key in REMOVED:
                problem(f"{raw_section}.{key}: {REMOVED[key]}")
            elif rule is None:
                problem(f"{raw_section}.{_name(key)}: unknown key (allowed: {', '.join(rules)})")
            elif not rule.check(value):
                problem(f"{raw_section}.{key}: got {describe(value)}; expected {rule.allowed}")
            else:
                merged[section][key] = rule.store(value) if rule.store else value


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
