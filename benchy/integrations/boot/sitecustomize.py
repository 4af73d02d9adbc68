"""Loaded by every Python process that ``benchy run -- COMMAND`` starts (its directory is put
first on ``PYTHONPATH``): replaces ``DataLoader`` when ``$BENCHY_RUN_LOADER`` is set, then
hands over to the ``sitecustomize`` this one shadows, if there is one."""

import importlib
import os
import sys

# Processes that multiprocessing spawns (loader workers with the spawn or forkserver start
# method) build no training loader: they skip the patch and its torch import.
if os.environ.get("BENCHY_RUN_LOADER") and "--multiprocessing-fork" not in sys.argv:
    try:
        from benchy.integrations.runner import install

        install()
    except Exception as err:  # never stop the user's program: say why benchy is not active
        from benchy.results.lines import warning

        sys.stderr.write(
            warning(f"benchy run could not replace DataLoader in {sys.argv[:1]}: {type(err).__name__}: {err}") + "\n"
        )  # one write: ranks share the pipe
        sys.stderr.flush()

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
