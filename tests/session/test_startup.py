"""Loader start-up: iter() to the first batch of each pass, against an epoch at the FULL rate."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator, List

import pytest
import torch
from helpers import until_done, verdict_of

from benchy.core.claims import StartupCost
from benchy.core.startup import Basis, startup
from benchy.measure.source import BatchSource
from benchy.results.text.reports import startup as startup_text
from benchy.torch import BenchmarkDataLoader


def test_each_pass_records_the_time_from_iter_to_its_first_batch() -> None:
    now = [0.0]

    def loader() -> Iterator[List[int]]:
        now[0] += 0.5  # worker start-up, paid at the first batch of every pass
        for _ in range(3):
            now[0] += 0.01
            yield [0]

    src = BatchSource(loader, clock=lambda: now[0])
    for _ in range(7):  # passes of 3: the 4th and 7th fetch start new passes
        src.fetch()
    assert src.passes == 3 and src.startups == pytest.approx([0.51, 0.51, 0.51])


def test_startup_against_an_epoch_at_the_full_rate() -> None:
    found = startup([0.5, 0.4, 0.6], workers=2, persistent=False, epoch_batches=100, batch_seconds=0.01, full_batch_seconds=0.02)
    assert found is not None and found.typical == pytest.approx(0.5) and found.extra == pytest.approx(0.49)
    assert found.share == pytest.approx(0.49 / 2.49)
    assert found.costly and startup_text(found) == [
        "loader start-up (iter() to the first batch): 0.500 s per epoch (median of 3 passes: 0.500, 0.400, 0.600 s)",
        "0.490 s more than a batch: 19.7 % of an epoch of 100 batches at the FULL rate (2.00 s)",
    ]
    assert StartupCost(found).words() == (
        "each epoch also starts the loader (0.490 s more than a batch, 19.7 % of an "
        "epoch at the FULL rate, not in the trials' throughputs): "
        "persistent_workers=True keeps the workers between epochs"
    )
    cheap = startup([0.012], workers=0, persistent=False, epoch_batches=100, batch_seconds=0.01, full_batch_seconds=0.02)
    assert cheap is not None and cheap.share == pytest.approx(0.002 / 2.002) and not cheap.costly


def test_persistent_workers_start_once() -> None:
    once = startup([2.0], workers=4, persistent=True, epoch_batches=100, batch_seconds=0.01, full_batch_seconds=0.02)
    assert once is not None and once.share is None and not once.costly
    assert once.basis == Basis.FIRST_PERSISTENT.words
    assert "the first pass, which also started the persistent workers" in startup_text(once)[0]
    later = startup([2.0, 0.02, 0.03], workers=4, persistent=True, epoch_batches=100, batch_seconds=0.01, full_batch_seconds=0.02)
    assert later is not None and later.typical == pytest.approx(0.025) and not later.costly
    assert startup([], workers=0, persistent=False, epoch_batches=None, batch_seconds=None, full_batch_seconds=None) is None


class Samples(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 48

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(2)


def slow_start(worker_id: int) -> None:
    time.sleep(0.3)  # e.g. opening files, building an index, importing in each worker


@pytest.mark.timing
@pytest.mark.parametrize("persistent", [False, True])
def test_a_loader_that_restarts_its_workers_every_epoch_is_named(
    tmp_path: Path, persistent: bool, capsys: pytest.CaptureFixture
) -> None:
    mode = {"nbatches": 6, "ntrials": 2, "nwarmup": 0}
    cfg = {
        "global": {"exit_after_tests": False, "output_dir": str(tmp_path), "console": "plain", "report_freq": 0},
        "IO": mode,
        "synthetic": mode,
        "full": mode,
    }
    loader = BenchmarkDataLoader(
        Samples(), batch_size=4, num_workers=2, worker_init_fn=slow_start, persistent_workers=persistent, benchy_config=cfg
    )  # 12 batches per pass
    until_done(loader, lambda: time.sleep(0.002))
    out = capsys.readouterr().out
    start = loader.benchy.snapshot().startup
    assert start is not None and len(start.seconds) >= 2, out
    line = "\n".join(x for x in out.splitlines() if x.startswith("BENCHY::SUMMARY::STARTUP "))
    verdict = verdict_of(out)
    with capsys.disabled():
        print(line)
    # margin: a persistent loader's later epochs start without new workers (milliseconds; 0.2 s is 100x that), a
    # restarted one's each sleep 0.3 s in worker_init_fn, which no load shortens; the share is over half while the
    # 12-batch epoch itself takes under 0.3 s (about 30 ms quiet: 10x).
    if persistent:
        assert min(start.seconds[1:]) < 0.2 and "persistent_workers=True" not in verdict, (start, verdict)
    else:
        assert min(start.seconds) >= 0.3 and start.share is not None and start.share > 0.5, start
        assert "persistent_workers=True keeps the workers between epochs" in verdict, verdict


def test_an_epoch_at_the_full_rate_uses_fulls_mean_period_not_its_median() -> None:
    # Workers that deliver in bursts: most FULL periods are short (a batch ready), one in four waits for the
    # workers; the FULL rate is the mean's (0.1 s a batch), the median period (0.01 s) is not.
    from helpers import FakeClock, make_session, trial_result

    from benchy.core.results import RunResults
    from benchy.core.schedule import Mode

    made = make_session(FakeClock())
    bursty = [0.01, 0.01, 0.01, 0.37]
    results = RunResults(
        [trial_result(Mode.IO, 1, seconds=0.04, periods=[0.01] * 4)]
        + [trial_result(Mode.FULL, k, seconds=0.4, periods=bursty) for k in (1, 2)]
    )
    made.session.runner.startups = [0.5, 0.5]
    found = made.session.runner.startup(results, workers=4, persistent=False, epoch_batches=100)
    assert found is not None and found.epoch_seconds == pytest.approx(10.0)  # 100 batches x 0.1 s, not x 0.01 s
    assert found.batch_seconds == pytest.approx(0.01)  # start-up is set against an ordinary batch (IO's median)
