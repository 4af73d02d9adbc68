"""``benchy``: command-line tools. ``benchy summary RESULT.json`` reprints a run's summary."""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from ._report import SCHEMA_VERSION, summary_line, verdict_line
from ._schedule import Mode
from ._stats import Estimate
from ._version import __version__


def _summary(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, json.JSONDecodeError) as err:
        print(f"benchy summary: cannot read {path}: {err}", file=sys.stderr)
        return 2
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if version != SCHEMA_VERSION:
        print(f"benchy summary: {path}: schema_version {version!r}; this benchy reads {SCHEMA_VERSION}", file=sys.stderr)
        return 2
    printed = doc.get("summary")
    if isinstance(printed, list) and all(isinstance(x, str) for x in printed):
        for line in printed:  # the lines as the run printed them
            print(line)
    else:  # a checkpoint, or a file from before the lines were kept: rebuild the main ones
        for mode in Mode:
            block = doc.get(mode.value)
            if isinstance(block, dict):
                print(summary_line(mode, Estimate(block.get("mean"), block.get("interval"), int(block.get("n", 0)))))
        if doc.get("verdict"):
            print(verdict_line(doc["verdict"]))
    if not doc.get("complete", False):
        print(f"BENCHY::WARNING::Message: {path} holds an incomplete run "
              f"({doc.get('epochs_started')} of {doc.get('epochs_needed')} epochs).")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="benchy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"benchy {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("summary", help="print the BENCHY::SUMMARY lines of a result JSON")
    show.add_argument("path", help="a benchy_result.json")
    args = parser.parse_args(argv)
    return _summary(args.path)


if __name__ == "__main__":
    sys.exit(main())
