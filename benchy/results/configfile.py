"""The configuration as a run reads it: the YAML file and the environment merged (by the pure
:func:`benchy.core.config.merge_layers`), the output directory probed for real, every path made absolute once
against the directory the run started in. No torch.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import yaml

from ..core.config import (
    CONFIG_ENV_VAR,
    RUN_NAME_ENV_VAR,
    Config,
    ConfigError,
    ConfigLike,
    check_global,
    config_of,
    merge_layers,
    with_absolute_paths,
    with_global,
)
from ..core.config_rules import MAX_CONFIG_BYTES, PROBE_PREFIX, describe, steps_name


def load_config(
    path: Union[str, os.PathLike[str], None] = None,
    overrides: Optional[Mapping[str, Any]] = None,
    *,
    environ: Optional[Mapping[str, str]] = None,
) -> Config:
    """Build the effective config: defaults <- YAML file <- ``overrides``.

    ``path`` defaults to ``$BENCHY_CONFIG_FILE`` (when set and non-empty); a non-empty
    ``$BENCHY_RUN_NAME`` sets ``global.run_name`` over the file. ``overrides`` uses the file's
    layout, e.g. ``{"IO": {"ntrials": 5}}``. ``global.output_dir`` comes back absolute (the current
    directory when null), checked to be writable. Raises :class:`ConfigError` listing every problem found.
    """
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get(CONFIG_ENV_VAR) or None
    layers: List[Tuple[str, Any]] = []
    if path is not None:
        path = os.fspath(path)
        contents, problem = read_yaml(path)
        if problem:
            raise ConfigError([problem])
        layers.append((path, contents))
    if env.get(RUN_NAME_ENV_VAR):
        layers.append((f"${RUN_NAME_ENV_VAR}", {"global": {"run_name": env[RUN_NAME_ENV_VAR]}}))
    if overrides is not None:
        layers.append(("<python overrides>", overrides))
    merged, source, problems = merge_layers(layers)
    cwd = os.getcwd()
    problem = None if problems else check_output(merged["global"], source, cwd)
    if problem is not None:
        problems.append(problem)
    if problems:
        raise ConfigError(problems)
    return config_of(merged, source, cwd)


def resolve_config(config: ConfigLike, run_name: Optional[str] = None, count: Optional[str] = None) -> Config:
    """The config from what the wrappers accept, ``run_name`` (``--benchy_name``) and ``count``
    (``--benchy_count``) over everything else."""
    given: Dict[str, Any] = {k: v for k, v in (("run_name", run_name), ("count", count)) if v is not None}
    if isinstance(config, Config):
        check_global(given)
        config = with_absolute_paths(config, os.getcwd())
        if not given:
            return config
        return dataclasses.replace(config, general=dataclasses.replace(config.general, **given))
    if config is None:
        return load_config(overrides=with_global(None, given))
    if isinstance(config, Mapping):
        return load_config(overrides=with_global(config, given))
    if isinstance(config, (str, os.PathLike)):
        return load_config(path=config, overrides=with_global(None, given))
    raise ConfigError(
        [
            f"benchy config: got {describe(config)}; expected a benchy.Config, a mapping of overrides, "
            f"a path to a YAML file, or None"
        ]
    )


def read_yaml(path: str) -> Tuple[Any, Optional[str]]:
    """(contents, problem)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            return None, (
                f"benchy config {path}: the file is larger than {MAX_CONFIG_BYTES} bytes; a benchy config "
                f"is a few lines (sections global, IO, synthetic, full)"
            )
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


def check_output(general: Mapping[str, Any], source: str, cwd: str) -> Optional[str]:
    """What is wrong with the JSON's place (None: nothing), checked before any trial runs (not only when the first
    write fails)."""
    given = general["output_dir"]
    directory = os.path.normpath(os.path.join(cwd, os.path.expanduser(given) if given else cwd))
    name = general["output_filename"]
    key_dir, key_name = f"benchy config {source}: global.output_dir", f"benchy config {source}: global.output_filename"
    if "\0" in directory:
        return f"{key_dir}: got {describe(given)}; a path cannot hold a NUL byte"
    if "\0" in name:
        return f"{key_name}: got {describe(name)}; a file name cannot hold a NUL byte"
    existing = directory
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if existing == directory and not os.path.isdir(directory):
        return f"{key_dir}: {directory} is a file, not a directory; expected a directory for the JSON result"
    if existing != directory and not os.path.isdir(existing):
        return f"{key_dir}: {directory} cannot be created: {existing} is a file"
    try:
        limit = int(os.pathconf(existing, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or no answer: the common limit
        limit = 255
    if len(os.fsencode(name)) > limit:
        return f"{key_name}: got a name of {len(os.fsencode(name))} bytes; the file system at {existing} allows at most {limit}"
    side = steps_name(name) if general["save_steps"] else None
    if side is not None and len(os.fsencode(side)) > limit:
        return (
            f"{key_name}: the per-step directory's name {side[:40]}... would have {len(os.fsencode(side))} "
            f"bytes; the file system at {existing} allows at most {limit}: shorten the name by "
            f"{len(os.fsencode(side)) - limit} bytes or set global.save_steps: false"
        )
    why = _probe(existing)
    if why is not None:
        what = "is not writable" if existing == directory else f"cannot be created in {existing}"
        return f"{key_dir}: {directory} {what} ({why}); expected a directory where benchy can write its JSON result"
    if os.path.isdir(os.path.join(directory, name)):
        return f"{key_name}: {os.path.join(directory, name)} is a directory; expected a file name"
    if side is not None and os.path.exists(os.path.join(directory, side)) and not os.path.isdir(os.path.join(directory, side)):
        return (
            f"{key_name}: {os.path.join(directory, side)} is a file; benchy keeps per-step times in a "
            f"directory of that name: move the file, rename the output or set global.save_steps: false"
        )
    return None
