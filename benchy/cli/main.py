"""benchy: is training limited by data loading or by compute? Run a script with its loader
benchmarked, then read, compare, report and draw the result files.

    benchy summary RUN.json [--format text|csv|json|markdown]
    benchy compare BASE.json NEW.json [--threshold PCT] [--format text|markdown|json]
    benchy check [RUN.json] [--fail-on-verdict REGEX] [--fail-on-watch] [--baseline BASE.json] [--threshold PCT]
    benchy report RUN.json ... [--csv OUT.csv] [--plot OUT.png] [--html OUT.html] [--format text|markdown]
    benchy plot RUN.json -o OUT.png [--timeline]
    benchy trace RUN.json -o TRACE.json [--max-events N]
    benchy parse LOG [-o OUT.json] [--name NAME] [--ranks N] [--run K]
    benchy run [--config PATH] [--loader first|N] [--sweep] [--name NAME] -- python train.py ARGS...
    benchy sweep [--config PATH] [--loader first|N] -- python train.py ARGS...
    python -m benchy run train.py ARGS...      (also: torchrun ... -m benchy run train.py ARGS...)

The exit statuses (of these commands, and of a script benchy benchmarks) are listed by
``benchy --help`` and in the documentation (both from :mod:`benchy.core.exits`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..core.config import CONFIG_ENV_VAR, RUN_NAME_ENV_VAR, ConfigError
from ..core.exits import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK, EXIT_REGRESSION, run_status
from ..core.version import __version__
from ..integrations import BOOT_DIR
from ..integrations.runvars import LOADER_ENV_VAR, SWEEP_ENV_VAR, parse_loader
from ..results import compare as comparing
from ..results import lines
from ..results import scaling as scaling
from ..results.configfile import load_config
from ..results.saved import Run
from ..results.schema import ResultFileError, json_safe, load
from ..results.tables import Table, markdown_text, print_table, summary_table
from ..results.text.exits import table_text

USAGE = __doc__.split("\n\nThe exit statuses")[0]  # the --help text: plain, no markup


def _fail(command: str, message: str) -> int:
    print(f"benchy {command}: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


# --- summary ---------------------------------------------------------------------------------


def _progress(run: Run) -> str:
    """How far an incomplete run got, in the words its file allows: trials lost, epochs against those needed."""
    lost = run.model.interrupted
    lost_text = f"{len(lost)} scheduled trial(s) did not count" if lost else "not finished"
    started, needed = run.model.epochs_started, run.model.epochs_needed
    if started is not None and needed is not None:
        return f"{lost_text}; {started} epoch(s) of the about {needed} its schedule needed"
    return lost_text


def _summary_text(run: Run) -> List[str]:
    if run.summary:
        return list(run.summary)  # the lines as the run printed them
    # A checkpoint, a version-1 file or a parsed log without them: rebuild the main ones.
    out = [lines.summary(mode.value, m.estimate.mean, m.estimate.half_width) for mode, m in run.modes.items()]
    if run.verdict:
        out.extend(lines.summary_texts("VERDICT", run.verdict))
    return out


def _summary_json(run: Run) -> Dict[str, Any]:
    return {
        **run.row(),
        "modes": {
            mode.value: {
                "mean": m.mean,
                "interval": m.interval,
                "n": m.n,
                "confidence": m.confidence,
                "trial_throughput": list(m.trial_throughputs),
                "data_wait": m.data_wait,
            }
            for mode, m in run.modes.items()
        },
        "verdict": run.verdict,
    }


def _summary(args: argparse.Namespace) -> int:
    run = load(args.path)
    if args.format == "text":
        for line in _summary_text(run):
            print(line)
        if not run.complete:
            print(lines.warning(f"{args.path} holds an incomplete run ({_progress(run)})."))
    elif args.format == "csv":
        table = Table(["run", "mode", "mean", "interval", "n", "confidence", "data_wait"])
        for mode, m in run.modes.items():
            cells = (run.name, mode.value, m.mean, m.interval, m.n, m.confidence, m.data_wait)
            table.rows.append(["" if c is None else repr(c) if isinstance(c, float) else str(c) for c in cells])
        print(table.csv())
    elif args.format == "json":
        print(json.dumps(json_safe(_summary_json(run)), indent=1))
    else:
        print(
            f"### benchy: {markdown_text(run.label)} ({run.nranks} rank{'s' if run.nranks != 1 else ''}"
            f"{'' if run.complete else ', incomplete'})\n"
        )
        print(summary_table(run).markdown())
        if run.verdict:
            print(f"\n**Verdict:** {markdown_text(run.verdict)}")
    return EXIT_OK


# --- compare ---------------------------------------------------------------------------------


def _compare(args: argparse.Namespace) -> int:
    result = comparing.compare_runs(load(args.base), load(args.new), threshold=args.threshold / 100.0, confidence=args.confidence)
    if not result.changes:
        return _fail("compare", f"{args.base} and {args.new} have no mode in common")
    if args.format == "json":
        print(json.dumps(json_safe(comparing.as_dict(result)), indent=1))
    elif args.format == "markdown":
        print(comparing.markdown(result))
    else:
        for line in comparing.header(result):
            print(line)
        print_table(comparing.table(result), sys.stdout, fancy=sys.stdout.isatty())
        print(comparing.status_line(result))
    return result.exit_status


# --- check ----------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    """A CI check of a result file: the status its run advises first, then ``--fail-on-verdict`` and ``--baseline``."""
    try:
        pattern = re.compile(args.fail_on_verdict) if args.fail_on_verdict else None
    except re.error as err:
        return _fail("check", f"--fail-on-verdict {args.fail_on_verdict!r}: not a regular expression ({err})")
    run = load(args.path)
    base = load(args.baseline) if args.baseline else None
    status = run.model.exit_status  # what the run advises for CI (0, 3, 4)
    if status is None:  # a file without one (older versions, a parsed log)
        status = EXIT_OK if run.complete else EXIT_INCOMPLETE
    if status == EXIT_INCOMPLETE:
        print(f"benchy check: {args.path} holds an incomplete run ({_progress(run)}): status {status}")
        return status
    if status != EXIT_OK:
        print(f"benchy check: {args.path}: the schedule ended without a counted trial of every mode: status {status}")
        return status
    print(f"benchy check: {args.path} holds a complete run")
    failed = False
    if pattern is not None:
        verdict = run.verdict or ""
        if pattern.search(verdict):
            print(f"benchy check: the verdict matches --fail-on-verdict {args.fail_on_verdict!r}: {verdict}")
            failed = True
        else:
            print(f"benchy check: the verdict does not match --fail-on-verdict {args.fail_on_verdict!r}")
    if args.fail_on_watch:
        watch = run.model.watch
        if watch is not None and watch.rises:
            print(f"benchy check: the watch saw the data wait rise (--fail-on-watch): {watch.words()}")
            failed = True
        else:
            said = "no epoch was watched after the schedule" if watch is None else watch.words()
            print(f"benchy check: no rise of the data wait (--fail-on-watch): {said}")
    if base is not None:
        result = comparing.compare_runs(base, run, threshold=args.threshold / 100.0, confidence=args.confidence)
        if not result.changes:
            return _fail("check", f"{args.baseline} and {args.path} have no mode in common")
        print_table(comparing.table(result), sys.stdout, fancy=sys.stdout.isatty())
        print(f"benchy check: {comparing.status_line(result)}")
        failed = failed or result.exit_status != EXIT_OK
    return EXIT_REGRESSION if failed else EXIT_OK


# --- report ----------------------------------------------------------------------------------


def _report(args: argparse.Namespace) -> int:
    runs = [load(path) for path in args.runs]
    rows = scaling.scaling_rows(runs)
    table = scaling.table(rows)
    base = scaling.baseline(runs)
    kind = scaling.study_kind(rows)
    if args.format == "markdown":
        print(table.markdown())
        print(f"\nBaseline: {markdown_text(base.label)} ({base.nranks} rank{'s' if base.nranks != 1 else ''}); {kind}.")
    else:
        print_table(table, sys.stdout, fancy=sys.stdout.isatty())
        print(f"baseline: {base.label} ({base.nranks} rank{'s' if base.nranks != 1 else ''}); {kind}")
    if args.csv:
        try:
            with open(args.csv, "w", encoding="utf-8", newline="") as handle:
                handle.write(scaling.csv_table(rows).csv() + "\n")
        except OSError as err:
            return _fail("report", f"cannot write {args.csv}: {err.strerror or err}")
        print(f"wrote {args.csv}")
    if args.html:
        status = _write_html(runs, args.html)
        if status != EXIT_OK:
            return status
    if args.plot:
        from ..results.plots import plot_scaling

        return _draw("report", args.plot, lambda: plot_scaling(rows, args.plot))
    return EXIT_OK


def _write_html(runs: Sequence[Run], path: str) -> int:
    from ..results.files import write_atomic
    from ..results.html import report_page

    page = report_page(runs)
    try:
        write_atomic(path, lambda handle: handle.write(page.text), suffix=".html.tmp")
    except OSError as err:
        return _fail("report", f"cannot write {path}: {err.strerror or err}")
    for note in page.notes:
        print(f"benchy report: {note}", file=sys.stderr)
    print(
        f"wrote {path} ({len(page.text.encode()) / 1e6:.1f} MB, {page.plots} plot{'s' if page.plots != 1 else ''}, "
        "self-contained: open it in any browser)"
    )
    return EXIT_OK


def _draw(command: str, path: str, draw: Any) -> int:
    from ..results.plots import PlotUnavailable

    try:
        result = draw()
    except (PlotUnavailable, ValueError) as err:
        return _fail(command, str(err))
    except OSError as err:
        return _fail(command, f"cannot write {path}: {err.strerror or err}")
    print(f"wrote {path}" + (f" (from {result})" if isinstance(result, str) else ""))
    for note in result if isinstance(result, list) else ():
        print(f"note: {note}")
    return EXIT_OK


def _plot(args: argparse.Namespace) -> int:
    from ..results.plots import plot_run, plot_timeline

    run = load(args.path)
    return _draw("plot", args.output, lambda: (plot_timeline if args.timeline else plot_run)(run, args.output))


# --- trace -----------------------------------------------------------------------------------


def _trace(args: argparse.Namespace) -> int:
    from ..results.files import write_atomic
    from ..results.trace import MAX_EVENTS, TraceError, TraceStats, write_trace

    run = load(args.path)
    found = TraceStats()

    def write(handle: Any) -> None:
        nonlocal found
        found = write_trace(run, handle, args.max_events or MAX_EVENTS)

    try:
        write_atomic(args.output, write)
    except TraceError as err:
        return _fail("trace", str(err))
    except OSError as err:
        return _fail("trace", f"cannot write {args.output}: {err.strerror or err}")
    size = os.path.getsize(args.output)
    every = "every step a slice" if found.block == 1 else f"{found.block} steps a slice (over --max-events)"
    print(
        f"wrote {args.output}: {found.events} events ({every}), {found.processes} process"
        f"{'es' if found.processes != 1 else ''}, {size / 1e6:.1f} MB. Open it in https://ui.perfetto.dev "
        f"(Open trace file) or chrome://tracing (Load)."
    )
    for note in found.notes:
        print(f"note: {note}")
    return EXIT_OK


# --- parse -----------------------------------------------------------------------------------


def _parse(args: argparse.Namespace) -> int:
    from ..results.files import write_json_atomic
    from ..results.logparse import parse_log

    name = args.name or os.path.splitext(os.path.basename(args.log))[0]
    try:
        with open(args.log, encoding="utf-8", errors="replace") as handle:
            run = parse_log(handle, name=name, nranks=args.ranks, which=args.run - 1 if args.run else -1, parsed_from=args.log)
    except OSError as err:
        return _fail("parse", f"{args.log}: cannot read it: {err.strerror or err}")
    except (ValueError, ResultFileError) as err:
        return _fail("parse", f"{args.log}: {err}")
    document = json_safe(run.document)
    if args.output:
        try:
            write_json_atomic(args.output, document)
        except OSError as err:
            return _fail("parse", f"cannot write {args.output}: {err.strerror or err}")
        found = ", ".join(f"{m.value} {len(r.trial_throughputs)} trials" for m, r in run.modes.items())
        print(f"wrote {args.output} ({name}: {found})")
    else:
        print(json.dumps(document, indent=1))
    return EXIT_OK


# --- run ------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    """Run the unmodified script with DataLoader replaced: ``train.py ARGS`` in this process (as ``python -m benchy
    run`` does), any other command as a child process this one waits for (:mod:`benchy.cli.child`)."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        return _fail(args.verb, "no command: expected `-- python train.py ARGS...` or `train.py ARGS...`")
    try:
        parse_loader(args.loader)
    except ValueError as err:
        return _fail(args.verb, str(err))
    env = os.environ
    env[LOADER_ENV_VAR] = args.loader
    if args.sweep or args.verb == "sweep":
        env[SWEEP_ENV_VAR] = "1"
    if args.config:
        if not os.path.isfile(args.config):
            return _fail(args.verb, f"--config {args.config}: no such file")
        env[CONFIG_ENV_VAR] = os.path.abspath(args.config)
    if args.name:
        env[RUN_NAME_ENV_VAR] = args.name
    try:  # a bad config is said now, before the script runs, not at its first loop
        load_config()
    except ConfigError as err:
        return _fail(args.verb, str(err))
    if command[0].endswith(".py"):
        from ..integrations.runner import install, run_script
        from ..session.registry import REGISTRY

        install()
        try:
            run_script(command[0], command[1:])
        except FileNotFoundError as err:
            return _fail(args.verb, str(err).removeprefix("benchy run: "))
        except SystemExit as done:  # the script's sys.exit: its status stands, unless it is 0
            if done.code not in (None, 0):
                raise
        REGISTRY.end_all()  # each benchmark's advised status: one still running ends first, as at the interpreter's exit
        return run_status(EXIT_OK, REGISTRY.advised())
    from .child import run_child

    if shutil.which(command[0], path=env.get("PATH")) is None and not os.path.isfile(command[0]):
        return _fail(args.verb, f"cannot run {command[0]}: no such command")
    env["PYTHONPATH"] = BOOT_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        return run_child(command, dict(env))
    except OSError as err:
        return _fail(args.verb, f"cannot run {command[0]}: {err.strerror or err}")


def _within(name: str, convert: Callable[[str], Any], low: float, high: float, expected: str) -> Callable[[str], Any]:
    """An argparse type: ``convert(text)`` from ``low`` to below ``high``, else an error saying ``expected``; ``name``
    is the one argparse gives where ``convert`` fails (``invalid _percent value: 'x'``)."""

    def parse(text: str) -> Any:
        value = convert(text)
        if not low <= value < high:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return value

    parse.__name__ = name
    return parse


_percent = _within("_percent", float, 0, 100, "a percentage from 0 to below 100")
_confidence = _within("_confidence", float, 0.5, 1, "a confidence from 0.5 to below 1 (0.95 = 95 %)")
_positive = _within("_positive", int, 1, math.inf, "an integer >= 1")


def _regression_options(parser: argparse.ArgumentParser, when: str = "") -> None:
    """``--threshold`` and ``--confidence``: what a regression is (``benchy compare``'s test)."""
    parser.add_argument(
        "--threshold",
        type=_percent,
        default=5.0,
        metavar="PCT",
        help=f"{when}a significant fall of more than PCT %% of the mean is a regression (default 5)",
    )
    parser.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        help=f"{when}a change is significant when p < 1 - confidence (default 0.95)",
    )


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="benchy",
        description=USAGE,
        epilog="exit status (the commands', and a benchmarked script's):\n" + table_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"benchy {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    show = sub.add_parser("summary", help="print a run's summary (text lines, CSV, JSON or Markdown)")
    show.add_argument("path", help="a result JSON")
    show.add_argument("--format", choices=["text", "csv", "json", "markdown"], default="text")
    show.set_defaults(handler=_summary, verb="summary")

    comp = sub.add_parser("compare", help="compare two runs mode by mode (exit 1 on a significant regression)")
    comp.add_argument("base", help="the reference result JSON")
    comp.add_argument("new", help="the result JSON to check")
    _regression_options(comp)
    comp.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    comp.set_defaults(handler=_compare, verb="compare")

    check = sub.add_parser(
        "check",
        help="CI: exit with the status a run's result file advises (4 incomplete, 3 a mode without a counted trial), "
        "else 1 when its verdict matches --fail-on-verdict, the watch saw the data wait rise (--fail-on-watch) or a "
        "mode regressed against --baseline",
    )
    check.add_argument("path", nargs="?", default="benchy_result.json", help="a result JSON (default: benchy_result.json)")
    check.add_argument("--fail-on-verdict", metavar="REGEX", help="fail (1) when the verdict's text matches REGEX")
    check.add_argument(
        "--fail-on-watch",
        action="store_true",
        help="fail (1) when the data wait rose in an epoch after the schedule (the JSON's watch: training went on)",
    )
    check.add_argument("--baseline", metavar="BASE.json", help="fail (1) when a mode regressed against this run")
    _regression_options(check, "with --baseline: ")
    check.set_defaults(handler=_check, verb="check")

    rep = sub.add_parser("report", help="scalability table across runs (CSV, PNG and an HTML page on request)")
    rep.add_argument("runs", nargs="+", help="result JSONs, e.g. of 1, 2 and 4 ranks")
    rep.add_argument("--csv", metavar="OUT.csv")
    rep.add_argument("--plot", metavar="OUT.png", help="throughput and efficiency against ranks (needs matplotlib)")
    rep.add_argument(
        "--html",
        metavar="OUT.html",
        help="one self-contained page: verdict, tables, per-step plots, timeline, system metrics, "
        "sweep and, for several runs, scaling (plots need matplotlib)",
    )
    rep.add_argument("--format", choices=["text", "markdown"], default="text")
    rep.set_defaults(handler=_report, verb="report")

    plot = sub.add_parser("plot", help="per-step throughput over time and a histogram per mode (PNG)")
    plot.add_argument("path", help="a result JSON (its .steps directory next to it gives warm-ups and times)")
    plot.add_argument("-o", "--output", required=True, metavar="OUT.png")
    plot.add_argument(
        "--timeline",
        action="store_true",
        help="rank 0's timeline instead: every step at its time (FULL: step and data wait), the "
        "trials, the CPU and RSS readings (the picture of benchy trace)",
    )
    plot.set_defaults(handler=_plot, verb="plot")

    trace = sub.add_parser("trace", help="a Chrome trace (Perfetto UI, chrome://tracing) of a run's trials and steps")
    trace.add_argument("path", help="a result JSON (its .steps directory next to it gives the steps)")
    trace.add_argument("-o", "--output", required=True, metavar="TRACE.json")
    trace.add_argument(
        "--max-events",
        type=_positive,
        default=None,
        metavar="N",
        help="draw at most N step events; past that, blocks of steps (default 200000, ~30 MB)",
    )
    trace.set_defaults(handler=_trace, verb="trace")

    parse = sub.add_parser("parse", help="a result JSON from the BENCHY:: lines of a log")
    parse.add_argument("log", help="a log holding BENCHY:: lines (benchy's or the original tool's)")
    parse.add_argument("-o", "--output", metavar="OUT.json", help="default: print the JSON")
    parse.add_argument("--name", help="the run's name (default: the log file's name)")
    parse.add_argument("--ranks", type=_positive, help="ranks of the run, when the log does not say")
    parse.add_argument("--run", type=_positive, metavar="K", help="the K-th run of the log (default: the last)")
    parse.set_defaults(handler=_parse, verb="parse")

    for verb, text in (
        ("run", "run an unmodified training script with its training DataLoader benchmarked"),
        ("sweep", "run, with a loader sweep of num_workers (auto) before the schedule"),
    ):
        runner = sub.add_parser(
            verb,
            help=text,
            description=text,
            epilog="exit status:\n" + table_text(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        runner.add_argument("--config", metavar="PATH", help="benchy YAML config (default: $BENCHY_CONFIG_FILE)")
        runner.add_argument(
            "--loader",
            default="first",
            metavar="first|N",
            help="first: the first DataLoader whose iterator runs a loop (default); N: the N-th created",
        )
        if verb == "run":
            runner.add_argument("--sweep", action="store_true", help="sweep num_workers (auto) before the schedule")
        runner.add_argument("--name", help="the run's name in the JSON (as --benchy_name)")
        runner.add_argument(
            "command",
            nargs=argparse.REMAINDER,
            help="-- python train.py ARGS...  |  train.py ARGS...  |  -- torchrun ... train.py ARGS...",
        )
        runner.set_defaults(handler=_run, verb=verb, sweep=False)

    args = parser.parse_args(argv)
    try:
        status: int = args.handler(args)
    except ResultFileError as err:  # a result file a command reads
        return _fail(args.verb, str(err))
    return status


if __name__ == "__main__":
    sys.exit(main())
