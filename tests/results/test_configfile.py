"""The config as a run reads it: the YAML file (malformed, unsafe, missing, oversized) and the output
directory, checked for real before any trial runs (``benchy.results.configfile``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchy import ConfigError, load_config


def alias_bomb(levels: int = 9) -> str:
    """About 470 bytes of YAML that expand to 9**9 strings if anything walks them in full."""
    lines = ['  report_freq: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    keys = [
        "console",
        "nvtx",
        "profiler_mode",
        "sync_every_step",
        "exit_after_tests",
        "dist_timeout",
        "output_filename",
        "use_distributed_barrier",
    ]
    for i in range(1, levels):
        lines.append(f"  {keys[i - 1]}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "global:\n" + "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "IO:\n  nbatches: [1, 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert f"benchy config {path}: malformed YAML at line" in str(info.value)


def test_unsafe_yaml_tags_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "IO: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_config(path, environ={})


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: file not found"):
        load_config(environ={"BENCHY_CONFIG_FILE": str(tmp_path / "nope.yaml")})
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path, environ={})


def test_an_alias_bomb_under_known_keys_is_reported_at_once(tmp_path: Path) -> None:
    import time

    path = write(tmp_path, alias_bomb())
    assert path.stat().st_size < 600
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    elapsed = time.monotonic() - start
    # margin: refused before expansion it takes milliseconds (a CPU slowed 2x by load: still far under 2 s); expanded
    # (the bug), the bomb's billions of items take minutes.
    assert elapsed < 2.0, f"validation took {elapsed:.1f} s"
    message = str(info.value)
    assert "global.report_freq: got ['lol', 'lol', 'lol', 'lol', ...] (list)" in message
    assert "global.dist_timeout: got [[[...], [...], [...], [...], ...], " in message
    assert len(message) < 5000


def test_an_oversized_config_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("global:\n" + "#" * (2 << 20) + "\n")
    with pytest.raises(ConfigError, match=r"huge\.yaml: the file is larger than 1048576 bytes"):
        load_config(path, environ={})


def test_output_dir_that_is_a_file_or_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match=f"global.output_dir: {blocker} is a file, not a directory"):
        load_config(overrides={"global": {"output_dir": str(blocker)}}, environ={})
    with pytest.raises(ConfigError, match=f"global.output_dir: {blocker}/a/b cannot be created: {blocker} is a file"):
        load_config(overrides={"global": {"output_dir": str(blocker / "a" / "b")}}, environ={})
    # A directory that does not exist yet is fine: benchy creates it at the first write.
    assert load_config(overrides={"global": {"output_dir": str(tmp_path / "new" / "dir")}}, environ={})
    assert not (tmp_path / "new").exists()  # ... and checking it creates nothing


def test_output_dir_where_nothing_can_be_written(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        target = "/proc/benchy-results"  # root writes anywhere but in /proc
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        target = str(ro)
    with pytest.raises(ConfigError, match=r"global.output_dir: .* (is not writable|cannot be created in)"):
        load_config(overrides={"global": {"output_dir": target}}, environ={})


@pytest.mark.parametrize(
    "name, reason",
    [
        ("res\0ult.json", "a file name cannot hold a NUL byte"),
        ("r" * 300 + ".json", "got a name of 305 bytes; the file system at"),
    ],
)
def test_output_filenames_the_file_system_cannot_hold(tmp_path: Path, name: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides={"global": {"output_filename": name, "output_dir": str(tmp_path)}}, environ={})
    assert "global.output_filename: " in str(info.value) and reason in str(info.value)
