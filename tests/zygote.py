"""A fork server for the test suite's script runs: a Python process that has imported torch and benchy
once, and forks a fresh child for each script run (``python SCRIPT ARGS`` as a user runs it).

Importing torch costs a process about 1.5 s of CPU, and the first optimizer a script makes 0.9 s more
(it imports ``torch._dynamo``): most of what a small script run costs; the suite runs hundreds. A child
starts where the parent stands (torch and benchy imported, nothing run: no threads, no thread pools, no
loader), then takes the run's working directory, environment, argv and
standard streams and runs the script as ``__main__``; it ends as the interpreter ends a script (exit
handlers, then the status: 0, ``sys.exit``'s, 1 after an uncaught exception's traceback, or a signal).

Requests come as one JSON line on stdin: ``{"argv": [...], "cwd": ..., "env": {...}, "out": PATH,
"err": PATH, "boot": false}`` (``boot``: as ``benchy run -- python SCRIPT`` runs it, the runner installed
first, as its boot ``sitecustomize`` does; ``"module": NAME``: ``python -m NAME ARGV...``, as torchrun's agent
is started); the answer is one line: the child's pid (``{"pid": N}``), then its status once it
ended (``{"status": S}``; negative: the signal that ended it, as ``subprocess`` says). ``{"group": [REQUEST,
...]}`` runs them at once (a job's ranks): ``{"pids": [...]}``, then ``{"statuses": [...]}`` once all ended. Used by
``helpers.run_python`` where the run's environment differs from the suite's only in names read at run
time (``helpers.AT_RUN``; ``OMP_NUM_THREADS`` and ``TMPDIR`` are applied in the child as a new interpreter
would); any other run gets a real new interpreter.
"""

import faulthandler
import gc
import importlib
import json

# What every run imports once it benchmarks (the loader workers' queues, the console, NVTX): modules only, nothing
# started; and below, the rest of benchy.
import multiprocessing.popen_fork
import multiprocessing.queues
import multiprocessing.sharedctypes
import multiprocessing.synchronize  # noqa: F401
import os
import pkgutil
import sys

import numpy.ma  # noqa: F401
import nvtx  # noqa: F401
import rich.console  # noqa: F401

# Imported once, here, before any fork: a child pays for none of them.
import torch

# A script's first optimizer imports this (torch.optim's add_param_group runs under torch._disable_dynamo): 0.9 s
# of CPU in every run that trains, the most a child paid that its parent had not. It starts no thread.
import torch._dynamo

import benchy
import benchy.integrations.arguments
import benchy.integrations.wrappers

for _found in pkgutil.walk_packages(benchy.__path__, "benchy."):
    if not _found.name.endswith("__main__") and ".boot" not in _found.name:
        importlib.import_module(_found.name)


def _child(request: dict) -> None:
    """In the forked child: become the script's process, run it, end as a script ends."""
    import io
    import runpy

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, request["out"]), (2, request["err"])):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    # Unbuffered standard streams, as PYTHONUNBUFFERED=1 gives a new interpreter.
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True, line_buffering=True)
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), write_through=True, line_buffering=True, errors="backslashreplace"
    )
    sys.__stdout__, sys.__stderr__, sys.__stdin__ = sys.stdout, sys.stderr, sys.stdin
    # A child that hangs is stopped with SIGABRT: its threads' Python stacks go to its stderr, for the failure's message.
    faulthandler.enable(file=sys.stderr, all_threads=True)
    import tempfile

    tempfile.tempdir = None  # TMPDIR is read again at the first use
    # Read by torch's OpenMP once, when it loads: in a new interpreter, the run's own; without it, a thread a CPU
    # this process may use (the suite's server itself loaded it with the suite's OMP_NUM_THREADS, conftest.py).
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or len(os.sched_getaffinity(0))))
    if request.get("module"):
        # ``python -m MODULE ARGS``: the module as ``__main__``, the working directory first on the path.
        sys.argv = ["-m", *request["argv"]]
        sys.path[0] = os.getcwd()
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        raise SystemExit(0)
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    if request.get("boot"):
        # What `benchy run -- python SCRIPT` does in the new interpreter: its sitecustomize (the boot) installs
        # the runner before the script runs (the environment, BENCHY_RUN_LOADER and PYTHONPATH, is the CLI's).
        from benchy.integrations.runner import install

        install()
    runpy.run_path(script, run_name="__main__")
    raise SystemExit(0)


def _status(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _answer(answer: dict) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        # One run, or a group run at once (a job's ranks, as a launcher without an agent starts them: srun's way).
        runs = request["group"] if "group" in request else [request]
        # Everything this process made (torch, benchy and the rest imported) moves to the collector's permanent
        # generation: a child's collections, its exit's among them, no longer walk (and so copy, page by page) the
        # parent's objects. A child's own objects are collected as in any interpreter. Its exit cost 0.92 s of CPU
        # without this, 0.31 s with it (a script that only exits).
        gc.freeze()
        pids = []
        for run in runs:
            pid = os.fork()
            if pid == 0:
                _child(run)  # never returns: the script's end ends the child
            pids.append(pid)
        _answer({"pids": pids} if "group" in request else {"pid": pids[0]})
        statuses = {}
        while len(statuses) < len(pids):
            pid, status = os.wait()
            statuses[pid] = _status(status)
        codes = [statuses[pid] for pid in pids]
        _answer({"statuses": codes} if "group" in request else {"status": codes[0]})


if __name__ == "__main__":
    main()
