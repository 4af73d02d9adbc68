"""The watch's judgement of each epoch after the schedule (pure)."""

from __future__ import annotations

import msgspec

from benchy.core.watch import MAX_EPOCHS, MIN_RISE, Baseline, Watch, watched


def test_an_epoch_rises_only_past_full_s_interval_and_the_least_rise() -> None:
    base = Baseline(data_wait=0.30, interval=0.02, throughput=200.0)
    assert base.bound() == 0.30 + MIN_RISE  # a narrow interval: the least rise counts
    assert Baseline(data_wait=0.30, interval=0.10).bound() == 0.40
    steady = watched(epoch=7, steps=100, seconds=10.0, wait=3.3, samples=3200, baseline=base)
    assert not steady.rise and abs(steady.data_wait - 0.33) < 1e-12 and steady.throughput == 320.0
    slow = watched(epoch=8, steps=100, seconds=20.0, wait=12.0, samples=3200, baseline=base)
    assert slow.rise and slow.data_wait == 0.6
    assert not watched(epoch=8, steps=100, seconds=20.0, wait=12.0, samples=None, baseline=None).rise


def test_the_watch_names_the_first_rise_and_keeps_its_memory_bounded() -> None:
    base = Baseline(data_wait=0.2, interval=0.01)
    w = Watch(baseline=base)
    for epoch in range(1, 3 * MAX_EPOCHS):
        wait = 6.0 if 6 <= epoch < 10 or epoch > 2 * MAX_EPOCHS else 2.0
        w = w.add(watched(epoch=epoch, steps=10, seconds=10.0, wait=wait, samples=None, baseline=base))
    assert w.first_rise == 6
    assert w.watched == 3 * MAX_EPOCHS - 1 and w.rises == 4 + MAX_EPOCHS - 1
    assert len(w.epochs) < 2 * MAX_EPOCHS
    assert "from epoch 6" in w.words() and "past 25.0 %" in w.words()


def test_the_watch_is_a_record_of_the_file() -> None:
    base = Baseline(data_wait=0.2, interval=None, read_bytes_per_s=0.0, cpu_cores_busy=1.0)
    epoch = watched(epoch=3, steps=10, seconds=1.0, wait=0.6, samples=320, baseline=base, read_bytes_per_s=5e7)
    w = Watch(baseline=base).add(epoch)
    assert msgspec.json.decode(msgspec.json.encode(w), type=Watch) == w
    said = epoch.words(base)
    assert said.startswith("epoch 3: the loop waited for data 60.0 % of its time, against 20.0 % in the FULL trials")
    assert "storage reads rose to 50.0 MB/s from 0.0" in said
