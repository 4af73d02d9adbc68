"""The package as a user installs it: the sdist and the wheel built by ``python -m build``, checked by
``twine check --strict``, and the wheel (not the checkout) installed into a fresh virtual environment
that then runs ``benchy --version``, ``benchy summary`` on a stored result, a wrapped training and a
zero-edit ``benchy run`` (which needs the package's ``sitecustomize.py``). A file missing from the
wheel (``py.typed``, the boot file, the licence) fails here, not on a user's machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest
import yaml
from helpers import ROOT, made_once

from benchy import __version__

DISTRIBUTION = "torch-benchy"  # the name on the package index; `benchy` there is another project
WHEEL_NAME = DISTRIBUTION.replace("-", "_")
SCRIPTS = ROOT / "tests" / "scripts"
STORED = ROOT / "tests" / "data" / "results" / "v4" / "benchy_result.json"
# What the wheel must hold besides the modules (each is read at run time or by type checkers).
DATA_FILES = ("benchy/py.typed", "benchy/integrations/boot/sitecustomize.py")


def run(command: List[str], cwd: Path, timeout: float, env: Dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    environ.pop("BENCHY_CONFIG_FILE", None)
    environ.pop("PYTHONPATH", None)
    environ.update(env or {})
    return subprocess.run(
        command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def in_venv(
    venv: Path, command: List[str], cwd: Path, timeout: float, env: Dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``command`` with its program from the wheel's environment's ``bin``; its bytecode written (an empty
    PYTHONDONTWRITEBYTECODE), so that the environment's first run compiles the modules it imports for the rest."""
    return run([str(venv / "bin" / command[0]), *command[1:]], cwd, timeout, {"PYTHONDONTWRITEBYTECODE": "", **(env or {})})


def _build(out: Path) -> None:
    started = time.perf_counter()
    proc = run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], ROOT, 600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(f"built in {time.perf_counter() - started:.1f} s")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """The sdist and the wheel, built once for the run (in the checkout: two builds at once would race)."""
    out = made_once(tmp_path_factory, "dist", _build)
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"{WHEEL_NAME}-{__version__}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"{WHEEL_NAME}-{__version__}.tar.gz"]
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_build_makes_an_sdist_and_a_wheel_that_twine_passes_strictly(built: Dict[str, Path]) -> None:
    proc = run([sys.executable, "-m", "twine", "check", "--strict", str(built["wheel"]), str(built["sdist"])], ROOT, 120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2, proc.stdout


def test_the_wheel_holds_the_data_files_the_licence_and_the_command(built: Dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
        info = f"{WHEEL_NAME}-{__version__}.dist-info"
        metadata = wheel.read(f"{info}/METADATA").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    for name in DATA_FILES:
        assert name in names, f"{name} is not in the wheel"
    assert f"{info}/licenses/LICENSE" in names
    # Every module of the checkout's package is in the wheel, and nothing from tests/ or examples/.
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "benchy").rglob("*.py")}
    assert modules <= names, sorted(modules - names)
    assert not [n for n in names if n.startswith(("tests/", "examples/", "benchmarks/"))]
    assert f"Name: {DISTRIBUTION}\n" in metadata and f"Version: {__version__}\n" in metadata
    assert "benchy = benchy.cli:main" in entry_points
    for requirement in ("torch", "nvtx", "rich", "numpy", "pyyaml", "psutil"):
        assert f"Requires-Dist: {requirement}" in metadata.lower().replace("requires-dist", "Requires-Dist")


@pytest.fixture(scope="session")
def venv(built: Dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (torch from the constraints' pin), made once for the run."""

    def make(folder: Path) -> None:
        home = folder / "env"
        proc = run([sys.executable, "-m", "venv", str(home)], ROOT, 120)
        assert proc.returncode == 0, proc.stderr
        started = time.perf_counter()
        # --no-compile: pip would byte-compile every module of every package (26 of the install's 42 core-seconds,
        # torch's thousands of modules), where the environment's runs compile only what they import, once
        # (in_venv: bytecode written however the suite's environment says).
        proc = run(
            [
                str(home / "bin" / "pip"),
                "install",
                "-q",
                "--no-compile",
                "-c",
                str(ROOT / "constraints.txt"),
                str(built["wheel"]),
            ],
            ROOT,
            900,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        print(f"installed in {time.perf_counter() - started:.1f} s")

    return made_once(tmp_path_factory, "venv", make) / "env"


def test_the_installed_wheel_is_the_package_imported_not_the_checkout(venv: Path, tmp_path: Path) -> None:
    proc = in_venv(venv, ["python", "-c", "import benchy, benchy.torch; print(benchy.__file__)"], tmp_path, 120)
    assert proc.returncode == 0, proc.stderr
    where = Path(proc.stdout.strip()).resolve()
    assert where.is_relative_to(venv.resolve()) and "site-packages" in where.parts, where
    proc = in_venv(venv, ["benchy", "--version"], tmp_path, 60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"benchy {__version__}", proc


def test_the_installed_command_reprints_a_stored_summary(venv: Path, tmp_path: Path) -> None:
    proc = in_venv(venv, ["benchy", "summary", str(STORED)], tmp_path, 120)
    assert proc.returncode == 0, proc.stderr
    stored = json.loads(STORED.read_text())["summary"]
    assert proc.stdout.splitlines()[: len(stored)] == stored


def small(tmp_path: Path, **global_: object) -> Path:
    mode = {"nbatches": 4, "ntrials": 2, "nwarmup": 1}
    config = {"global": {"report_freq": 0, "stages": False, **global_}, "IO": mode, "synthetic": mode, "full": mode}
    path = tmp_path / "benchy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_wrapped_training_runs_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    proc = in_venv(
        venv,
        ["python", str(SCRIPTS / "user_script.py")],
        tmp_path,
        300,
        env={"BENCHY_CONFIG_FILE": str(small(tmp_path))},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for mode in ("IO", "SYNTHETIC", "FULL"):
        assert f"BENCHY::SUMMARY::{mode} average trial throughput: " in proc.stdout
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    assert doc["environment"]["benchy_version"] == __version__ and doc["complete"] is True


def test_zero_edit_runs_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    # `benchy run` boots through the package's sitecustomize.py: a wheel without it benchmarks nothing.
    proc = in_venv(
        venv,
        [
            "benchy",
            "run",
            "--config",
            str(small(tmp_path, exit_after_tests=False)),
            "--",
            str(venv / "bin" / "python"),
            str(SCRIPTS / "plain_train.py"),
            "--epochs",
            "8",
        ],
        tmp_path,
        300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "benchy run: benchmarking the DataLoader created at" in proc.stdout
    assert "BENCHY::SUMMARY::FULL average trial throughput: " in proc.stdout
    assert "USER::done" in proc.stdout  # the script went on after the benchmark
