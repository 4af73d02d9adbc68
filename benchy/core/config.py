"""Configuration: the merge of layers (defaults, the YAML file, the environment, Python overrides, key by key) into
one :class:`Config`, validated (pure, no torch, no files; docs/reference/configuration.md). Every problem is reported
at once in one :class:`ConfigError`, before any trial runs. Reading the file is :mod:`benchy.results.configfile`'s.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .config_rules import (
    ATTR_OF_SECTION,
    AUTO,
    RULES,
    SECTION_BY_LOWER,
    SECTION_CLASS,
    GlobalConfig,
    ModeConfig,
    SweepConfig,
    check_consistency,
    describe,
    merge_layer,
    output_stem,
    steps_name,
)
from .errors import BenchyError

CONFIG_ENV_VAR = "BENCHY_CONFIG_FILE"
RUN_NAME_ENV_VAR = "BENCHY_RUN_NAME"  # overrides global.run_name (as --benchy_name does)


class ConfigError(BenchyError, ValueError):
    """A benchy configuration problem, raised before any trial runs.

    ``problems`` holds one line per problem, each naming the source, the ``section.key``, the value received and what
    is allowed.
    """

    def __init__(self, problems: List[str]) -> None:
        self.problems = list(problems)
        many = f"{len(self.problems)} problems:\n  " + "\n  ".join(self.problems)
        super().__init__(self.problems[0] if len(self.problems) == 1 else many)


ConfigError.__module__ = "benchy"  # tracebacks show benchy.ConfigError, the public name


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
        section = SECTION_BY_LOWER.get(name.lower()) if isinstance(name, str) else None
        if section is None:
            raise KeyError(f"unknown benchy section {name!r} (allowed: {', '.join(ATTR_OF_SECTION)})")
        return getattr(self, ATTR_OF_SECTION[section])

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

    @property
    def profile_dir(self) -> str:
        """Where ``profiler: torch`` writes its trace files: ``<output name>.profile`` next to the JSON."""
        return os.path.join(os.path.dirname(self.output_path), output_stem(self.general.output_filename) + ".profile")

    def rank_steps_dir(self, rank: int) -> Optional[str]:
        """Where ``rank`` saves its per-step files: rank 0 in :attr:`steps_dir`, rank ``r`` in its
        ``rank<r>/`` with ``save_steps: all``; None where that rank saves none."""
        top = self.steps_dir
        if top is None or rank == 0:
            return top
        return os.path.join(top, f"rank{rank}") if self.general.save_steps == "all" else None

    def to_dict(self) -> Dict[str, Dict[str, Any]]:
        """The config in the file's layout (section names as in the original)."""
        out = {section: dataclasses.asdict(getattr(self, attr)) for section, attr in ATTR_OF_SECTION.items()}
        out["global"]["output_dir"] = self.general.output_dir or os.getcwd()
        capture = self.general.profiler_capture
        out["global"]["profiler_capture"] = capture if capture == AUTO else list(capture)
        out["sweep"] = {k: (v if isinstance(v, str) else list(v)) for k, v in out["sweep"].items()}
        return out


# What the wrappers and load_config accept as a config.
ConfigLike = Union[Config, Mapping[str, Any], str, "os.PathLike[str]", None]


def merge_layers(layers: Sequence[Tuple[str, Any]]) -> Tuple[Dict[str, Dict[str, Any]], str, List[str]]:
    """The defaults with each ``(source, contents)`` layer merged over them in order: the merged sections, the
    sources' names and every problem found."""
    merged: Dict[str, Dict[str, Any]] = {section: dataclasses.asdict(cls()) for section, cls in SECTION_CLASS.items()}
    problems: List[str] = []
    for source, contents in layers:
        merge_layer(merged, contents, source, problems)
    named = [source for source, _ in layers if not source.startswith("$")]
    source = " + ".join(named) if named else "defaults"
    if not problems:
        check_consistency(merged, source, problems)
    return merged, source, problems


def config_of(merged: Mapping[str, Mapping[str, Any]], source: str, cwd: str) -> Config:
    """The :class:`Config` of merged sections, its ``output_dir`` made absolute against ``cwd`` now, so
    that a script that changes directory later (Hydra's ``job.chdir``) writes where benchy checked."""
    sections: Dict[str, Any] = {ATTR_OF_SECTION[name]: cls(**merged[name]) for name, cls in SECTION_CLASS.items()}
    return with_absolute_paths(Config(**sections, source=source), cwd)


def with_absolute_paths(config: Config, cwd: str) -> Config:
    """``config`` with its ``output_dir`` absolute against ``cwd`` and normalised, by string alone."""
    given = config.general.output_dir
    directory = os.path.normpath(os.path.join(cwd, os.path.expanduser(given) if given else cwd))
    if directory == config.general.output_dir:
        return config
    return dataclasses.replace(config, general=dataclasses.replace(config.general, output_dir=directory))


def with_global(overrides: Optional[Mapping[str, Any]], given: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """``overrides`` with the ``global`` keys in ``given`` set (a copy), whichever case its ``global`` key has."""
    if not given:
        return overrides
    out = dict(overrides or {})
    key = next((k for k in out if isinstance(k, str) and k.lower() == "global"), "global")
    section = out.get(key)
    out[key] = dict(section, **given) if isinstance(section, Mapping) else dict(given)
    return out


def check_global(given: Mapping[str, Any]) -> None:
    """:class:`ConfigError` unless each ``--benchy_*`` value in ``given`` is allowed for its key."""
    for key, value in given.items():
        rule = RULES["global"][key]
        if not rule.check(value):
            raise ConfigError([f"benchy --benchy_{key.replace('run_', '')}: got {describe(value)}; expected {rule.allowed}"])
