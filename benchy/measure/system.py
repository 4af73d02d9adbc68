"""System metrics per trial: a sampler thread (psutil, and NVML with ``nvidia-ml-py``) started and stopped at
trial boundaries, over the process and its children (the loader's workers); the memory of the loader's workers,
the training process and the machine. A tick holds the GIL well under a millisecond, a few times a second.
"""

from __future__ import annotations

import glob
import math
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import psutil

from ..core.results import SystemFigures
from ..core.stages import WorkerMemory

CHILDREN_EVERY_S = 0.2  # how often the list of child processes (workers) is refreshed (a pass's workers can live < 1 s)
try:
    TICK_S = 1.0 / float(os.sysconf("SC_CLK_TCK"))  # the granularity of the kernel's CPU times
except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
    TICK_S = 0.01


def _affinity() -> Optional[List[int]]:
    """The cores this process may run on (None: the system cannot say)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def available_cores() -> int:
    """Cores this process may run on (its affinity), else the machine's."""
    mine = _affinity()
    return (os.cpu_count() or 1) if mine is None else len(mine)


def _busy_seconds(times: Any) -> float:
    """CPU seconds a core (or all of them) spent on anything but idle and waiting for I/O."""
    idle = getattr(times, "idle", 0.0) + getattr(times, "iowait", 0.0)
    # guest time is already in user (Linux); everything else (user, system, irq, steal ...) is busy.
    total = sum(getattr(times, f) for f in times._fields if f not in ("guest", "guest_nice"))
    return max(0.0, total - idle)


def _machine_busy(cpus: Optional[List[int]]) -> float:
    try:
        if cpus is None:
            return _busy_seconds(psutil.cpu_times())
        per = psutil.cpu_times(percpu=True)
        return sum(_busy_seconds(per[c]) for c in cpus if c < len(per))
    except Exception:  # pragma: no cover - no /proc/stat
        return 0.0


KNOWN_SHARE = 0.1  # other processes' CPU is reported when known to within this share of the cores


def _slack(cores: float, processes: float, wall: float) -> float:
    """How far the cores busy of a trial may be off: a kernel tick per core and per process, at each end."""
    return 2.0 * TICK_S * (cores + processes) / wall


def disturbed(system: SystemFigures, share: float) -> bool:
    """Whether other processes certainly kept more than ``share`` of the cores busy during the trial."""
    other, wall = system.other_cores_busy, system.seconds
    if other is None or wall <= 0:
        return False
    cores = float(system.cpu_cores if system.cpu_cores is not None else 1)
    return float(other) - _slack(cores, float(system.processes or 1), wall) > share * cores


class _Gpu:
    """NVML readings for one device."""

    def __init__(self, index: int) -> None:
        import pynvml  # nvidia-ml-py, an optional extra

        pynvml.nvmlInit()
        self._nvml = pynvml
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)

    def read(self) -> Dict[str, float]:
        nvml, handle = self._nvml, self._handle
        out: Dict[str, float] = {}
        try:
            out["gpu_util"] = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu) / 100.0
            out["gpu_memory_bytes"] = float(nvml.nvmlDeviceGetMemoryInfo(handle).used)
            out["gpu_power_w"] = float(nvml.nvmlDeviceGetPowerUsage(handle)) / 1000.0
        except Exception:  # a reading the device does not support
            pass
        return out

    def energy_mj(self) -> Optional[int]:
        """The device's total energy since the driver loaded, in millijoules (None: no such counter, pre-Volta)."""
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except Exception:
            return None


NO_ENERGY = (
    "no GPU energy counter or power readings (an NVIDIA GPU in use and nvidia-ml-py) and no readable "
    "RAPL counter (/sys/class/powercap/intel-rapl:*/energy_uj; often readable by root only)"
)


class Rapl:
    """The CPU packages' RAPL energy counters (microjoules, wrapping at ``max_energy_range_uj``)."""

    def __init__(self, zones: Sequence[Tuple[str, int]]) -> None:
        self.zones = list(zones)  # (energy_uj path, wrap range)

    @classmethod
    def find(cls, root: str = "/sys/class/powercap") -> Optional[Rapl]:
        zones: List[Tuple[str, int]] = []
        for path in sorted(glob.glob(os.path.join(glob.escape(root), "intel-rapl:*"))):
            if os.path.basename(path).count(":") != 1:
                continue  # sub-zones (intel-rapl:0:0, cores, dram) are inside their package's count
            energy = os.path.join(path, "energy_uj")
            try:
                _read_int(energy)
                zones.append((energy, _read_int(os.path.join(path, "max_energy_range_uj"))))
            except (OSError, ValueError):
                continue
        return cls(zones) if zones else None

    def read(self) -> Optional[List[int]]:
        try:
            return [_read_int(path) for path, _ in self.zones]
        except (OSError, ValueError):
            return None

    def joules(self, before: Sequence[int], after: Sequence[int]) -> float:
        """Joules between two readings, each zone's counter wrapping at its range."""
        return sum(b - a if b >= a else b + wrap - a for (_, wrap), a, b in zip(self.zones, before, after)) / 1e6


def _read_int(path: str) -> int:
    with open(path) as handle:
        return int(handle.read())


def cuda_gpu() -> Optional[_Gpu]:
    """The NVML view of the CUDA device in use, or None (no CUDA in use, or no nvidia-ml-py)."""
    try:
        import torch

        if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
            return None
        index = torch.cuda.current_device()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible:
            index = int(visible.split(",")[index])
        return _Gpu(index)
    except Exception:
        return None


def _descendants(me: psutil.Process) -> List[int]:
    """The pids of a process's children, recursively: on Linux from ``/proc`` (psutil's own way scans every process
    of the machine, a millisecond per hundred processes, with the GIL held)."""
    found: List[int] = []
    todo = [me.pid]
    try:
        if not os.path.exists(f"/proc/{me.pid}/task/{me.pid}/children"):
            raise OSError("no children files")
        while todo:
            pid = todo.pop()
            for task in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                        kids = [int(x) for x in handle.read().split()]
                except (FileNotFoundError, ProcessLookupError):
                    continue
                found.extend(kids)
                todo.extend(kids)
        return found
    except OSError:  # not Linux, or no children files: the portable way
        try:
            return [kid.pid for kid in me.children(recursive=True)]
        except psutil.Error:
            return []


def _read_bytes(proc: psutil.Process) -> Tuple[int, int]:
    """(bytes read from storage, bytes read through read() calls: page-cache hits and pipes included)."""
    try:
        counters = proc.io_counters()
    except (AttributeError, psutil.AccessDenied, NotImplementedError):
        return 0, 0
    return int(counters.read_bytes), int(getattr(counters, "read_chars", 0))


class SystemSampler:
    """Samples the process tree at ``hz`` between :meth:`start` and :meth:`stop` (one trial)."""

    def __init__(
        self,
        hz: float,
        clock: Callable[[], float] = time.perf_counter,
        gpu: Callable[[], Optional[_Gpu]] = cuda_gpu,
        rapl: Callable[[], Optional[Rapl]] = Rapl.find,
    ) -> None:
        self.interval = 1.0 / hz
        self._clock = clock
        self._gpu_factory = gpu
        self._rapl_factory = rapl
        self._rapl: Optional[Rapl] = None
        self._gpu: Optional[_Gpu] = None
        self._gpu_mj: Optional[int] = None  # the GPU's energy counter at the trial's start
        self._rapl_at: Optional[List[int]] = None
        self._gpu_checked = False
        self._me = psutil.Process()
        self._procs: Dict[int, psutil.Process] = {}
        mine = _affinity()
        self._cpus = None if mine is None or len(mine) == (psutil.cpu_count() or 0) else mine  # None: every core
        self._machine_at = 0.0  # the machine's busy CPU seconds on those cores at the trial's start
        self._started = 0.0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._cpu: Dict[int, float] = {}  # last CPU seconds seen per pid
        self._read: Dict[int, int] = {}  # last bytes read seen per pid
        self._chars: Dict[int, int] = {}  # last bytes read() seen per pid
        self._cpu_seconds = 0.0
        self._read_bytes = 0
        self._own_chars = 0  # this process's read() bytes (files; pipes from its workers too)
        self._child_chars = 0  # its children's (a DataLoader's workers: files)
        self._rss_max = 0
        self._ticks = 0
        self._gpu_sums: Dict[str, float] = {}
        self._children_at = -1e9
        self._rows: List[Tuple[float, ...]] = []  # each reading: time, CPU seconds so far, RSS, GPU fields

    def _tree(self, now: float) -> List[psutil.Process]:
        if now - self._children_at >= CHILDREN_EVERY_S:
            self._children_at = now
            for pid in _descendants(self._me):
                if pid not in self._procs:
                    try:
                        self._procs[pid] = psutil.Process(pid)
                    except psutil.Error:
                        continue
        return [self._me, *self._procs.values()]

    def _tick(self, baseline: bool = False) -> None:
        """One reading (a process first seen after the baseline started during the trial: it counts from zero)."""
        now = self._clock()
        rss = 0
        for proc in self._tree(now):
            pid = proc.pid
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    cpu = times.user + times.system
                    rss += proc.memory_info().rss
                    read, chars = _read_bytes(proc)
            except psutil.Error:  # a worker that ended: what its earlier ticks saw stays counted
                self._procs.pop(pid, None)
                continue
            if not baseline:
                self._cpu_seconds += max(0.0, cpu - self._cpu.get(pid, 0.0))
                self._read_bytes += max(0, read - self._read.get(pid, 0))
                more = max(0, chars - self._chars.get(pid, 0))
                if proc is self._me:
                    self._own_chars += more
                else:
                    self._child_chars += more
            self._cpu[pid], self._read[pid], self._chars[pid] = cpu, read, chars
        gpu = {} if self._gpu is None else self._gpu.read()
        if not baseline:
            self._rss_max = max(self._rss_max, rss)
            self._ticks += 1
            for key, value in gpu.items():
                self._gpu_sums[key] = self._gpu_sums.get(key, 0.0) + value
        self._rows.append((now, self._cpu_seconds, float(rss), *(gpu.get(k, math.nan) for k in GPU_FIELDS)))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._tick()

    def start(self) -> None:
        """Take the baseline reading and start sampling (just before a trial's clock starts)."""
        self.stop()
        if not self._gpu_checked:
            self._gpu_checked = True
            self._gpu = self._gpu_factory()
            self._rapl = self._rapl_factory()
        self._reset()
        self._tick(baseline=True)  # deltas count from here
        self._machine_at = _machine_busy(self._cpus)
        self._gpu_mj = None if self._gpu is None else self._gpu.energy_mj()
        self._rapl_at = None if self._rapl is None else self._rapl.read()
        self._started = self._clock()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="benchy-system-metrics", daemon=True)
        self._thread.start()

    def stop(self) -> Optional[SystemFigures]:
        thread, self._thread = self._thread, None
        if thread is None:
            return None
        self._stop.set()
        thread.join()
        with self._lock:
            self._tick()  # the last stretch, up to the trial's end
        machine = _machine_busy(self._cpus) - self._machine_at
        wall = self._clock() - self._started
        cores = available_cores()
        busy = self._cpu_seconds / wall if wall > 0 else 0.0
        # What the rest of the machine took, at most the cores this tree left (the two counters
        # tick at the kernel's granularity: a very short trial reads them coarsely).
        other: Optional[float] = min(max(0.0, machine - self._cpu_seconds) / wall, max(0.0, cores - busy)) if wall > 0 else None
        if wall <= 0 or _slack(cores, 1 + len(self._procs), wall) > KNOWN_SHARE * cores:
            other = None  # too short a trial for the counters' ticks to tell
        out: Dict[str, Any] = {
            "seconds": wall,
            "readings": self._ticks,
            "cpu_cores_busy": busy,
            "cpu_cores": cores,
            "cpu_util": busy / cores,
            "processes": 1 + len(self._procs),
            "rss_max_bytes": self._rss_max,
            "read_bytes_per_s": self._read_bytes / wall if wall > 0 else 0.0,
            # What the loader read: its workers' read() bytes, or this process's without workers (a
            # process with workers also reads their batches through pipes).
            "loader_read_chars_per_s": (self._child_chars if self._procs else self._own_chars) / wall if wall > 0 else 0.0,
            "other_cores_busy": other,
        }
        out.update({key: total / self._ticks for key, total in self._gpu_sums.items()})
        out.update(self._energy(wall, out.get("gpu_power_w")))
        return SystemFigures(**out)

    def readings(self) -> Any:
        return readings_array(self._rows, self._gpu is not None) if len(self._rows) >= 2 else None

    def _energy(self, wall: float, power: Any) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        end_mj = None if self._gpu is None or self._gpu_mj is None else self._gpu.energy_mj()
        if self._gpu_mj is not None and end_mj is not None:
            out["gpu_energy_j"] = max(0, end_mj - self._gpu_mj) / 1e3
            out["gpu_energy_source"] = "GPU: NVML total-energy counter"
        elif isinstance(power, (int, float)) and wall > 0:
            out["gpu_energy_j"] = float(power) * wall
            out["gpu_energy_source"] = "GPU: NVML power readings integrated over the trial (no energy counter)"
        rapl_end = None if self._rapl is None or self._rapl_at is None else self._rapl.read()
        if self._rapl is not None and self._rapl_at is not None and rapl_end is not None:
            out["cpu_energy_j"] = self._rapl.joules(self._rapl_at, rapl_end)
            out["cpu_energy_source"] = (
                f"CPU: RAPL package counter{'s' if len(self._rapl.zones) > 1 else ''} (the whole package, every process on it)"
            )
        if not out:
            out["energy_missing"] = NO_ENERGY
        return out


GPU_FIELDS = ("gpu_util", "gpu_memory_bytes")  # the GPU readings kept per reading (the timeline's counters)


def readings_array(rows: Sequence[Tuple[float, ...]], gpu: bool) -> np.ndarray[Any, Any]:
    """A trial's readings (two or more) as a structured array, one row each after the baseline."""
    fields = [("time", "<f8"), ("cpu_cores_busy", "<f4"), ("rss_bytes", "<f8")]
    if gpu:
        fields += [(name, "<f8") for name in GPU_FIELDS]
    data = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
    out = np.empty(len(rows) - 1, dtype=np.dtype(fields))
    spans = np.diff(data[:, 0])
    busy = np.zeros(len(out))
    np.divide(np.diff(data[:, 1]), spans, out=busy, where=spans > 0)
    out["time"], out["cpu_cores_busy"], out["rss_bytes"] = data[1:, 0], busy, data[1:, 2]
    if gpu:
        for k, name in enumerate(GPU_FIELDS):
            out[name] = data[1:, 3 + k]
    return out


class NullSampler:
    """``system_metrics: false``: nothing is sampled."""

    def readings(self) -> Any: ...

    def start(self) -> None: ...

    def stop(self) -> Optional[SystemFigures]: ...


def worker_memory(pids: Sequence[int]) -> List[WorkerMemory]:
    """Each worker's own memory: USS (pages only it holds), PSS where the kernel says (shared pages split), RSS."""
    out: List[WorkerMemory] = []
    for k, pid in enumerate(pids):
        try:
            info = psutil.Process(pid).memory_full_info()
        except (psutil.Error, OSError):
            continue
        pss = getattr(info, "pss", None)
        out.append(WorkerMemory(k, int(getattr(info, "uss", 0)), None if pss is None else int(pss), int(info.rss)))
    return out


def processes_cpu(pids: Sequence[int]) -> Optional[float]:
    """The CPU seconds the processes have run so far (Linux's schedstat, else psutil's); None: one unreadable."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0]) * 1e-9
            continue
        except (OSError, ValueError, IndexError):
            pass
        try:
            times = psutil.Process(pid).cpu_times()
        except (psutil.Error, OSError):
            return None
        total += float(times.user) + float(times.system)
    return total if pids else None


def trainer_memory() -> int:
    """This (the training) process's resident set size, bytes."""
    return int(psutil.Process().memory_info().rss)


def machine_memory() -> Tuple[int, int]:
    """(available, total) bytes of the machine's memory."""
    vm = psutil.virtual_memory()
    return int(vm.available), int(vm.total)
