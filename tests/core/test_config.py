"""Configuration: defaults, key-by-key merge, overrides, and one clear error per bad input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchy import Config, ConfigError, load_config
from benchy.results.configfile import resolve_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_defaults_match_the_original_but_the_counts_are_auto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load_config(environ={})
    assert cfg.source == "defaults"
    assert cfg.general.report_freq == 10
    assert cfg.general.exit_after_tests is True
    assert cfg.general.profiler_mode == "single"
    assert cfg.general.output_filename == "benchy_result.json"
    assert cfg.general.use_distributed_barrier is False
    assert cfg.output_path == str(tmp_path / "benchy_result.json")
    for mode in ("IO", "SYNTHETIC", "FULL"):
        m = cfg.mode(mode)
        assert (m.run_benchmark, m.nbatches, m.ntrials, m.nwarmup) == (True, 50, "auto", "auto")


def test_partial_file_merges_key_by_key(tmp_path: Path) -> None:
    path = write(tmp_path, "IO:\n  ntrials: 7\n")
    cfg = load_config(path, environ={})
    assert cfg.io.ntrials == 7
    assert (cfg.io.nbatches, cfg.io.nwarmup, cfg.io.run_benchmark) == (50, "auto", True)
    assert cfg.full == Config().full and cfg.general.report_freq == 10


def test_env_var_selects_the_file_and_overrides_win(tmp_path: Path) -> None:
    path = write(tmp_path, "full: {nbatches: 9, ntrials: 4}\nglobal: {report_freq: 3}\n")
    cfg = load_config(overrides={"full": {"ntrials": 2}}, environ={"BENCHY_CONFIG_FILE": str(path)})
    assert (cfg.full.nbatches, cfg.full.ntrials, cfg.general.report_freq) == (9, 2, 3)
    assert str(path) in cfg.source and "overrides" in cfg.source


def test_section_names_are_case_insensitive(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "io: {nbatches: 3}\nSYNTHETIC: {nbatches: 4}\nFull: {nbatches: 5}\n"), environ={})
    assert (cfg.io.nbatches, cfg.synthetic.nbatches, cfg.full.nbatches) == (3, 4, 5)


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, ""), environ={}).io == Config().io


def test_resolve_accepts_config_mapping_and_path(tmp_path: Path) -> None:
    cfg = Config()
    resolved = resolve_config(cfg)
    assert resolved.general.output_dir == os.getcwd() and resolved.io == cfg.io
    assert resolve_config(resolved) is resolved  # its paths already absolute: the same config
    assert resolve_config({"IO": {"nbatches": 2}}).io.nbatches == 2
    assert resolve_config(str(write(tmp_path, "IO: {nbatches: 3}"))).io.nbatches == 3
    with pytest.raises(ConfigError, match=r"expected a benchy\.Config, a mapping"):
        resolve_config(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("IO:\n  nbatch: 5\n", "IO.nbatch: unknown key (allowed: run_benchmark, nbatches, ntrials, nwarmup)"),
        (
            "global:\n  price_per_hour: 3.5\n",
            "global.price_per_hour: removed after 0.2.0 (what the data wait costs at a price an hour); expected no such key",
        ),
        ("global:\n  report_frq: 5\n", "global.report_frq: unknown key (allowed: report_freq,"),
        ("fulll:\n  nbatches: 5\n", "'fulll': unknown section (allowed: global, IO, synthetic, full, sweep)"),
        ("IO:\n  nbatches: 0\n", "IO.nbatches: got 0 (int); expected an integer from 1 to 1000000"),
        ("IO:\n  nbatches: '5'\n", "IO.nbatches: got '5' (str); expected an integer from 1 to 1000000"),
        ("IO:\n  nbatches: 5.5\n", "IO.nbatches: got 5.5 (float); expected an integer from 1 to 1000000"),
        ("full:\n  ntrials: -1\n", "full.ntrials: got -1 (int); expected an integer from 0 to 10000"),
        ("synthetic:\n  nwarmup: -2\n", "synthetic.nwarmup: got -2 (int); expected an integer from 0 to 10000"),
        ("IO:\n  run_benchmark: 'yes'\n", "IO.run_benchmark: got 'yes' (str); expected true or false"),
        ("IO:\n  nbatches: true\n", "IO.nbatches: got True (bool); expected an integer from 1 to 1000000"),
        (
            "global:\n  profiler_mode: everything\n",
            "global.profiler_mode: got 'everything' (str); expected one of 'single', 'all', 'none'",
        ),
        ("global:\n  report_freq: -1\n", "global.report_freq: got -1 (int); expected an integer >= 0"),
        ("global:\n  profiler: nsys\n", "global.profiler: got 'nsys' (str); expected one of 'cudaProfilerApi', 'torch'"),
        ("global:\n  profiler_steps: 0\n", "global.profiler_steps: got 0 (int); expected an integer from 1 to 10000"),
        (
            "global:\n  profiler_capture: [FULL, FULL]\n",
            "global.profiler_capture: got ['FULL', 'FULL'] (list); "
            "expected 'auto' (every kind for cudaProfilerApi, FULL for torch), or a non-empty list of distinct",
        ),
        (
            "global:\n  save_steps: some\n",
            "global.save_steps: got 'some' (str); expected true (rank 0's per-step files), 'all' (every rank's) or false",
        ),
        (
            "global:\n  output_filename: a/b.json\n",
            "global.output_filename: got 'a/b.json' (str); expected a non-empty file name",
        ),
        ("global:\n  console: fancy\n", "global.console: got 'fancy' (str); expected one of 'auto', 'rich', 'plain'"),
        ("- IO\n- full\n", "expected a mapping of sections (global, IO, synthetic, full, sweep) at the top level"),
        ("IO: 5\n", "IO: expected a mapping of keys, got 5 (int)"),
        ("IO:\n  ntrials: 0\n", "IO.ntrials: got 0 with run_benchmark: true, which measures nothing"),
        (
            "IO: {run_benchmark: false}\nsynthetic: {run_benchmark: false}\nfull: {run_benchmark: false}\n",
            "every section has run_benchmark: false",
        ),
        ("IO: {nbatches: 3}\nio: {nbatches: 4}\n", "section given twice"),
    ],
)
def test_bad_values_name_file_key_value_and_what_is_allowed(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    message = str(info.value)
    assert expected in message
    assert f"benchy config {path}" in message


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    path = write(tmp_path, "IO: {nbatch: 1, ntrials: -1}\nglobal: {profiler_mode: x}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert len(info.value.problems) == 3
    assert str(info.value).startswith("3 problems:")


def test_overrides_are_validated_the_same_way() -> None:
    with pytest.raises(ConfigError, match=r"<python overrides>: full\.nbatches: got 0 \(int\)"):
        load_config(overrides={"full": {"nbatches": 0}}, environ={})


def test_to_dict_round_trips_through_the_loader(tmp_path: Path) -> None:
    cfg = load_config(overrides={"IO": {"ntrials": 2}, "global": {"output_dir": str(tmp_path)}}, environ={})
    again = load_config(overrides=cfg.to_dict(), environ={})
    assert (again.io, again.general) == (cfg.io, cfg.general)


def test_public_api_is_exported() -> None:
    import benchy
    import benchy.torch

    for name in benchy.__all__:
        assert hasattr(benchy, name), name
    assert benchy.torch.BenchmarkDataLoader is benchy.BenchmarkDataLoader
    assert benchy.DistributedError.__module__ == "benchy" and benchy.ConfigError.__module__ == "benchy"


def test_benchy_errors_share_one_base_class() -> None:
    import benchy

    for error in (benchy.ConfigError, benchy.DistributedError, benchy.EmptyLoaderError):
        assert issubclass(error, benchy.BenchyError) and error.__module__ == "benchy"
    assert issubclass(benchy.ConfigError, ValueError) and issubclass(benchy.EmptyLoaderError, RuntimeError)
    with pytest.raises(benchy.BenchyError, match="unknown key"):
        load_config(overrides={"IO": {"nbatch": 5}}, environ={})


# --- bounded validation (a file can hold anything) --------------------------------------------


@pytest.mark.parametrize(
    "section, key, value, allowed",
    [
        ("IO", "nbatches", 1_000_000_000, "an integer from 1 to 1000000"),
        ("full", "ntrials", 10**30, "an integer from 0 to 10000"),
        ("global", "auto_max_trials", 5000, "an integer from 2 to 1000"),
        ("global", "dist_timeout", 1e12, "a number of seconds > 0 and at most 604800"),
    ],
)
def test_counts_are_capped_before_anything_is_allocated(section: str, key: str, value: object, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides={section: {key: value}}, environ={})
    assert f"{section}.{key}: got " in str(info.value) and allowed in str(info.value)


# --- the JSON's place is checked before any trial runs ------------------------------------------


def test_stages_takes_true_or_false() -> None:
    assert load_config(environ={}).general.stages is True
    assert load_config(overrides={"global": {"stages": False}}, environ={}).general.stages is False
    with pytest.raises(ConfigError, match=r"global.stages: got 'yes'.*true or false"):
        load_config(overrides={"global": {"stages": "yes"}}, environ={})


def test_the_capture_kinds_follow_the_profiler_unless_given() -> None:
    assert load_config(environ={}).general.capture_kinds == ("IO", "SYNTHETIC", "FULL")
    torch_profiler = load_config(overrides={"global": {"profiler": "torch"}}, environ={})
    assert torch_profiler.general.capture_kinds == ("FULL",) and torch_profiler.general.profiler_steps == 5
    given = load_config(overrides={"global": {"profiler": "torch", "profiler_capture": ["io", "FULL"]}}, environ={})
    assert given.general.capture_kinds == ("IO", "FULL")
    assert torch_profiler.to_dict()["global"]["profiler_capture"] == "auto"  # as given: round-trips


def test_save_steps_all_gives_every_rank_its_folder(tmp_path: Path) -> None:
    every = load_config(overrides={"global": {"save_steps": "all", "output_dir": str(tmp_path)}}, environ={})
    assert every.rank_steps_dir(0) == str(tmp_path / "benchy_result.steps")
    assert every.rank_steps_dir(3) == str(tmp_path / "benchy_result.steps" / "rank3")
    rank0 = load_config(overrides={"global": {"output_dir": str(tmp_path)}}, environ={})
    assert rank0.rank_steps_dir(0) == str(tmp_path / "benchy_result.steps") and rank0.rank_steps_dir(1) is None
    assert rank0.profile_dir == str(tmp_path / "benchy_result.profile")
