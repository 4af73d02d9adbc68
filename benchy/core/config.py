"""Configuration: defaults, YAML file, Python overrides, validation (pure, no torch).

The file format is the original benchy's (sections ``global``, ``IO``, ``synthetic``,
``full``). Sources are merged key by key, in order: defaults, then the YAML file
(``BENCHY_CONFIG_FILE`` or an explicit path), then Python overrides. Every problem is
reported at once in one :class:`ConfigError`, before any trial runs.
"""

from __future__ import annotations

import dataclasses
import os
import reprlib
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import yaml

from ..core.errors import BenchyError

__all__ = [
    "AUTO",
    "CONFIG_ENV_VAR",
    "RUN_NAME_ENV_VAR",
    "Config",
    "ConfigError",
    "GlobalConfig",
    "ModeConfig",
    "SweepConfig",
    "load_config",
    "steps_name",
]

CONFIG_ENV_VAR = "BENCHY_CONFIG_FILE"
RUN_NAME_ENV_VAR = "BENCHY_RUN_NAME"  # overrides global.run_name (as --benchy_name does)
MAX_RUN_NAME = 200

PROFILER_MODES = ("single", "all", "none")
CONSOLE_MODES = ("auto", "rich", "plain")


class ConfigError(BenchyError, ValueError):
    """A benchy configuration problem, raised before any trial runs.

    ``problems`` holds one line per problem, each naming the source, the
    ``section.key``, the value received and what is allowed.
    """

    def __init__(self, problems: List[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = self.problems[0]
        else:
            message = f"{len(self.problems)} problems:\n  " + "\n  ".join(self.problems)
        super().__init__(message)


ConfigError.__module__ = "benchy"  # tracebacks show benchy.ConfigError, the public name


AUTO = "auto"


@dataclass(frozen=True)
class ModeConfig:
    """One trial kind (IO, synthetic or full).

    ``ntrials`` and ``nwarmup`` may be ``"auto"``: trials until the answer is known, warm-ups
    until the step time is steady (bounded by ``global.auto_max_trials`` / ``auto_max_warmup``).
    """

    run_benchmark: bool = True
    nbatches: int = 50
    ntrials: Union[int, str] = 3
    nwarmup: Union[int, str] = 1


@dataclass(frozen=True)
class GlobalConfig:
    """The ``global`` section. ``output_dir=None`` means the current directory."""

    report_freq: int = 10
    exit_after_tests: bool = True
    profiler_mode: str = "single"
    output_filename: str = "benchy_result.json"
    output_dir: Optional[str] = None
    use_distributed_barrier: bool = False
    # Ours (not in the original).
    console: str = "auto"  # how to draw on a terminal: auto, rich, plain
    profiler_capture: Tuple[str, ...] = ("IO", "SYNTHETIC", "FULL")  # trial kinds inside the capture window
    nvtx: bool = True  # NVTX ranges when a tool (Nsight Systems) is attached
    sync_every_step: bool = False  # synchronize the device at every step (changes what is measured)
    dist_timeout: float = 600.0  # seconds a rank waits for the others at a trial boundary
    auto_precision: float = 0.02  # ntrials auto: stop when the interval's half-width is this share of the mean
    auto_max_trials: int = 8  # ntrials auto: at most this many trials per mode
    auto_max_warmup: int = 4  # nwarmup auto: at most this many warm-ups per mode
    save_steps: bool = True  # every trial's per-step times as <output name>.steps/<trial>.npy, written once
    system_metrics: bool = True  # CPU, memory, storage reads (and GPU) sampled during each trial
    system_metrics_hz: float = 10.0  # readings per second of the system-metrics sampler
    io_h2d: bool = True  # with an accelerator in use: IO trials that also copy each batch to it
    run_name: Optional[str] = None  # how compare/report name the run; None: the script's name and start time
    sweep_apply: bool = False  # after a loader sweep, continue with the recommended settings


@dataclass(frozen=True)
class SweepConfig:
    """The ``sweep`` section: loader settings tried with IO trials before the schedule.

    Each key lists values to try (the product of the keys given); a key left out keeps the
    loader's own value; ``num_workers: auto`` is 0, 1, 2, 4 ... up to the usable cores. Empty:
    no sweep."""

    num_workers: Union[Tuple[int, ...], str] = ()
    pin_memory: Tuple[bool, ...] = ()
    prefetch_factor: Tuple[int, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.num_workers or self.pin_memory or self.prefetch_factor)


@dataclass(frozen=True)
class Config:
    """The effective configuration; ``source`` names where it came from (for messages)."""

    general: GlobalConfig = field(default_factory=GlobalConfig)
    io: ModeConfig = field(default_factory=ModeConfig)
    synthetic: ModeConfig = field(default_factory=ModeConfig)
    full: ModeConfig = field(default_factory=ModeConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    source: str = "defaults"

    def mode(self, name: str) -> ModeConfig:
        """The section for a mode name (``IO``, ``SYNTHETIC`` or ``FULL``, any case)."""
        return getattr(self, _ATTR_OF_SECTION[_canonical_section(name)])

    @property
    def output_path(self) -> str:
        """Where the JSON result goes."""
        directory = self.general.output_dir if self.general.output_dir else os.getcwd()
        return os.path.join(directory, self.general.output_filename)

    @property
    def steps_dir(self) -> Optional[str]:
        """Where every trial's per-step times go (next to the JSON), or None (``save_steps: false``)."""
        if not self.general.save_steps:
            return None
        return os.path.join(os.path.dirname(self.output_path), steps_name(self.general.output_filename))

    def to_dict(self) -> Dict[str, Dict[str, Any]]:
        """The config in the file's layout (section names as in the original)."""
        out: Dict[str, Dict[str, Any]] = {}
        for section, attr in _ATTR_OF_SECTION.items():
            out[section] = dataclasses.asdict(getattr(self, attr))
        out["global"]["output_dir"] = self.general.output_dir or os.getcwd()
        out["global"]["profiler_capture"] = list(self.general.profiler_capture)
        out["sweep"] = {k: (v if isinstance(v, str) else list(v)) for k, v in out["sweep"].items()}
        return out


# Section name in the file -> attribute of Config. The original spells IO in capitals
# and the other two in lower case; section names are matched case-insensitively.
_ATTR_OF_SECTION = {"global": "general", "IO": "io", "synthetic": "synthetic", "full": "full", "sweep": "sweep"}
_SECTION_BY_LOWER = {name.lower(): name for name in _ATTR_OF_SECTION}
_SECTION_CLASS = {"global": GlobalConfig, "IO": ModeConfig, "synthetic": ModeConfig, "full": ModeConfig,
                  "sweep": SweepConfig}


def _canonical_section(name: str) -> str:
    try:
        return _SECTION_BY_LOWER[name.lower()]
    except (KeyError, AttributeError):
        raise KeyError(f"unknown benchy section {name!r} (allowed: {', '.join(_ATTR_OF_SECTION)})") from None


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

# Names of benchy's own temporary files in the output directory (removed when stale, see _report).
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
        isinstance(v, (list, tuple)) and len(v) > 0
        and all(isinstance(x, str) and x.upper() in MODE_NAMES for x in v)
        and len({x.upper() for x in v}) == len(v)
    )


def _filename(v: Any) -> bool:
    return _nonempty_str(v) and os.path.basename(v) == v and v not in (".", "..")


def steps_name(output_filename: str) -> str:
    """The per-step directory's name: ``result.json`` -> ``result.steps``."""
    stem = output_filename[:-5] if output_filename.endswith(".json") else output_filename
    return stem + ".steps"


_Rule = Tuple[Callable[[Any], bool], str]

def _or_auto(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v == AUTO or check(v)


_MODE_RULES: Dict[str, _Rule] = {
    "run_benchmark": (_is_bool, "true or false"),
    "nbatches": (_int_at_least(1, MAX_NBATCHES),
                 f"an integer from 1 to {MAX_NBATCHES} (each trial keeps its per-step times in memory)"),
    "ntrials": (_or_auto(_int_at_least(0, MAX_COUNT)),
                f"an integer from 0 to {MAX_COUNT}, or 'auto' (trials until the answer is known)"),
    "nwarmup": (_or_auto(_int_at_least(0, MAX_COUNT)),
                f"an integer from 0 to {MAX_COUNT}, or 'auto' (warm-ups until the step time is steady)"),
}

_GLOBAL_RULES: Dict[str, _Rule] = {
    "report_freq": (_int_at_least(0), "an integer >= 0 (0 turns the periodic lines off)"),
    "exit_after_tests": (_is_bool, "true or false"),
    "profiler_mode": (lambda v: v in PROFILER_MODES, "one of " + ", ".join(repr(m) for m in PROFILER_MODES)),
    "output_filename": (_filename, "a non-empty file name without a directory part"),
    "output_dir": (_optional_dir, "a directory path (string), or null for the current directory"),
    "use_distributed_barrier": (_is_bool, "true or false"),
    "console": (lambda v: v in CONSOLE_MODES, "one of " + ", ".join(repr(m) for m in CONSOLE_MODES)),
    "profiler_capture": (_mode_list, "a non-empty list of distinct trial kinds among IO, SYNTHETIC, FULL"),
    "nvtx": (_is_bool, "true or false"),
    "sync_every_step": (_is_bool, "true or false"),
    "dist_timeout": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= MAX_DIST_TIMEOUT,
                     f"a number of seconds > 0 and at most {MAX_DIST_TIMEOUT:g} (a week)"),
    "auto_precision": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1,
                       "a share of the mean strictly between 0 and 1 (0.02 = 2 %)"),
    "auto_max_trials": (_int_at_least(2, MAX_AUTO), f"an integer from 2 to {MAX_AUTO}"),
    "auto_max_warmup": (_int_at_least(1, MAX_AUTO), f"an integer from 1 to {MAX_AUTO}"),
    "save_steps": (_is_bool, "true or false"),
    "system_metrics": (_is_bool, "true or false"),
    "io_h2d": (_is_bool, "true or false"),
    "system_metrics_hz": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0.1 <= v <= 100,
                          "a number of readings per second from 0.1 to 100"),
    "sweep_apply": (_is_bool, "true or false"),
    "run_name": (lambda v: v is None or (isinstance(v, str) and 0 < len(v.strip()) and len(v) <= MAX_RUN_NAME
                                         and v.isprintable()),
                 f"a printable name of 1 to {MAX_RUN_NAME} characters, or null (the script's name and start time)"),
}

# Normalisation of accepted values into the stored form.
_NORMALISE: Dict[str, Callable[[Any], Any]] = {
    "profiler_capture": lambda v: tuple(x.upper() for x in v),
    "auto_precision": float,
    "system_metrics_hz": float,
    "num_workers": lambda v: v if isinstance(v, str) else tuple(v),
    "pin_memory": tuple,
    "prefetch_factor": tuple,
}

MAX_SWEEP_VALUES = 16  # per key; the product is bounded by MAX_SWEEP_SETTINGS


def _values(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A list of distinct values, each passing ``check`` (empty: the key is not swept)."""
    return lambda v: (isinstance(v, (list, tuple)) and len(v) <= MAX_SWEEP_VALUES and all(check(x) for x in v)
                      and len(set(v)) == len(v))


_SWEEP_RULES: Dict[str, _Rule] = {
    "num_workers": (lambda v: v == AUTO or _values(_int_at_least(0, 256))(v),
                    f"a list of distinct worker counts (0 to 256, at most {MAX_SWEEP_VALUES}), or 'auto' "
                    f"(0, 1, 2, 4 ... up to the usable cores)"),
    "pin_memory": (_values(_is_bool), "a list of distinct booleans: [false], [true] or [false, true]"),
    "prefetch_factor": (_values(_int_at_least(1, 64)),
                        f"a list of distinct integers from 1 to 64 (at most {MAX_SWEEP_VALUES}), batches each "
                        f"worker keeps ready"),
}

_RULES = {"global": _GLOBAL_RULES, "IO": _MODE_RULES, "synthetic": _MODE_RULES, "full": _MODE_RULES,
          "sweep": _SWEEP_RULES}


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 2, 4, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _name(key: Any) -> str:
    """A key as written (long or odd keys shortened)."""
    return key[:80] if isinstance(key, str) else _REPR.repr(key)


def _describe(value: Any) -> str:
    """The value as the user wrote it, bounded: nested or aliased YAML is never expanded in full."""
    return f"{_REPR.repr(value)} ({type(value).__name__})"


def _merge_layer(
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
            f"({', '.join(_ATTR_OF_SECTION)}) at the top level, got {_describe(layer)}"
        )
        return
    seen: Dict[str, str] = {}
    for raw_section, body in layer.items():
        section = _SECTION_BY_LOWER.get(raw_section.lower()) if isinstance(raw_section, str) else None
        if section is None:
            problems.append(
                f"benchy config {source}: {_REPR.repr(raw_section)}: unknown section "
                f"(allowed: {', '.join(_ATTR_OF_SECTION)})"
            )
            continue
        if section in seen:
            problems.append(
                f"benchy config {source}: {raw_section!r}: section given twice "
                f"(also as {seen[section]!r})"
            )
            continue
        seen[section] = raw_section
        if body is None:
            continue
        if not isinstance(body, Mapping):
            problems.append(
                f"benchy config {source}: {raw_section}: expected a mapping of keys, got {_describe(body)}"
            )
            continue
        rules = _RULES[section]
        for key, value in body.items():
            if key not in rules:
                problems.append(
                    f"benchy config {source}: {raw_section}.{_name(key)}: unknown key "
                    f"(allowed: {', '.join(rules)})"
                )
                continue
            check, allowed = rules[key]
            if not check(value):
                problems.append(
                    f"benchy config {source}: {raw_section}.{key}: got {_describe(value)}; expected {allowed}"
                )
                continue
            merged[section][key] = _NORMALISE.get(key, lambda x: x)(value)


def _read_yaml(path: str) -> Tuple[Any, Optional[str]]:
    """Return (contents, problem); YAML is read with the safe loader."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            return None, (f"benchy config {path}: the file is larger than {MAX_CONFIG_BYTES} bytes; a benchy config "
                          f"is a few lines (sections global, IO, synthetic, full)")
    except FileNotFoundError:
        return None, f"benchy config {path}: file not found"
    except IsADirectoryError:
        return None, f"benchy config {path}: is a directory, expected a YAML file"
    except (OSError, UnicodeDecodeError) as err:
        return None, f"benchy config {path}: cannot read the file ({err})"
    try:
        return yaml.safe_load(text), None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = getattr(err, "problem", None) or str(err).splitlines()[0]
        return None, f"benchy config {path}: malformed YAML{where}: {what}"


def _check_consistency(merged: Dict[str, Dict[str, Any]], source: str, problems: List[str]) -> None:
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


def _name_max(directory: str) -> int:
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _probe(directory: str) -> Optional[str]:
    """Why a file cannot be created in ``directory`` (None when it can): a real try, then removed."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
    except OSError as err:
        return err.strerror or str(err)
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    return None


def _check_output(general: Dict[str, Any], source: str, problems: List[str]) -> None:
    """The JSON's place, checked before any trial runs (not only when the first write fails)."""
    given = general["output_dir"]
    directory = os.path.abspath(given) if given else os.getcwd()
    name = general["output_filename"]
    key_dir, key_name = f"benchy config {source}: global.output_dir", f"benchy config {source}: global.output_filename"
    if "\0" in directory:
        problems.append(f"{key_dir}: got {_describe(given)}; a path cannot hold a NUL byte")
        return
    if "\0" in name:
        problems.append(f"{key_name}: got {_describe(name)}; a file name cannot hold a NUL byte")
        return
    existing = directory
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if existing == directory and not os.path.isdir(directory):
        problems.append(f"{key_dir}: {directory} is a file, not a directory; expected a directory for the JSON result")
        return
    if existing != directory and not os.path.isdir(existing):
        problems.append(f"{key_dir}: {directory} cannot be created: {existing} is a file")
        return
    limit = _name_max(existing)
    if len(os.fsencode(name)) > limit:
        problems.append(f"{key_name}: got a name of {len(os.fsencode(name))} bytes; the file system at {existing} "
                        f"allows at most {limit}")
        return
    side = steps_name(name) if general["save_steps"] else None
    if side is not None and len(os.fsencode(side)) > limit:
        problems.append(f"{key_name}: the per-step directory's name {side[:40]}... would have {len(os.fsencode(side))} "
                        f"bytes; the file system at {existing} allows at most {limit}: shorten the name by "
                        f"{len(os.fsencode(side)) - limit} bytes or set global.save_steps: false")
        return
    why = _probe(existing)
    if why is not None:
        what = "is not writable" if existing == directory else f"cannot be created in {existing}"
        problems.append(f"{key_dir}: {directory} {what} ({why}); expected a directory where benchy can write "
                        f"its JSON result")
        return
    if os.path.isdir(os.path.join(directory, name)):
        problems.append(f"{key_name}: {os.path.join(directory, name)} is a directory; expected a file name")
    elif side is not None and os.path.exists(os.path.join(directory, side)) and not os.path.isdir(
            os.path.join(directory, side)):
        problems.append(f"{key_name}: {os.path.join(directory, side)} is a file; benchy keeps per-step times in a "
                        f"directory of that name: move the file, rename the output or set global.save_steps: false")


ConfigLike = Union[Config, Mapping[str, Any], str, "os.PathLike[str]", None]


def _with_name(overrides: Mapping[str, Any], run_name: Optional[str]) -> Mapping[str, Any]:
    """``overrides`` with ``global.run_name`` set (a copy), whichever case its ``global`` key has."""
    if run_name is None:
        return overrides
    out = dict(overrides)
    key = next((k for k in out if isinstance(k, str) and k.lower() == "global"), "global")
    section = out.get(key)
    out[key] = dict(section, run_name=run_name) if isinstance(section, Mapping) else {"run_name": run_name}
    return out


def load_config(
    path: Union[str, os.PathLike[str], None] = None,
    overrides: Optional[Mapping[str, Any]] = None,
    *,
    environ: Optional[Mapping[str, str]] = None,
) -> Config:
    """Build the effective config: defaults <- YAML file <- ``overrides``.

    ``path`` defaults to ``$BENCHY_CONFIG_FILE`` (when set and non-empty); a non-empty
    ``$BENCHY_RUN_NAME`` sets ``global.run_name`` over the file. ``overrides`` uses the file's
    layout, e.g. ``{"IO": {"ntrials": 5}}``. Raises :class:`ConfigError` listing every problem found.
    """
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get(CONFIG_ENV_VAR) or None
    merged: Dict[str, Dict[str, Any]] = {
        section: dataclasses.asdict(cls()) for section, cls in _SECTION_CLASS.items()
    }
    problems: List[str] = []
    sources: List[str] = []
    if path is not None:
        path = os.fspath(path)
        contents, problem = _read_yaml(path)
        if problem:
            raise ConfigError([problem])
        _merge_layer(merged, contents, path, problems)
        sources.append(path)
    if env.get(RUN_NAME_ENV_VAR):
        _merge_layer(merged, {"global": {"run_name": env[RUN_NAME_ENV_VAR]}}, f"${RUN_NAME_ENV_VAR}", problems)
    if overrides is not None:
        _merge_layer(merged, overrides, "<python overrides>", problems)
        sources.append("<python overrides>")
    source = " + ".join(sources) if sources else "defaults"
    if not problems:
        _check_consistency(merged, source, problems)
    if not problems:
        _check_output(merged["global"], source, problems)
    if problems:
        raise ConfigError(problems)
    return Config(
        general=GlobalConfig(**merged["global"]),
        io=ModeConfig(**merged["IO"]),
        synthetic=ModeConfig(**merged["synthetic"]),
        full=ModeConfig(**merged["full"]),
        sweep=SweepConfig(**merged["sweep"]),
        source=source,
    )


def resolve_config(config: ConfigLike, run_name: Optional[str] = None) -> Config:
    """Accept what the wrappers accept: a Config, a mapping of overrides, a path, or None.

    ``run_name`` (``--benchy_name``) sets ``global.run_name`` over everything else."""
    named = {"global": {"run_name": run_name}} if run_name is not None else None
    if isinstance(config, Config):
        if named is None:
            return config
        rules = _GLOBAL_RULES["run_name"]
        if not rules[0](run_name):
            raise ConfigError([f"benchy --benchy_name: got {_describe(run_name)}; expected {rules[1]}"])
        return dataclasses.replace(config, general=dataclasses.replace(config.general, run_name=run_name))
    if config is None:
        return load_config(overrides=named)
    if isinstance(config, Mapping):
        return load_config(overrides=_with_name(config, run_name))
    if isinstance(config, (str, os.PathLike)):
        return load_config(path=config, overrides=named)
    raise ConfigError(
        [f"benchy config: got {_describe(config)}; expected a benchy.Config, a mapping of overrides, "
         f"a path to a YAML file, or None"]
    )
