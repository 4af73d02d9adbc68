"""Fixtures and hooks (the shared helpers are in ``helpers.py``, imported as a module)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
import yaml

# One intra-op thread in every process the suite starts (set here, before any of them loads torch's OpenMP, which
# reads it once). The suite runs three workers' scripts at once on a machine of a few cores; with torch's default
# (a thread a core) each torch op wakes a thread a core, and the idle ones spin after it: a run of
# ``tests/scripts/loops.py --epochs 200 --step_ms 4 --enable_benchy``, whose step sleeps, took 7.8 core-seconds
# with 2 threads and 4.9 with one. A test that needs more threads sets them in its run's environment.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from helpers import ROOT, SCRATCH, USER_SCRIPT, ZYGOTE_SERVER, Run, made_once, run_python


@pytest.fixture(autouse=True, scope="session")
def _scratch_root(tmp_path_factory: pytest.TempPathFactory) -> None:
    SCRATCH.append(tmp_path_factory.mktemp("sessions"))
    yield
    ZYGOTE_SERVER.close()


TIMING_RERUNS = 2


def pytest_configure(config: pytest.Config) -> None:
    """Once, before the workers start: the checkout's modules byte-compiled. Hundreds of script runs import
    benchy; where PYTHONDONTWRITEBYTECODE is set (as on CI machines) none would write its bytecode, and each
    would compile benchy again (about 0.1 s of CPU a process)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import compileall

    for part in ("benchy", "tests", "examples"):
        compileall.compile_dir(str(ROOT / part), quiet=1)


# The longest tests (tens of seconds each, on 2 cores): started first, so that under pytest-xdist they spread
# over the workers and none of them is left to run alone at the end.
LONGEST = (
    "test_ray_train_torch_trainer_as_it_is",
    "test_the_ci_recipe_writes_a_baseline",
    "test_trials_on_a_busy_machine_are_flagged",
    "test_ddp_example_under_torchrun",
    "test_a_killed_rank_among_eight",
    "test_the_demo_shows_its_bottleneck",
    "test_a_dropped_epoch_is_heard_too",
    "test_a_finished_schedule_keeps_about",
    "test_hugging_face_trainer_as_it_is",
    "test_plain_loops",
    "test_lightning_ddp_with_the_injected_distributed_sampler",
    "test_the_strict_build_fails",
    "test_mypy_finds_no_issue",
    "test_the_documentation_site_builds_strictly",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Timing tests get up to two more tries: one burst of noise on a shared machine is not a failure (a real
    bias fails every try; each try brackets benchy's run with the plain loops again). The longest tests come
    first. (The expensive fixtures shared by several tests, the built wheel's environment and the NVTX recorder,
    are made once for the run whatever the workers, by ``helpers.made_once``: pytest-xdist 3.8's ``xdist_group``
    marks have no effect under pytest 9, which no longer reads the node id xdist rewrites.)"""
    for item in items:
        if item.get_closest_marker("timing") is not None and item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=TIMING_RERUNS, reruns_delay=2))

    def first(item: pytest.Item) -> int:
        if item.path.name == "test_wheel.py":
            return 0
        return 0 if any(name in item.name for name in LONGEST) else 1

    items.sort(key=first)  # stable: the order within each part is kept


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


# A timing test that fails while other processes kept more than this many cores busy on average says the
# machine was too busy to tell (a skip with the figures), rather than failing: it cannot hold there.
TOO_BUSY_CORES = 0.3


def _cpu_now() -> tuple:
    """(wall clock, the machine's busy CPU seconds, this process tree's CPU seconds: itself, its descendants
    alive now, and the children each of them has waited for: a script run by the fork server is the server's
    child, and once it ended its time is in the server's children's counters, not this process's)."""
    import psutil

    machine = psutil.cpu_times()
    idle = machine.idle + getattr(machine, "iowait", 0.0)
    me = psutil.Process()
    own = me.cpu_times()
    ours = own.user + own.system + own.children_user + own.children_system
    for child in me.children(recursive=True):
        try:
            times = child.cpu_times()
            ours += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            pass
    return time.monotonic(), sum(machine) - idle, ours


def _others(start: tuple) -> Optional[float]:
    """Cores other processes kept busy on average since ``start`` (None: too short to tell)."""
    end = _cpu_now()
    wall = end[0] - start[0]
    if wall < 0.5:
        return None
    return max(0.0, (end[1] - start[1]) - (end[2] - start[2])) / wall


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing ``timing`` test reports the machine's load, so a busy machine is told from a bug; where
    other processes kept more than :data:`TOO_BUSY_CORES` busy during it, it says the machine was too
    busy to tell (skipped, with the figures) instead of failing. Only a failed assertion is a measurement the
    load can spoil: an error (a bug in the test or the code) fails whatever the load."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and item.get_closest_marker("timing") is not None:
        before = item.stash.get(_LOAD_BEFORE, "unknown")
        started = item.stash.get(_CPU_BEFORE, None)
        others = None if started is None else _others(started)
        measured = call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
        if measured and others is not None and others > TOO_BUSY_CORES:
            report.outcome = "skipped"
            report.longrepr = (
                str(item.path),
                item.location[1] or 0,
                f"Skipped: the machine was too busy to tell: other processes kept {others:.2f} of "
                f"{os.cpu_count()} cores busy during the test (more than {TOO_BUSY_CORES}); "
                f"{_load()}",
            )
            return
        report.sections.append(
            (
                "machine load (timing test)",
                f"before the test: {before}\nat the failure: {_load()}\n"
                + ("" if others is None else f"other processes kept {others:.2f} cores busy during the test\n")
                + "A load well above the core count means other work competed for the CPU: rerun on an idle "
                "machine before taking this for a bug.",
            )
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]):
    """With ``BENCHY_TEST_COSTS=<file>``, each test's process tree's CPU seconds (the worker, the fork server, their
    children: :func:`_cpu_now`), its wall-clock seconds and when it began (Unix time) are appended to the file, a
    tab-separated line a test (its session fixtures' cost goes to the first test that asks for them): what a slow
    test costs the suite's two cores, which its duration under pytest-xdist does not say, and which tests ran
    while the cores stood idle."""
    path = os.environ.get("BENCHY_TEST_COSTS")
    if not path:
        yield
        return
    start, began = _cpu_now(), time.time()
    yield
    end = _cpu_now()
    with open(path, "a") as out:
        out.write(f"{end[2] - start[2]:.2f}\t{end[0] - start[0]:.2f}\t{began:.1f}\t{item.nodeid}\n")


_LOAD_BEFORE = pytest.StashKey[str]()
_CPU_BEFORE = pytest.StashKey[tuple]()


@pytest.fixture(autouse=True)
def _record_load(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("timing") is not None:
        request.node.stash[_LOAD_BEFORE] = _load()
        request.node.stash[_CPU_BEFORE] = _cpu_now()


@pytest.fixture(autouse=True)
def fresh_registry():
    """In-process tests build many wrappers: each test starts with none benchmarked yet."""
    from benchy.session.registry import REGISTRY

    REGISTRY.reset()
    yield
    REGISTRY.reset()


@pytest.fixture
def run_script(tmp_path: Path):
    """run_script(config, *args, script=USER_SCRIPT, env=None) -> Run, in tmp_path."""

    def run(
        config: Any = None, *args: str, script: Path = USER_SCRIPT, env: Optional[Dict[str, str]] = None, timeout: float = 180
    ) -> Run:
        environ = dict(os.environ)
        environ.pop("BENCHY_CONFIG_FILE", None)
        environ["PYTHONUNBUFFERED"] = "1"
        if config is not None:
            cfg = tmp_path / "benchy.yaml"
            cfg.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
            environ["BENCHY_CONFIG_FILE"] = str(cfg)
        environ.update(env or {})
        proc = run_python(script, args, tmp_path, environ, timeout)
        return Run(proc, tmp_path, tmp_path / "benchy_result.json")

    return run


def _nvtx_headers(workdir: Path) -> Optional[Path]:
    """The NVTX v3 headers: from the nvtx source distribution, else a local CUDA toolkit."""
    import importlib.metadata
    import tarfile

    version = importlib.metadata.version("nvtx")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            "nvtx",
            f"nvtx=={version}",
            "-d",
            str(workdir),
        ],
        capture_output=True,
        text=True,
        timeout=300,
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

    def make(workdir: Path) -> None:
        include = _nvtx_headers(workdir)
        subprocess.run(
            [
                compiler,
                "-shared",
                "-fPIC",
                "-O2",
                f"-I{include}",
                "-o",
                str(workdir / "nvtx-recorder.so"),
                str(ROOT / "tests" / "nvtx" / "recorder.c"),
            ],
            check=True,
            capture_output=True,
            text=True,
        )

    return made_once(tmp_path_factory, "nvtx", make) / "nvtx-recorder.so"  # once for the run, whatever the workers
