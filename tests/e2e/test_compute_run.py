"""FLOPs, MFU and tokens as a user meets them: a script's COMPUTE and TOKENS lines, the JSON and the
counted step, an untimed one outside the trials (exact figures, known by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import small_config

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "compute_train.py"
B = 5
# The MLP's step (tests/measure/test_flops.py counts the same by hand): forward, weight and hidden-input grads.
MLP_FLOPS = (2 * B * 8 * 16 + 2 * B * 16 * 4) + (2 * B * 16 * 4) + (2 * B * 4 * 16) + (2 * B * 8 * 16)


def test_the_steps_flops_and_mfu_against_a_configured_peak(run_script) -> None:
    run = run_script(small_config(nbatches=8, ntrials=2, nwarmup=1, peak_flops="2.5 GFLOP/s"), script=SCRIPT)
    assert run.returncode == 0, run
    doc = run.result()
    compute = doc["compute"]
    assert compute["flops_per_step"] == MLP_FLOPS and compute["samples"] == B
    assert compute["flops_per_sample"] == MLP_FLOPS / B and compute["by_dtype"] == {"float32": MLP_FLOPS}
    assert compute["counted_in"] == "FLOPS_1" and compute["device_type"] == "cpu"
    assert compute["peak_flops"] == 2.5e9 and compute["peak_basis"] == "float32: global.peak_flops"
    for mode in ("SYNTHETIC", "FULL"):
        achieved = compute[mode]["flops_per_s"]
        assert achieved == pytest.approx(MLP_FLOPS / B * doc[mode]["mean"], rel=1e-9)
        assert compute[mode]["mfu"] == pytest.approx(achieved / 2.5e9, rel=1e-9)
    text = run.summary_line("COMPUTE")
    assert text.startswith(f"{MLP_FLOPS / 1e3:.4g} kFLOP a step") and "MFU SYNTHETIC" in text
    assert "of a peak of 2.5 GFLOP/s (float32: global.peak_flops)" in text
    # The counted step is an untimed one after the verdict, in no trial: every window keeps its 8 periods.
    # The whole schedule runs inside the first of the loader's 800-batch epochs, which benchy then ends.
    assert doc["SYNTHETIC"]["nbatches"] == [8, 8]
    assert not any(line.startswith("USER::epoch") for line in run.stdout.splitlines())
    spans = [e["window"] for e in doc["timeline"]["trials"] if e["window"] is not None]
    assert {(w["start_epoch"], w["end_epoch"]) for w in spans} == {(1, 1)}


def test_a_peek_before_every_epoch_does_not_take_the_count(run_script) -> None:
    # A peek may take the counted step's batch and drop its iterator without a step: the count is made
    # again before the next window, where the loop's real step is counted.
    run = run_script(small_config(nbatches=6, ntrials=2, nwarmup=1), "--peek", script=SCRIPT)
    assert run.returncode == 0, run
    doc = run.result()
    assert doc["compute"]["flops_per_step"] == MLP_FLOPS and doc["peeks"] >= 1
    assert doc["SYNTHETIC"]["nbatches"] == [6, 6]


def test_without_a_peak_on_the_cpu_mfu_is_absent_and_said(run_script) -> None:
    run = run_script(small_config(nbatches=6, ntrials=2, nwarmup=1), script=SCRIPT)
    assert run.returncode == 0, run
    text = run.summary_line("COMPUTE")
    assert "achieved SYNTHETIC" in text and "MFU not computed: no peak is known for cpu" in text
    assert run.result()["compute"]["SYNTHETIC"]["mfu"] is None
    off = run_script(small_config(nbatches=6, ntrials=1, nwarmup=1, flops=False), script=SCRIPT)
    assert off.returncode == 0, off
    assert "BENCHY::SUMMARY::COMPUTE" not in off.stdout and off.result()["compute"] is None


def test_tokens_per_second_and_padding_of_known_batches(run_script) -> None:
    run = run_script(small_config(nbatches=8, ntrials=2, nwarmup=1, count="tokens"), "--kind", "tokens", script=SCRIPT)
    assert run.returncode == 0, run
    doc = run.result()
    tokens = doc["tokens"]
    assert tokens["source"] == "tokens: the positions of batch['input_ids'], non-padding by batch['attention_mask']"
    for mode in ("IO", "SYNTHETIC", "FULL"):
        # Every batch: 4 samples, 64 positions, 40 tokens (10 a sample), so 37.5 % padding.
        assert tokens[mode]["padding"] == pytest.approx(0.375, abs=1e-12)
        assert tokens[mode]["tokens_per_s"] == pytest.approx(10 * doc[mode]["mean"], rel=1e-9)
        assert all(t["samples"] * 16 == t["tokens"] for t in doc[mode]["tokens"])
    text = run.summary_line("TOKENS")
    assert "padding IO 37.5 %, SYNTHETIC 37.5 % (its one cached batch), FULL 37.5 % of the token positions" in text
    assert "38 % of the token positions in" in run.verdict()
    # Samples stay the unit of the three summary lines.
    assert f"BENCHY::SUMMARY::FULL average trial throughput: {doc['FULL']['mean']:.3f}" in run.stdout


def test_count_tokens_on_batches_without_tokens_warns_and_counts_samples(run_script) -> None:
    run = run_script(small_config(nbatches=6, ntrials=1, nwarmup=1, count="tokens"), script=SCRIPT)
    assert run.returncode == 0, run
    # (float features of (batch, 8) are not token ids)
    assert (
        "BENCHY::WARNING::Message: count: tokens: no tensor of integer token ids of two or more dimensions (batch, "
        "sequence) in a batch of type list"
    ) in run.stdout and "tokens are not counted, samples are" in run.stdout
    doc = run.result()
    assert doc["tokens"] is None and doc["FULL"]["n"] == 1
