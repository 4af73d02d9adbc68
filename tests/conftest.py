"""Shared helpers: run a user-like script in a subprocess and read its BENCHY:: lines."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
USER_SCRIPT = ROOT / "tests" / "scripts" / "user_script.py"

SUMMARY_RE = re.compile(
    r"^BENCHY::SUMMARY::(IO|SYNTHETIC|FULL) average trial throughput: ([0-9.]+) \+/- ([0-9.]+|n/a)", re.M
)
TRIAL_RE = re.compile(r"^BENCHY::((?:IO|SYNTHETIC|FULL)(?:_WARMUP)?_\d+)::Trial Throughput: ([0-9.]+)$", re.M)


class Run:
    """A finished subprocess run with parsed benchy output."""

    def __init__(self, proc: subprocess.CompletedProcess, workdir: Path, json_path: Path) -> None:
        self.proc, self.workdir, self.json_path = proc, workdir, json_path
        self.returncode, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr

    @property
    def summary(self) -> Dict[str, Tuple[float, Optional[float]]]:
        return {m: (float(a), None if b == "n/a" else float(b)) for m, a, b in SUMMARY_RE.findall(self.stdout)}

    @property
    def trials(self) -> Dict[str, float]:
        return {label: float(v) for label, v in TRIAL_RE.findall(self.stdout)}

    @property
    def epochs(self) -> Dict[int, Tuple[int, int]]:
        found = re.findall(r"^USER::epoch (\d+) steps (\d+) len (\d+)$", self.stdout, re.M)
        return {int(e): (int(s), int(n)) for e, s, n in found}

    def result(self) -> Dict[str, Any]:
        return json.loads(self.json_path.read_text())

    def __repr__(self) -> str:
        return f"Run(rc={self.returncode})\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


_SCRATCH: List[Path] = []


@pytest.fixture(autouse=True, scope="session")
def _scratch_root(tmp_path_factory: pytest.TempPathFactory) -> None:
    _SCRATCH.append(tmp_path_factory.mktemp("sessions"))


def scratch_dir() -> str:
    """A fresh directory for a helper that has no ``tmp_path``: under pytest's temporary root,
    which pytest prunes (it keeps the last three runs), never loose in /tmp."""
    assert _SCRATCH, "scratch_dir() is for use inside tests"
    return tempfile.mkdtemp(prefix="benchy-", dir=_SCRATCH[0])


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a torchrun rendezvous)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def small_config(nbatches: int = 5, ntrials: int = 2, nwarmup: int = 1, **global_: Any) -> Dict[str, Any]:
    """A fast schedule for end-to-end tests."""
    g = {"report_freq": 0}
    g.update(global_)
    mode = {"nbatches": nbatches, "ntrials": ntrials, "nwarmup": nwarmup}
    return {"global": g, "IO": dict(mode), "synthetic": dict(mode), "full": dict(mode)}


TIMING_RERUNS = 2


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Timing tests get up to two more tries: one burst of noise on a shared VM is not a failure.

    A real bias fails every try; each try brackets benchy's run with the plain loops again.
    """
    for item in items:
        if item.get_closest_marker("timing") is not None and item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=TIMING_RERUNS, reruns_delay=2))


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing ``timing`` test reports the machine's load, so a busy machine is told from a bug."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and item.get_closest_marker("timing") is not None:
        before = item.stash.get(_LOAD_BEFORE, "unknown")
        report.sections.append((
            "machine load (timing test)",
            f"before the test: {before}\nat the failure: {_load()}\n"
            "A load well above the core count means other work competed for the CPU: rerun on an idle "
            "machine before taking this for a bug.",
        ))


_LOAD_BEFORE = pytest.StashKey[str]()


@pytest.fixture(autouse=True)
def _record_load(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("timing") is not None:
        request.node.stash[_LOAD_BEFORE] = _load()


@pytest.fixture(autouse=True)
def fresh_registry():
    """In-process tests build many wrappers: each test starts with none benchmarked yet."""
    from benchy._registry import REGISTRY

    REGISTRY.reset()
    yield
    REGISTRY.reset()


@pytest.fixture
def run_script(tmp_path: Path):
    """run_script(config, *args, script=USER_SCRIPT, env=None) -> Run, in tmp_path."""

    def run(config: Any = None, *args: str, script: Path = USER_SCRIPT, env: Optional[Dict[str, str]] = None,
            timeout: float = 180) -> Run:
        environ = dict(os.environ)
        environ.pop("BENCHY_CONFIG_FILE", None)
        environ["PYTHONUNBUFFERED"] = "1"
        if config is not None:
            cfg = tmp_path / "benchy.yaml"
            cfg.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
            environ["BENCHY_CONFIG_FILE"] = str(cfg)
        environ.update(env or {})
        proc = subprocess.run(
            [sys.executable, str(script), *args], cwd=tmp_path, env=environ,
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
        return Run(proc, tmp_path, tmp_path / "benchy_result.json")

    return run


def _nvtx_headers(workdir: Path) -> Optional[Path]:
    """The NVTX v3 headers: from the nvtx source distribution, else a local CUDA toolkit."""
    import importlib.metadata
    import tarfile

    version = importlib.metadata.version("nvtx")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "nvtx", f"nvtx=={version}",
         "-d", str(workdir)], capture_output=True, text=True, timeout=300,
    )
    for archive in workdir.glob("nvtx-*.tar.gz"):
        with tarfile.open(archive) as tar:
            tar.extractall(workdir, filter="data")
        for header in workdir.rglob("include/nvtx3/nvToolsExt.h"):
            return header.parent.parent
    for header in sorted(Path("/usr/local").glob("cuda*/include/nvtx3/nvToolsExt.h")):
        return header.parent.parent
    pytest.fail(f"cannot get the NVTX headers: pip download said {proc.stderr.strip()[-500:]!r}")
    return None


@pytest.fixture(scope="session")
def nvtx_recorder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/nvtx/recorder.c built with the system C compiler (skipped only without one)."""
    import shutil

    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) on this machine to build the NVTX recorder")
    workdir = tmp_path_factory.mktemp("nvtx")
    include = _nvtx_headers(workdir)
    library = workdir / "nvtx-recorder.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", f"-I{include}", "-o", str(library),
                    str(ROOT / "tests" / "nvtx" / "recorder.c")], check=True, capture_output=True, text=True)
    return library
