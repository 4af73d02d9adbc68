"""The tests' shared helpers, imported as a module (``from helpers import ...``): paths, a user-like
script's run read back, small configs, a fake clock, the in-process session factory and trial-result
builders. Fixtures live in ``conftest.py``."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

ROOT = Path(__file__).resolve().parent.parent
USER_SCRIPT = ROOT / "tests" / "scripts" / "user_script.py"

SUMMARY_RE = re.compile(r"^BENCHY::SUMMARY::(IO|SYNTHETIC|FULL) average trial throughput: ([0-9.]+) \+/- ([0-9.]+|n/a)", re.M)
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
        """The run's JSON, checked against the declared model of a result file (every key at every depth, every
        key it writes declared)."""
        document = json.loads(self.json_path.read_text())
        checked(document, str(self.json_path))
        return document

    def summary_line(self, word: str) -> str:
        """The text of the ``BENCHY::SUMMARY::<word>`` lines the run printed (a word with several: joined by ``; ``)."""
        from benchy.results import lines

        found = [lines.parse(t) for t in self.stdout.splitlines()]
        texts = [f.text for f in found if f is not None and f.kind == word]
        assert texts, (word, self.stdout)
        return "; ".join(texts)

    def verdict(self) -> str:
        """The whole verdict as the run's lines say it (VERDICT, OVERLAP, each WHY, ADVICE), as its JSON holds it."""
        return verdict_of(self.stdout)

    def undecided_ratio(self) -> float:
        """SYNTHETIC/IO of a run whose verdict is "undecided" with its busy trials named (the ``BUSY`` line): what
        benchy must say where others took most of the cores and the trials scattered too widely to decide."""
        undecided = re.match(r"undecided: SYNTHETIC/IO is ([0-9.]+)x", self.summary_line("VERDICT"))
        assert undecided is not None, self
        assert self.summary_line("BUSY")  # the busy trials named
        return float(undecided.group(1))

    def __repr__(self) -> str:
        return f"Run(rc={self.returncode})\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def verdict_of(stdout: str) -> str:
    """The whole verdict of the last run in ``stdout``: its VERDICT, OVERLAP, WHY and ADVICE lines' texts joined, as the
    run's JSON holds it (read by ``benchy parse``'s reader)."""
    from benchy.results.logparse import split_runs

    said = split_runs(io.StringIO(stdout))[-1].verdict
    assert said, stdout
    return "; ".join(said)


SCRATCH: List[Path] = []  # pytest's temporary root for this session (set by conftest)


def scratch_dir() -> str:
    """A fresh directory for a helper that has no ``tmp_path``: under pytest's temporary root,
    which pytest prunes (it keeps the last three runs), never loose in /tmp."""
    assert SCRATCH, "scratch_dir() is for use inside tests"
    return tempfile.mkdtemp(prefix="benchy-", dir=SCRATCH[0])


PORTS_FROM, PORTS_BAND = 20_000, 1_000  # each xdist worker's band of rendezvous ports: gw0 20000-20999, gw1 21000-...


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for a torchrun rendezvous: below the ports the system hands outgoing
    connections (one picked among those was taken, between the pick and torchrun's bind, by another test's
    connections: gloo's ranks open many; EADDRINUSE), in a band of its own for each xdist worker (two tests at
    once never pick the same), at random within it. Where the system's own range leaves no room below it, a
    port the system picks."""
    import random
    import socket

    try:
        lowest = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        lowest = 32_768  # Linux's default
    worker = int((os.environ.get("PYTEST_XDIST_WORKER") or "gw0").lstrip("gw") or 0)
    start = PORTS_FROM + worker * PORTS_BAND
    for _ in range(100 if start + PORTS_BAND <= lowest else 0):
        port = random.randrange(start, start + PORTS_BAND)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def small_config(nbatches: int = 5, ntrials: int = 2, nwarmup: int = 1, **global_: Any) -> Dict[str, Any]:
    """A fast schedule for end-to-end tests."""
    g = {"report_freq": 0}
    g.update(global_)
    mode = {"nbatches": nbatches, "ntrials": ntrials, "nwarmup": nwarmup}
    return {"global": g, "IO": dict(mode), "synthetic": dict(mode), "full": dict(mode)}


# --- in-process sessions on virtual time ------------------------------------------------------------


class FakeClock:
    """Virtual time: the fake loader, the fake step and a slow output advance it by known amounts.
    Call it (or its ``clock``) for the time; ``steps`` and ``fetches`` count what ran so far."""

    def __init__(self) -> None:
        self.now = 0.0
        self.steps = 0
        self.fetches = 0

    def __call__(self) -> float:
        return self.now

    def clock(self) -> float:
        return self.now


def workers_loader(t: FakeClock, batches: int, workers: int, make: float, depth: int = 0, startup: float = 0.0) -> Any:
    """A re-iterable loader that delivers as a DataLoader with ``workers`` workers does: batch ``k`` is made by worker
    ``k % workers`` in ``make`` seconds, once that worker finished its batch before and the batch is asked for (a
    DataLoader asks for ``depth`` batches ahead: ``workers x prefetch_factor``); batches come in order. With the
    workers in step and a consumer faster than them, they come ``workers`` at once, then a wait of ``make``."""
    depth = depth or 2 * workers

    class L:
        passes = 0

        def __iter__(self) -> Iterator[List[int]]:
            L.passes += 1
            t0 = t.now + startup
            asked: List[float] = [t0] * min(depth, batches)  # when each batch was asked of its worker
            done: List[float] = []
            for k in range(batches):
                begin = max(asked[k], done[k - workers] if k >= workers else t0)
                done.append(begin + make)
                t.now = max(t.now, done[k])  # the fetch waits for it
                if k + depth < batches:
                    asked.append(t.now)  # receiving batch k asks for batch k + depth
                yield [0] * 8

    return L()


class SlowStream(io.StringIO):
    """An output stream whose every write takes ``cost`` seconds of fake time (a very slow terminal)."""

    def __init__(self, clock: FakeClock, cost: float = 1.0) -> None:
        super().__init__()
        self.clock, self.cost = clock, cost

    def write(self, text: str) -> int:
        self.clock.now += self.cost
        return super().write(text)


class Made(NamedTuple):
    session: Any  # benchy.session.session.Session
    stream: io.StringIO
    exits: List[int]


def make_session(
    clock: FakeClock,
    *,
    fetch: Union[float, Callable[[int], float]] = 0.01,
    batches: int = 10_000,
    modes: Optional[Dict[str, Any]] = None,
    global_: Optional[Dict[str, Any]] = None,
    stream: Optional[io.StringIO] = None,
    registry: Any = None,
    batch: int = 8,
    make_iterator: Optional[Callable[[], Iterator[Any]]] = None,
    **sections_and_session: Any,
) -> Made:
    """A Session over a fake loader of ``batches`` batches of ``batch`` samples, each fetch taking
    ``fetch`` seconds (or ``fetch(k)`` for the k-th; ``make_iterator``: a loader of one's own), with
    plain output to ``stream`` (a
    :class:`SlowStream` by default) and exits recorded. ``modes``: every mode's section (default
    4 batches, 2 trials, no warm-up); keyword arguments named ``IO``, ``synthetic``, ``full`` or
    ``global`` update those sections; keywords naming a ``LoaderFacts`` field (``queue_depth``,
    ``workers`` ...) describe the loader; any other keyword goes to ``Session``."""
    from benchy import load_config
    from benchy.session.console import Output
    from benchy.session.registry import Registry
    from benchy.session.session import LoaderFacts, Session

    # Sessions left unfinished say so at interpreter exit: their JSON goes to a directory of their own. The
    # what-if windows and emulated trials are off here (these sessions test the schedule's own steps) unless
    # asked for (``global_={"whatif": True}``).
    g = {"report_freq": 0, "console": "plain", "output_dir": scratch_dir(), "whatif": False, **(global_ or {})}
    cfg: Dict[str, Any] = {"global": g}
    for name in ("IO", "synthetic", "full"):
        cfg[name] = dict(modes or {"nbatches": 4, "ntrials": 2, "nwarmup": 0})
    session_kwargs: Dict[str, Any] = {}
    facts: Dict[str, Any] = {}
    for name, values in sections_and_session.items():
        if name in ("IO", "synthetic", "full", "global"):
            cfg[name].update(values)
        elif name in LoaderFacts.__dataclass_fields__:
            facts[name] = values
        else:
            session_kwargs[name] = values
    out = SlowStream(clock) if stream is None else stream
    exits: List[int] = []
    cost = fetch if callable(fetch) else (lambda _: fetch)

    def loader() -> Iterator[List[int]]:
        for _ in range(batches):
            clock.now += cost(clock.fetches)
            clock.fetches += 1
            yield [0] * batch

    session = Session(
        load_config(overrides=cfg, environ={}),
        LoaderFacts(make_iterator or loader, batch, **facts),
        clock=clock,
        output=Output("plain", stream=out),
        registry=registry or Registry(write=lambda _: None),
        exit=exits.append,
        **session_kwargs,
    )
    return Made(session, out, exits)


def run_epoch(session: Any, clock: FakeClock, step: Union[float, Callable[[int], float]] = 0.02) -> int:
    """One epoch of a training loop on virtual time: each step takes ``step`` seconds; the batches taken."""
    n = 0
    for _ in session.iterate():
        clock.now += step(clock.steps) if callable(step) else step
        clock.steps += 1
        n += 1
    return n


def until_done(loader: Any, step: Callable[[], None] = lambda: None, most: int = 500) -> int:
    """Epochs of a plain ``for`` loop over ``loader`` (a wrapper, or a session's ``iterate``) until its
    benchmark's schedule is over; ``step()`` runs for each batch. The epochs it took."""
    session = loader if hasattr(loader, "iterate") else loader.benchy
    epochs = 0
    while not session.done:
        assert epochs < most, "the schedule did not end"
        for _ in session.iterate() if loader is session else loader:
            step()
        epochs += 1
    return epochs


def read_json(session: Any) -> Dict[str, Any]:
    """The session's result JSON, checked against the declared model of a result file."""
    with open(session.config.output_path, encoding="utf-8") as handle:
        document = json.load(handle)
    checked(document, session.config.output_path)
    return document


def written_keys(value: Any, path: str = "") -> set:
    """Every key path of a document, as ``benchy.results.model.rows`` names them."""
    out = set()
    if isinstance(value, dict):
        for key, x in value.items():
            sub = f"{path}.{key}" if path else key
            out.add(sub)
            out |= written_keys(x, sub)
    elif isinstance(value, list):
        for x in value:
            out.add(f"{path}[]")
            out |= written_keys(x, f"{path}[]")
    return out


def undeclared(document: Dict[str, Any]) -> set:
    """The key paths a document has that the model does not declare (keys of the writer's choosing, ``.<name>``
    in the model, and the configuration's sections aside)."""
    from benchy.results.model import rows

    declared = {path for path, _, _, _ in rows()}
    opened = [p.split(".<name>")[0] + "." for p in declared if ".<name>" in p]
    return {k for k in written_keys(document) if k not in declared and not any(k.startswith(p) for p in opened)}


def checked(document: Dict[str, Any], where: str) -> None:
    """``document`` decodes into the model, has no key the model does not declare, and was written by encoding
    the model (every declared key there, in the declared order)."""
    import msgspec

    from benchy.results.document import check

    model = check(document, where)
    assert undeclared(document) == set(), f"{where}: keys the model does not declare"
    again = msgspec.json.decode(msgspec.json.encode(model))  # JSON values (a tuple as a list)
    assert list(document) == list(again), f"{where}: not the model's encoding: {sorted(set(again) ^ set(document))}"
    assert written_keys(document) == written_keys(again), sorted(written_keys(document) ^ written_keys(again))


# --- results built by hand ---------------------------------------------------------------------------


def trial_result(
    mode: Any,
    index: int = 1,
    samples: int = 32,
    seconds: float = 1.0,
    *,
    warmup: bool = False,
    periods: Optional[Sequence[float]] = None,
    variant: Optional[str] = None,
    **fields: Any,
) -> Any:
    """A TrialResult of ``samples`` over ``seconds``; its steps are ``periods`` when given (samples split
    evenly), else 4 equal steps; other fields (``system``, ``rank_seconds`` ...) as given."""
    from benchy import TrialResult, TrialSpec

    steps = list(periods) if periods is not None else [seconds / 4] * 4
    n = len(steps)
    counts = [samples // n] * n
    return TrialResult(TrialSpec(mode, index, warmup, n, variant=variant), samples, seconds, steps, counts, **fields)


# --- Chrome traces -------------------------------------------------------------------------------------

TRACE_METADATA = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


class TraceSlice(NamedTuple):
    start: int  # ns
    dur: int  # ns
    event: Dict[str, Any]

    @property
    def end(self) -> int:
        return self.start + self.dur


def check_trace(text: str) -> Dict[Tuple[int, int], List[TraceSlice]]:
    """Check a Chrome trace against the Trace Event Format's rules (the JSON object form; metadata,
    complete and counter events with their required keys and types; microsecond times with at most
    nanosecond decimals; every thread and process named; complete events on one thread nested, never
    overlapping part-way) and return its complete events by (pid, tid), in order."""
    from decimal import Decimal

    doc = json.loads(text, parse_float=Decimal)
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "not the JSON object form"
    assert doc.get("displayTimeUnit") in ("ms", "ns")
    processes, threads = set(), set()
    slices: Dict[Tuple[int, int], List[TraceSlice]] = {}

    def ns(value: Any, what: str) -> int:
        assert isinstance(value, (int, Decimal)) and not isinstance(value, bool), (what, value)
        exact = Decimal(value) * 1000
        assert exact == exact.to_integral_value(), f"{what} {value}: finer than a nanosecond"
        return int(exact)

    for event in doc["traceEvents"]:
        assert isinstance(event, dict) and isinstance(event.get("pid"), int), event
        ph = event.get("ph")
        if ph == "M":
            name = event.get("name")
            assert name in TRACE_METADATA, event
            if name.startswith("thread"):
                assert isinstance(event.get("tid"), int), event
                threads.add((event["pid"], event["tid"]))
            else:
                processes.add(event["pid"])
            args = event.get("args")
            if name.endswith("_name"):
                assert isinstance(args["name"], str) and args["name"], event
            else:
                assert isinstance(args["sort_index"], int), event
        elif ph == "X":
            assert isinstance(event.get("tid"), int) and isinstance(event.get("name"), str) and event["name"], event
            assert isinstance(event.get("cat"), str), event
            start, dur = ns(event.get("ts"), "ts"), ns(event.get("dur"), "dur")
            assert dur >= 0, event
            assert "args" not in event or isinstance(event["args"], dict), event
            slices.setdefault((event["pid"], event["tid"]), []).append(TraceSlice(start, dur, event))
        elif ph == "C":
            ns(event.get("ts"), "ts")
            args = event.get("args")
            assert isinstance(event.get("name"), str) and isinstance(args, dict) and args, event
            assert all(isinstance(v, (int, Decimal)) and not isinstance(v, bool) for v in args.values()), event
        else:
            raise AssertionError(f"an event of phase {ph!r}: {event}")
    for (pid, tid), items in slices.items():
        assert pid in processes and (pid, tid) in threads, f"thread {pid}/{tid} has no name"
        items.sort(key=lambda s: (s.start, -s.dur))
        open_ends: List[int] = []
        for item in items:
            while open_ends and item.start >= open_ends[-1]:
                open_ends.pop()
            assert not open_ends or item.end <= open_ends[-1], f"{item.event} overlaps its parent part-way"
            open_ends.append(item.end)
    return slices


def children(slices: Sequence[TraceSlice], parent: TraceSlice) -> List[TraceSlice]:
    """The slices of one thread inside ``parent`` (itself left out)."""
    return [s for s in slices if s is not parent and parent.start <= s.start and s.end <= parent.end]


# --- script runs through the fork server (tests/zygote.py) ---------------------------------------------------

# Environment names a run may set or change and still be served by the fork server: read at run time (or, for
# OMP_NUM_THREADS and TMPDIR, applied in the child as a new interpreter would apply them).
AT_RUN = frozenset({"BENCHY_CONFIG_FILE", "BENCHY_RUN_NAME", "COLUMNS", "PYTHONUNBUFFERED", "TMPDIR", "OMP_NUM_THREADS"})
# ... and for a zero-edit run, what `benchy run` sets: read by the runner at run time, and PYTHONPATH (the boot
# directory) for the processes the script starts.
AT_RUN_BOOT = AT_RUN | {"BENCHY_RUN_LOADER", "BENCHY_RUN_SWEEP", "BENCHY_RUN_STATUS_FILE", "PYTHONPATH"}
# ... and for a job's ranks started without an agent (``launch_ranks``): what such a launcher (srun, a bare
# launch) sets for each rank, read by torch.distributed's env:// rendezvous when the script joins the job.
AT_LAUNCH = AT_RUN | {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}
ZYGOTE = ROOT / "tests" / "zygote.py"


class _Zygote:
    """This pytest process's fork server, started at its first use (one per xdist worker)."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.env: Dict[str, str] = {}
        self._read = b""  # what was read of the server's answers past the last whole line

    def ready(self) -> subprocess.Popen:
        import os
        import sys

        if self.proc is None or self.proc.poll() is not None:
            self.env = dict(os.environ)
            self.proc = subprocess.Popen(
                [sys.executable, str(ZYGOTE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=self.env,
                cwd=str(ROOT),
            )
            self._read = b""
        return self.proc

    def answer(self, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The server's next answer line, or None when none came within ``timeout``. Its pipe is read here, never
        through ``proc.stdout``'s buffer: a child that ends at once sends its pid and status together, and a line
        waiting in a buffer is one ``select`` on the pipe would not see."""
        import select
        import time

        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._read:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the fork server ended (status {self.proc.wait()})")
            self._read += chunk
        line, self._read = self._read.split(b"\n", 1)
        return dict(json.loads(line))

    def next_answer(self) -> Dict[str, Any]:
        """The server's next answer line, however long it takes."""
        found = self.answer()
        assert found is not None
        return found

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def serves(self, env: Dict[str, str], boot: bool = False, read_at_run: frozenset = AT_RUN) -> bool:
        import os

        base = dict(os.environ)
        names = set(base) | set(env)
        return all(base.get(k) == env.get(k) for k in names - (AT_RUN_BOOT if boot else read_at_run))

    def _request(
        self, argv: Sequence[str], cwd: Path, env: Dict[str, str], boot: bool = False, module: Optional[str] = None
    ) -> Dict[str, Any]:
        scratch = Path(tempfile.mkdtemp(prefix="zygote-", dir=str(SCRATCH[0]) if SCRATCH else None))
        return {
            "argv": [str(a) for a in argv],
            "cwd": str(cwd),
            "env": env,
            "out": str(scratch / "stdout"),
            "err": str(scratch / "stderr"),
            "boot": boot,
            "module": module,
        }

    def start_group(self, argv: Sequence[str], cwd: Path, envs: Sequence[Dict[str, str]]) -> _Group:
        """``argv`` started once for each environment of ``envs``, all at once (a job's ranks)."""
        proc = self.ready()
        assert proc.stdin is not None and proc.stdout is not None
        requests = [self._request(argv, cwd, env) for env in envs]
        proc.stdin.write(json.dumps({"group": requests}) + "\n")
        proc.stdin.flush()
        return _Group(self, self.next_answer()["pids"], requests)

    def run(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Dict[str, str],
        timeout: float,
        boot: bool = False,
        module: Optional[str] = None,
    ) -> subprocess.CompletedProcess:
        """``python SCRIPT ARGS`` (``argv``), or ``python -m MODULE ARGS`` with ``module``, in a child."""
        proc = self.ready()
        assert proc.stdin is not None and proc.stdout is not None
        request = self._request(argv, cwd, env, boot, module)
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        pid = self.next_answer()["pid"]
        ended = self.answer(timeout)
        timed_out = ended is None
        if timed_out:
            os.kill(pid, signal.SIGKILL)
            ended = self.next_answer()
        status = ended["status"]
        stdout, stderr = _outputs(request)
        if timed_out:
            raise subprocess.TimeoutExpired(list(argv), timeout, stdout, stderr)
        return subprocess.CompletedProcess(list(argv), status, stdout, stderr)


ZYGOTE_SERVER = _Zygote()


class _Group:
    """A job's ranks, children of the fork server: ``finish`` waits for all of them."""

    def __init__(self, server: _Zygote, pids: List[int], requests: List[Dict[str, Any]]) -> None:
        self.server, self.pids, self.requests = server, pids, requests

    def finish(self, timeout: float) -> List[Tuple[int, str, str]]:
        """Each rank's (status, stdout, stderr) once all ended; a rank still running after ``timeout`` fails the
        test, its threads' Python stacks in the message (``SIGABRT``: the child's ``faulthandler`` writes them)."""
        hung = []
        ended = self.server.answer(timeout)
        if ended is None:
            hung = [pid for pid in self.pids if _running(pid)]
            for pid in hung:
                os.kill(pid, signal.SIGABRT)
            ended = self.server.answer(10)
            for pid in hung if ended is None else ():
                if _running(pid):
                    os.kill(pid, signal.SIGKILL)
            ended = ended or self.server.next_answer()
        statuses = ended["statuses"]
        outs: List[Tuple[int, str, str]] = [(status, *_outputs(request)) for status, request in zip(statuses, self.requests)]
        _fail_if_hung([self.pids.index(pid) for pid in hung], outs, timeout)
        return outs


def _outputs(request: Dict[str, Any]) -> Tuple[str, str]:
    """What a fork-server child wrote to its standard output and error (the files of its request)."""
    found = [Path(request[k]) for k in ("out", "err")]
    text = [path.read_text(errors="backslashreplace") if path.exists() else "" for path in found]
    return text[0], text[1]


def _fail_if_hung(hung: List[int], outs: List[Tuple[int, str, str]], timeout: float) -> None:
    """Fail the test naming the ranks (indices of ``outs``) still running after ``timeout``, with the end of what
    each wrote (its stacks, where ``SIGABRT`` made ``faulthandler`` write them)."""
    if hung:
        shown = "\n".join(
            f"--- rank {rank}: stdout ---\n{outs[rank][1][-2000:]}\n--- rank {rank}: stderr ---\n{outs[rank][2][-6000:]}"
            for rank in hung
        )
        raise AssertionError(f"rank(s) {hung} still running {timeout:g} s after the start (stopped with SIGABRT)\n{shown}")


def _running(pid: int) -> bool:
    """Whether ``pid`` runs still (not ended, nor a zombie waiting for its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class _Processes:
    """A job's ranks, each a new interpreter: ``finish`` waits for all of them."""

    def __init__(self, procs: List[subprocess.Popen]) -> None:
        self.procs = procs

    def finish(self, timeout: float) -> List[Tuple[int, str, str]]:
        """Each rank's (status, stdout, stderr); a rank still running ``timeout`` after the previous ended fails
        the test, its threads' Python stacks in the message (``SIGABRT``, with ``-X faulthandler``)."""
        outs: List[Tuple[int, str, str]] = []
        hung = []
        for rank, p in enumerate(self.procs):
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                hung.append(rank)
                p.send_signal(signal.SIGABRT)
                try:
                    out, err = p.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    out, err = p.communicate()
            outs.append((p.returncode, out, err))
        _fail_if_hung(hung, outs, timeout)
        return outs


Ranks = Union[_Group, _Processes]


def launch_ranks(script: Union[str, Path], args: Sequence[str], cwd: Path, envs: Sequence[Dict[str, str]]) -> Ranks:
    """``python SCRIPT ARGS`` once for each environment of ``envs`` (each rank's, with its ``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR`` ...), all at once, as a launcher without an agent starts a job's ranks
    (srun's way): children of the fork server when every environment differs from the suite's only in names read
    at run time (:data:`AT_LAUNCH`), else new interpreters."""
    import sys

    if all(ZYGOTE_SERVER.serves(env, read_at_run=AT_LAUNCH) for env in envs):
        return ZYGOTE_SERVER.start_group([str(script), *args], cwd, envs)
    return _Processes(
        [
            subprocess.Popen(
                [sys.executable, "-X", "faulthandler", str(script), *args],
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                stdin=subprocess.DEVNULL,
            )
            for env in envs
        ]
    )


def run_python(
    script: Union[str, Path], args: Sequence[str], cwd: Path, env: Dict[str, str], timeout: float
) -> subprocess.CompletedProcess:
    """``python SCRIPT ARGS`` in ``cwd`` with ``env``, as a user runs it: a child of the fork server when ``env``
    differs from the suite's only in :data:`AT_RUN` names (no torch import to pay), else a new interpreter."""
    import sys

    argv = [str(script), *args]
    if ZYGOTE_SERVER.serves(env):
        return ZYGOTE_SERVER.run(argv, cwd, env, timeout)
    return _new_interpreter([sys.executable, *argv], cwd, env, timeout)


def run_torchrun(command: Sequence[str], cwd: Path, env: Dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``python -m torch.distributed.run ARGS`` (``command``), its output captured: torchrun's agent a child of the
    fork server when ``env`` differs from the suite's only in :data:`AT_RUN` names (the agent's own torch import
    saved: it starts each rank as a new interpreter, as always), else a new interpreter."""
    import sys

    launcher = [sys.executable, "-m", "torch.distributed.run"]
    if list(command[:3]) != launcher:
        raise ValueError(f"run_torchrun: expected a command starting {launcher}, got {list(command[:3])}")
    if ZYGOTE_SERVER.serves(env):
        return ZYGOTE_SERVER.run(command[3:], cwd, env, timeout, module="torch.distributed.run")
    return _new_interpreter(command, cwd, env, timeout)


def _new_interpreter(command: Sequence[str], cwd: Path, env: Dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``command`` in a process of its own, its output captured, no input."""
    return subprocess.run(
        list(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def run_zero_edit(
    script: Union[str, Path], args: Sequence[str], cwd: Path, env: Dict[str, str], timeout: float
) -> subprocess.CompletedProcess:
    """``benchy run -- python SCRIPT ARGS`` with the default loader choice: what the command sets in the
    environment, then the script in a child of the fork server with the runner installed first, as the boot
    ``sitecustomize`` installs it, its status mapped as the command maps it (``core.exits.run_status`` on the
    statuses its benchmarks recorded; the command's own parsing, waiting and signals are tested in
    ``test_runner.py``); a new interpreter through the real command when the environment asks for one."""
    import sys

    from benchy.core.exits import STATUS_ENV_VAR, run_status
    from benchy.integrations import BOOT_DIR
    from benchy.results.files import read_statuses

    served = dict(env)
    served.setdefault("BENCHY_RUN_LOADER", "first")
    served["PYTHONPATH"] = BOOT_DIR + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    record = Path(scratch_dir()) / "status"
    served[STATUS_ENV_VAR] = str(record)
    if ZYGOTE_SERVER.serves(served, boot=True):
        proc = ZYGOTE_SERVER.run([str(script), *args], cwd, served, timeout, boot=True)
        proc.returncode = run_status(proc.returncode, read_statuses(str(record)))
        return proc
    return _new_interpreter([sys.executable, "-m", "benchy", "run", "--", sys.executable, str(script), *args], cwd, env, timeout)


def made_once(tmp_path_factory: Any, name: str, make: Callable[[Path], None]) -> Path:
    """A folder every pytest-xdist worker of this run shares, filled by ``make`` once: the first worker to ask
    makes it while the others wait on a lock, then all use it. (Fixtures of session or module scope are made once
    per worker, or again after another module's tests ran between theirs; an expensive one made in the
    checkout, as a wheel's build is, also races with itself.) A ``make`` that fails leaves no mark, and the next
    worker to ask tries again."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / f"once-{name}", root / f"once-{name}.done"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            folder.mkdir(exist_ok=True)
            make(folder)
            done.touch()
    return folder
