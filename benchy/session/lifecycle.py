"""A benchmark's endings: the schedule's end, the script's exit before it, a signal, a failed exchange.

:class:`Lifecycle` installs the hooks when the benchmark starts (the at-exit hook; the SIGTERM handler where
signals can be set) and removes the signal handler when it ends; it reads and records on its
:class:`~benchy.session.session.Session`. Each ending keeps what was
measured (the summary, the table, the JSON), names what was not, and records the exit status benchy advises
for CI (:meth:`Lifecycle.advise`: 0, 3 or 4, in the JSON's ``exit_status`` and, under ``benchy run``, in the
record its parent reads):

* :meth:`Lifecycle.finish`: the schedule is over. With ``exit_after_tests`` the process ends here, the one
  place benchy ends it, with the status of :class:`~benchy.session.sink.ResultSink` (0, or 3 when a mode has
  no counted trial); not inside a Ray Train worker, whose end Ray would report as a failed training: there
  the training goes on with the plain loader, and that is said.
* :meth:`Lifecycle.at_exit`: the script ended first. Where measuring was over (the verdict stands) the run is
  complete: the extras not run are named, and the summary is the schedule's end's. Else the running window is
  lost, and how far the loop got is said against what a decision needs. The process ends as the script makes
  it end, its status and every exit handler its own: the run is said incomplete (status 4 advised), and
  ``benchy run`` or ``benchy check`` turn that into CI's failing status. A rank that ends with an uncaught
  exception says so in the job's rendezvous store, so that the ranks the launcher stops next can name it.
* a signal (SIGTERM: Slurm's preemption and time-out, torchrun stopping the ranks after one failed): the
  running trial is named as interrupted, with the rank that failed first when one said so; then the signal
  takes its course: the handler that was there before (the script's or the launcher's) runs, or the default
  action ends the process with the signal's status.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Optional

from ..core import events as ev
from ..core.exits import EXIT_INCOMPLETE, STATUS_ENV_VAR
from ..core.outcomes import FailedRank, Interruption, Reason, Why, raised
from ..core.progress import not_run
from ..core.schedule import TrialSpec
from ..measure.profiling import AT_END, AT_EXIT
from ..results.files import append_status

if TYPE_CHECKING:
    from .session import Session

__all__ = ["Lifecycle", "host"]


def host() -> Optional[str]:
    """What hosts this process when it is not the script's own to end: ``"Ray Train worker"`` (or
    ``"Ray worker"``) inside Ray's actors and tasks; None for an ordinary process."""
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        if not ray.is_initialized():
            return None
        context = ray.get_runtime_context()
        if context.get_actor_id() is None and context.get_task_id() is None:
            return None  # the driver: the user's own script
    except Exception:
        return None
    return "Ray Train worker" if "ray.train" in sys.modules else "Ray worker"


class Lifecycle:
    """The endings of one session's benchmark (see the module)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._previous: Any = None
        self._exiting = False  # inside the interpreter's exit: never end the process from here

    @property
    def exiting(self) -> bool:
        """Inside the interpreter's exit (the at-exit hook runs): no loader pass is started or advanced."""
        return self._exiting

    # --- hooks --------------------------------------------------------------------------------

    def install(self) -> None:
        """At the benchmark's start: the at-exit hook, and the SIGTERM handler where signals can be set."""
        atexit.register(self.at_exit)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError):  # pragma: no cover - unusual embeddings
            self._previous = None

    def restore(self) -> None:
        """At the benchmark's end: the SIGTERM handler that was there before, if ours is still set."""
        if self._previous is None or threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) == self._handle:
                signal.signal(signal.SIGTERM, self._previous)
        except (ValueError, OSError):  # pragma: no cover
            pass

    def _handle(self, signum: int, frame: Any) -> None:
        previous = self._previous
        try:
            self.on_signal("SIGTERM")
        finally:
            self.restore()
            if callable(previous):
                previous(signum, frame)  # the script's or launcher's own handler
            elif previous != signal.SIG_IGN:
                os.kill(os.getpid(), signum)  # the default action: end with the signal's status

    # --- the endings --------------------------------------------------------------------------

    def _stop(self) -> None:
        """The benchmark is over, whichever way: no more windows; benchy's own pass and cached batch let go."""
        s = self._session
        s.stop(Reason(Why.SCRIPT_ENDED_EARLY if self._exiting else Why.BENCHMARK_ENDED))
        self.restore()
        s.finish_results(final=True)
        self._close_profiler(AT_EXIT if self._exiting else AT_END)

    def finish(self) -> None:
        """The schedule is over (or the script ended once the verdict stood): summary, table and final JSON; then
        the process ends (``exit_after_tests``) or the loader is the plain one from here on."""
        s = self._session
        self._stop()
        sink = s.ctx.sink
        exit_after = s.config.general.exit_after_tests
        where = host() if exit_after else None
        ends = exit_after and where is None and not self._exiting
        status = sink.exit_status(s.results)
        self.advise(status)
        sink.summary(s.snapshot(), exit_status=status)
        if where is not None:
            sink.say(ev.NoExitHere(where))
        if not self._exiting:
            sink.end(s.results, ends)

    def exchange_failed(self, spec: TrialSpec) -> None:
        """The ranks could not exchange ``spec``'s results: keep what was measured and print it, as a single-rank
        run prints it, naming a rank that said it failed; the caller raises."""
        s = self._session
        failed = tuple(FailedRank(r, why) for r, why in s.ctx.comm.failures())
        item = Interruption(spec, spec.nbatches, Reason(Why.RANKS))
        s.outcomes = s.outcomes.with_failed(failed).lose(item)
        self._stop()
        self.advise(EXIT_INCOMPLETE)
        try:
            s.ctx.sink.say(ev.TrialLost(item))
            if failed:
                s.ctx.sink.say(ev.RankFailed(failed))
            s.ctx.sink.summary(s.snapshot(), exit_status=EXIT_INCOMPLETE)
        except Exception:
            pass

    def on_signal(self, name: str) -> None:
        """A signal ends the benchmark: the running trial is named as interrupted (with the rank that failed first,
        when one said so); the summary is printed and the JSON written."""
        s = self._session
        if os.getpid() != s.pid or not s.running:
            return
        running, measured = s.running_trial()
        failed = tuple(FailedRank(r, why) for r, why in s.ctx.comm.failures())
        s.outcomes = s.outcomes.signalled(name).with_failed(failed)
        if running is not None:
            why = Reason(Why.SIGNAL, detail=name, steps=measured, of=running.nbatches, failed=failed[0] if failed else None)
            s.outcomes = s.outcomes.lose(Interruption(running, measured, why))
        self.advise(EXIT_INCOMPLETE)
        try:
            s.ctx.out.trial_ended()
            s.ctx.sink.say(ev.Signalled(name, running, measured, failed))
            self._stop()
            s.ctx.sink.summary(s.snapshot(), exit_status=EXIT_INCOMPLETE)
        except Exception:  # the signal must take its course whatever happens here
            pass

    def at_exit(self) -> None:
        """At interpreter exit, when the script ended before the schedule did: say so, with what a decision needs,
        and keep what was measured (summary and JSON)."""
        s = self._session
        if os.getpid() != s.pid or not s.running:
            return
        self._exiting = True
        s.ctx.out.trial_ended()
        if s.machine.decided_phase:  # the verdict stands: the extras not run are named, and the run is complete
            self.finish()
            return
        died = getattr(sys, "last_value", None)  # set when an uncaught exception ends the script
        error = None if died is None or isinstance(died, SystemExit) else raised(died)
        if error is not None and s.ctx.world > 1:
            s.ctx.comm.report_failure(error)
        running, measured = s.running_trial()
        failed = next((i for i in reversed(s.outcomes.lost) if i.error), None)
        if running is not None:
            ended = Reason(Why.SCRIPT_RAISED, error=error) if error is not None else Reason(Why.SCRIPT_ENDED)
            s.outcomes = s.outcomes.lose(Interruption(running, measured, ended))
        sink = s.ctx.sink
        sink.stopped_early(s.progress(error, failed, None if running is None else running.label))
        why = (
            Reason(Why.NOT_RUN_RAISED, label=failed.spec.label)
            if failed is not None
            else Reason(Why.NOT_RUN_SCRIPT_RAISED, error=error)
            if error is not None
            else Reason(Why.NOT_RUN_STOPPED, epochs=s.loop.epochs_started, steps=s.loop.steps_taken())
        )
        for spec in not_run(s.schedule, s.machine, s.runner.queue_depth):
            s.outcomes = s.outcomes.lose(Interruption(spec, 0, why))
        self._stop()
        # The process ends as the script makes it end (its status, every exit handler): the run is said incomplete,
        # and a tool that owns the process (benchy run, benchy check) fails the CI job with 4.
        self.advise(EXIT_INCOMPLETE)
        sink.summary(s.snapshot(), exit_status=EXIT_INCOMPLETE)
        if error is None:
            sink.incomplete()

    def advise(self, status: int) -> None:
        """The exit status benchy advises for CI (0 complete, 3 a mode without a counted trial, 4 incomplete): kept
        by the session and, under ``benchy run``, appended to the record its parent reads (once per benchmark:
        every ending stops the benchmark first)."""
        s = self._session
        if s.advised is not None:
            return
        s.advised = s.record.advised = status
        path = os.environ.get(STATUS_ENV_VAR)
        if path:
            try:
                append_status(path, status)
            except OSError:  # the parent's record is gone: it reports the run as incomplete
                pass

    def _close_profiler(self, when: str) -> None:
        s = self._session
        for event in s.ctx.profilers.close(when):
            s.ctx.sink.say(event)
