"""How an exception is carried as a reason (pure): one line, whatever the message."""

from __future__ import annotations

from benchy.core.outcomes import raised


def test_an_error_is_one_line_and_a_worker_s_keeps_the_error_raised_in_the_worker() -> None:
    assert raised(ValueError("boom")) == "ValueError: boom"
    assert raised(KeyError()) == "KeyError: "
    # torch's loader re-raises a worker's error with the worker's traceback in the message.
    worker = RuntimeError(
        "Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
        '  File "worker.py", line 374, in _worker_loop\n    data = fetcher.fetch(index)\n'
        "RuntimeError: this dataset cannot run in a loader worker\n"
    )
    said = raised(worker)
    assert "\n" not in said
    assert said == (
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0. ... "
        "RuntimeError: this dataset cannot run in a loader worker"
    )
