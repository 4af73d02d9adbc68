"""Loaded by every Python process that ``benchy run -- COMMAND`` starts (its directory is first on
``PYTHONPATH``): replaces ``DataLoader`` as soon as the process's import of ``torch`` ends (before any of its code
can take the name), then hands over to the ``sitecustomize`` this one shadows. A process that never imports torch
(a launcher's agents, Ray's own services) imports neither torch nor benchy."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

TYPE_CHECKING = False  # not typing's (4 ms to import): a process that never imports torch imports no more
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Optional, Sequence


def _install() -> None:
    try:
        from benchy.integrations.runner import install

        install()
    except Exception as err:  # never stop the user's program: say why benchy is not active
        from benchy.results.lines import warning

        sys.stderr.write(
            warning(f"benchy run could not replace DataLoader in {sys.argv[:1]}: {type(err).__name__}: {err}") + "\n"
        )  # one write: ranks share the pipe
        sys.stderr.flush()


class _AfterTorch:
    """A finder first on ``sys.meta_path`` that asks only about ``torch``: it leaves the path, finds torch
    as the others would, and has its loader install the runner once torch's module has run."""

    @staticmethod
    def find_spec(name: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        if name != "torch":
            return None
        if _AfterTorch in sys.meta_path:
            sys.meta_path.remove(_AfterTorch)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                run(module)
            finally:
                del loader.exec_module  # the loader's own method again
            _install()

        loader.exec_module = exec_module
        return spec


# Processes that multiprocessing spawns (loader workers with the spawn or forkserver start
# method) build no training loader: they skip the patch.
if os.environ.get("BENCHY_RUN_LOADER") and "--multiprocessing-fork" not in sys.argv:
    if "torch" in sys.modules:
        _install()
    else:
        sys.meta_path.insert(0, _AfterTorch)

_here = os.path.dirname(os.path.abspath(__file__))
_saved = sys.path[:]
_mine = sys.modules.pop("sitecustomize", None)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
try:
    importlib.import_module("sitecustomize")  # the next one on the path, if any
except ImportError:
    pass
finally:
    sys.path[:] = _saved
    if _mine is not None:
        sys.modules["sitecustomize"] = _mine
