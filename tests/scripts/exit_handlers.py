"""A training script that ends its own way, to check that benchy leaves the ending to it.

An exit handler is registered first thing, before torch and benchy are imported (a checkpoint saver or a
logger's flush, as scripts do near the top), and another one once training has begun (after the
benchmark started). Each writes a line to ``handlers.txt`` in the working directory (a file: it must be there
even where the process ends without its standard streams flushed) and prints ``USER::handler NAME``. The
script trains ``--epochs`` epochs of 8 batches, then ends with ``sys.exit(--status)`` (or returns, 0), or
raises (``--raise``). With ``--enable_benchy`` the loader is ``benchy.data_loader`` (the one-line edit); without,
a plain DataLoader (for ``benchy run``). ``--sleep S`` sleeps S seconds after ``USER::ready`` at the start of
the second epoch (for a signal to arrive); SIGTERM ends the process as Python's default does unless
``--on_term`` gives the script a handler of its own, which says so and ends with status 7.
"""

import atexit
import os
import sys


def handler(name: str):
    def run() -> None:
        with open(os.path.join(os.getcwd(), "handlers.txt"), "a", encoding="utf-8") as out:
            out.write(name + "\n")
        print(f"USER::handler {name}", flush=True)

    return run


atexit.register(handler("before-import"))

import argparse  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--status", type=int, default=None)
    p.add_argument("--raise", dest="fail", action="store_true")
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--on_term", action="store_true")
    p.add_argument("--enable_benchy", action="store_true")
    args, _ = p.parse_known_args()
    if args.on_term:

        def term(signum: int, frame: object) -> None:
            print(f"USER::signal {signum}", flush=True)
            sys.exit(7)

        signal.signal(signal.SIGTERM, term)
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    if args.enable_benchy:
        import benchy

        loader = benchy.data_loader(True, data, batch_size=4)
    else:
        loader = DataLoader(data, batch_size=4)
    model = torch.nn.Linear(4, 2)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            torch.nn.functional.cross_entropy(model(x), y).backward()
            if epoch == 0 and step == 5:
                atexit.register(handler("after-start"))
            if epoch == 1 and step == 0 and args.sleep:
                print("USER::ready", flush=True)
                time.sleep(args.sleep)
        print(f"USER::epoch {epoch}", flush=True)
    print("USER::done", flush=True)
    if args.fail:
        raise RuntimeError("the script's own error")
    return 0 if args.status is None else args.status


if __name__ == "__main__":
    sys.exit(main())
