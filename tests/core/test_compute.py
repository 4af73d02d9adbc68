"""What a step costs, read from made-up counts and trials: peaks, MFU, tokens and padding, energy (pure)."""

from __future__ import annotations

import pytest
from helpers import trial_result

from benchy import Mode, RunResults
from benchy.core.claims import Advice, Help, Padding
from benchy.core.compute import (
    TokenReport,
    compute_report,
    energy_report,
    padding_waste,
    peak_for,
    token_report,
)
from benchy.core.config import ConfigError
from benchy.core.outcomes import Reason, Why
from benchy.core.peaks import known_accelerator, parse_peak
from benchy.core.results import FlopCount, SystemFigures, TokenCount
from benchy.core.verdict import read
from benchy.results.configfile import load_config
from benchy.results.schema import compute_block
from benchy.results.text.reports import compute as compute_text
from benchy.results.text.reports import energy as energy_text
from benchy.results.text.reports import tokens as tokens_lines
from benchy.results.text.verdict import verdict_line


def tokens_text(report: TokenReport) -> str:
    """The TOKENS lines' texts in one."""
    return "; ".join(tokens_lines(report))


@pytest.mark.parametrize(
    "name, row",
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA GH200 480GB", "NVIDIA H100 SXM"),
        ("NVIDIA H200", "NVIDIA H200 SXM"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100"),
        ("NVIDIA A10G", "NVIDIA A10"),
        ("NVIDIA L4", "NVIDIA L4"),
        ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "NVIDIA V100 PCIe"),
        ("Tesla T4", "NVIDIA T4"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ],
)
def test_the_peak_table_matches_device_names(name: str, row: str) -> None:
    found = known_accelerator(name)
    assert found is not None and found.name == row


def test_unknown_devices_have_no_row() -> None:
    # "L40S" is not an L4, "A1000" not an A10 or A100.
    assert known_accelerator("NVIDIA L40S") is None
    assert known_accelerator("NVIDIA RTX A1000") is None
    assert known_accelerator("cpu (Intel(R) Xeon(R))") is None
    assert known_accelerator("NVIDIA H800") is None  # H100's tensor figures but not its float64: no row


def test_the_table_holds_dense_figures() -> None:
    # The datasheets' "with sparsity" figures are twice these: a mix-up doubles MFU.
    h100 = known_accelerator("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.peaks["bfloat16"] == pytest.approx(989.4e12) and "dense" in h100.source
    a100 = known_accelerator("NVIDIA A100-SXM4-40GB")
    assert a100 is not None and a100.peaks["bfloat16"] == pytest.approx(312e12) and a100.peaks["tf32"] == 156e12


def count(
    total: int = 1_000_000, samples: int = 10, device: str = "NVIDIA H100 80GB HBM3", device_type: str = "cuda", **by_dtype: int
) -> FlopCount:
    return FlopCount(
        total=total,
        samples=samples,
        device=device,
        device_type=device_type,
        by_dtype=by_dtype or {"bfloat16": total},
        label="SYNTHETIC_1",
    )


def test_peak_for_one_dtype_names_its_source() -> None:
    peak, why = peak_for(count(), None)
    assert why is None and peak is not None
    assert peak.flops == pytest.approx(989.4e12)
    assert peak.words().startswith("bfloat16: NVIDIA H100 SXM, NVIDIA H100 Tensor Core GPU datasheet (dense")


def test_a_mix_of_dtypes_is_weighed_by_the_time_each_takes() -> None:
    # 3/4 of the FLOPs in bfloat16 (989.4 T), 1/4 in float32 (67 T): time = 0.75/989.4 + 0.25/67 (per T).
    c = count(4_000_000, bfloat16=3_000_000, float32=1_000_000)
    peak, _ = peak_for(c, None)
    assert peak is not None
    assert peak.flops == pytest.approx(4e6 / (3e6 / 989.4e12 + 1e6 / 67e12))
    # tf32: float32 matmuls that torch lets use TF32 (the count says so) take the TF32 peak.
    peak, _ = peak_for(count(1000, tf32=1000), None)
    assert peak is not None and peak.flops == pytest.approx(494.7e12)


def test_a_configured_peak_wins_and_a_mapping_falls_back_on_the_table() -> None:
    peak, _ = peak_for(count(), 100e12)
    assert peak is not None and peak.flops == 100e12 and "global.peak_flops" in peak.words()
    c = count(2000, bfloat16=1000, float32=1000)
    peak, _ = peak_for(c, {"float32": 50e12})  # bfloat16 from the table
    assert peak is not None and peak.flops == pytest.approx(2000 / (1000 / 989.4e12 + 1000 / 50e12))
    assert peak.words() == (
        "a mix, by the time each takes: bfloat16 989.4 TFLOP/s: NVIDIA H100 SXM, NVIDIA H100 Tensor "
        "Core GPU datasheet (dense: the 'with sparsity' figures halved); float32 50 TFLOP/s: "
        "global.peak_flops.float32"
    )


def test_no_peak_says_why() -> None:
    cpu = count(device="cpu (Intel(R) Xeon(R))", device_type="cpu", float32=1_000_000)
    peak, why = peak_for(cpu, None)
    assert peak is None and why is not None and "no peak is known for cpu" in why.words() and "global.peak_flops" in why.words()
    peak, _ = peak_for(cpu, 294.4e9)
    assert peak is not None and peak.flops == 294.4e9
    v100 = count(device="Tesla V100-SXM2-16GB")  # bfloat16: a V100 has none
    peak, why = peak_for(v100, None)
    assert peak is None and why is not None and "no bfloat16 figure for NVIDIA V100 SXM2" in why.words()


def results_with(syn: list, full: list = (), **extra) -> RunResults:  # type: ignore[assignment]
    r = RunResults()
    for k, v in enumerate(syn, 1):
        r = r.add_trial(trial_result(Mode.SYNTHETIC, k, samples=100, seconds=100 / v, **extra))
    for k, v in enumerate(full, 1):
        r = r.add_trial(trial_result(Mode.FULL, k, samples=100, seconds=100 / v, **extra))
    return r


def test_achieved_flops_and_mfu_are_exact() -> None:
    # 1e12 FLOPs a step of 10 samples: 1e11 a sample. SYNTHETIC 3.0 samples/s mean (2, 3, 4).
    r = results_with([2.0, 3.0, 4.0], [1.0, 1.0])
    report = compute_report(count(total=10**12, samples=10), r, world=2, configured=None)
    assert report is not None and report.per_sample == 1e11
    syn = report.modes[0]
    assert syn.mode is Mode.SYNTHETIC and syn.flops == pytest.approx(3e11)
    assert syn.mfu == pytest.approx(3e11 / (2 * 989.4e12))  # two devices
    est = r.estimate(Mode.SYNTHETIC)
    assert syn.half_width == pytest.approx(1e11 * est.half_width)
    assert report.modes[1].flops == pytest.approx(1e11)
    text = "; ".join(compute_text(report))
    assert "1 TFLOP a step, 100 GFLOP a sample" in text
    assert "2 ranks together" in text and "a device" in text and "of a peak of 989.4 TFLOP/s" in text
    block = compute_block(report).SYNTHETIC
    assert block is not None and block.mfu == pytest.approx(syn.mfu)


def test_no_flops_seen_is_said_not_guessed() -> None:
    r = results_with([2.0, 3.0])
    seen_nothing = FlopCount(total=0, samples=10, device="cpu", unknown=("aten.my_fused_attention",))
    report = compute_report(seen_nothing, r, 1, None)
    assert report is not None and not report.modes
    text = "; ".join(compute_text(report))
    assert "saw no FLOPs" in text and "aten.my_fused_attention" in text and "not guessed" in text
    skipped = compute_report(FlopCount(skipped=Reason(Why.NO_SYNTHETIC)), r, 1, None)
    assert skipped is not None and compute_text(skipped)[0].startswith("FLOPs not counted: SYNTHETIC did not run: ")
    cpu = compute_report(count(device="cpu (x)", device_type="cpu", float32=10), results_with([2.0, 3.0]), 1, None)
    assert cpu is not None and "MFU not computed: no peak is known for cpu (x)" in compute_text(cpu)[-1]
    assert cpu.modes[0].mfu is None and cpu.modes[0].flops > 0


def test_the_verdict_gives_mfu_where_compute_limits() -> None:
    r = results_with([100.0, 101.0, 99.0], [98.0, 99.0])
    for k, v in enumerate([300.0, 301.0, 299.0], 1):
        r = r.add_trial(trial_result(Mode.IO, k, samples=100, seconds=100 / v))
    # 3.094e12 FLOPs a sample x 100 samples/s = 309.4 TFLOP/s: 31 % of 989.4.
    r = r.changed(flops=count(total=int(3.094e13), samples=10))
    reading = read(r, list(Mode), 0.95, 0, None)
    text = verdict_line(reading)
    assert text is not None and text.startswith("compute limits training")
    assert "the step runs at 31 % of the peak (989.4 TFLOP/s; bfloat16: NVIDIA H100 SXM" in text
    assert "the step has headroom" in text
    assert reading.claims[-1] == Advice(Help.LARGER_BATCH)
    assert "most likely to help: a larger batch or compiled code (torch.compile)" in text
    assert reading.compute is not None
    # float32 FLOPs on an accelerator: mixed precision first.
    r = r.changed(flops=count(total=int(3.094e11), samples=10, float32=int(3.094e11)))  # 4.6 % of the float32 peak
    f32 = read(r, list(Mode), 0.95, 0, None).claims[-1]
    assert f32 == Advice(Help.MIXED_PRECISION) and f32.words().startswith("most likely to help: mixed precision")
    # Near the peak: more throughput needs fewer FLOPs or more devices.
    r = r.changed(flops=count(total=int(0.8 * 9.894e13), samples=10))
    near = verdict_line(read(r, list(Mode), 0.95, 0, None))
    assert near is not None and "near what the accelerator does" in near and "or more devices: the step is near the peak" in near
    # Loading limits: MFU is not the story.
    io_limited = results_with([300.0, 301.0, 299.0])
    for k, v in enumerate([100.0, 101.0, 99.0], 1):
        io_limited = io_limited.add_trial(trial_result(Mode.IO, k, samples=100, seconds=100 / v))
    io_limited = io_limited.changed(flops=count(total=int(3.094e13), samples=10))
    text = verdict_line(read(io_limited, [Mode.IO, Mode.SYNTHETIC], 0.95, 0, None))
    assert text is not None and "of the peak" not in text


def tokens(samples: int, per_sample: int, real_per_sample: int, every: int = 1) -> TokenCount:
    total, real = samples * per_sample, samples * real_per_sample
    return TokenCount(
        samples=samples,
        tokens=total,
        sampled_tokens=total,
        real=real,
        batches=samples // 4,
        sampled=samples // 4,
        every=every,
        masked=True,
    )


def test_tokens_per_second_and_padding_are_exact() -> None:
    r = RunResults()
    # FULL: 100 samples in 2 s, 64 positions a sample of which 48 are tokens: 2400 tokens/s, 25 % padding.
    r = r.add_trial(trial_result(Mode.FULL, 1, samples=100, seconds=2.0, tokens=tokens(100, 64, 48)))
    r = r.add_trial(trial_result(Mode.FULL, 2, samples=100, seconds=2.0, tokens=tokens(100, 64, 48)))
    r = r.add_trial(trial_result(Mode.SYNTHETIC, 1, samples=100, seconds=1.0, tokens=tokens(100, 64, 64)))
    report = token_report(r, [Mode.SYNTHETIC, Mode.FULL], "tokens: batch['input_ids']")
    assert report is not None
    full, syn = report.FULL, report.SYNTHETIC
    assert report.IO is None and [mode for mode, _ in report.modes] == [Mode.SYNTHETIC, Mode.FULL]
    assert full is not None and full.tokens_per_s == pytest.approx(2400.0) and full.padding == pytest.approx(0.25)
    assert syn is not None and syn.tokens_per_s == pytest.approx(6400.0) and syn.padding == 0.0
    text = tokens_text(report)
    assert "FULL 2400.0 +/- 0.0" in text and "padding SYNTHETIC 0.0 % (its one cached batch), FULL 25.0 %" in text
    waste = padding_waste(report)
    assert waste is not None and waste[0] is Mode.FULL and waste[1] == pytest.approx(0.25)
    assert Padding("FULL", waste[1]).words().startswith("25 % of the token positions in FULL are padding")


def test_sampled_masks_are_said_and_little_padding_is_not() -> None:
    r = RunResults()
    r = r.add_trial(trial_result(Mode.FULL, 1, samples=100, seconds=2.0, tokens=tokens(100, 64, 60, every=4)))
    report = token_report(r, [Mode.FULL], "x")
    assert report is not None and "summed on 1 in 4 batches" in tokens_text(report) and "estimates" in tokens_text(report)
    assert padding_waste(report) is None  # 6 % is no waste worth a verdict


def test_padding_is_the_advice_where_compute_limits() -> None:
    r = results_with([100.0, 101.0, 99.0], [98.0, 99.0], tokens=tokens(100, 64, 32))
    for k, v in enumerate([300.0, 301.0, 299.0], 1):
        r = r.add_trial(trial_result(Mode.IO, k, samples=100, seconds=100 / v, tokens=tokens(100, 64, 32)))
    reading = read(r, list(Mode), 0.95, 0, None, tokens_source="t")
    text = verdict_line(reading)
    assert text is not None and "50 % of the token positions in IO are padding" in text
    assert reading.claims[-1] == Advice(Help.PADDING)
    assert text.endswith(f"most likely to help: {Help.PADDING.words}: {Help.PADDING.grounds}")


def test_energy_per_trial_and_per_sample() -> None:
    r = RunResults()
    system = {
        "seconds": 1.0,
        "gpu_energy_j": 300.0,
        "gpu_energy_source": "GPU: NVML total-energy counter",
        "cpu_energy_j": 100.0,
        "cpu_energy_source": "CPU: RAPL package counter",
    }
    r = r.add_trial(trial_result(Mode.FULL, 1, samples=200, seconds=1.0, system=SystemFigures(**system)))
    r = r.add_trial(
        trial_result(Mode.FULL, 2, samples=200, seconds=1.0, system=SystemFigures(**dict(system, gpu_energy_j=500.0)))
    )
    report = energy_report(r, [Mode.FULL])
    assert report is not None and report.modes[0][1].joules == {"gpu_energy_j": 400.0, "cpu_energy_j": 100.0}
    assert report.modes[0][1].per_sample == pytest.approx((300 + 500 + 200) / 400)
    assert "FULL 500 J a trial (GPU 400, CPU package 100), 2.5 J a sample" in energy_text(report)
    none = RunResults()
    none = none.add_trial(trial_result(Mode.FULL, 1, system=SystemFigures(1.0, energy_missing="no counter here")))
    missing = energy_report(none, [Mode.FULL])
    assert missing is not None and energy_text(missing) == "not available here: no counter here"
    assert energy_report(RunResults(), [Mode.FULL]) is None  # system metrics off: no line at all
    partial = RunResults()  # one trial with a reading, one without: no figure, and why
    partial = partial.add_trial(trial_result(Mode.FULL, 1, system=SystemFigures(**system)))
    partial = partial.add_trial(trial_result(Mode.FULL, 2, system=SystemFigures(1.0)))
    found = energy_report(partial, [Mode.FULL])
    assert found is not None and not found.modes and "no energy reading in every counted trial" in energy_text(found)


def test_peak_flops_config() -> None:
    assert parse_peak("989.4 TFLOP/s") == (pytest.approx(989.4e12), None)
    assert parse_peak("294.4e9")[0] == pytest.approx(294.4e9)
    assert parse_peak({"bf16": 1e15, "float32": "67T"})[0] == {"bfloat16": 1e15, "float32": pytest.approx(67e12)}
    cfg = load_config(overrides={"global": {"peak_flops": "1.5 PFLOPS", "count": "tokens", "mask_key": 1}}, environ={})
    assert cfg.general.peak_flops == pytest.approx(1.5e15) and cfg.general.count == "tokens"
    for bad in ("fast", -1, 0, True, {"int8": 1e12}, {"float32": "x"}, {}):
        with pytest.raises(ConfigError, match=r"global\.peak_flops: got .*; expected null, a positive number"):
            load_config(overrides={"global": {"peak_flops": bad}}, environ={})
    with pytest.raises(ConfigError, match=r"global\.count: got 'words' \(str\); expected one of 'samples', 'tokens'"):
        load_config(overrides={"global": {"count": "words"}}, environ={})
    with pytest.raises(ConfigError, match=r"global\.mask_key: got -1"):
        load_config(overrides={"global": {"mask_key": -1}}, environ={})


def test_benchy_count_on_the_command_line() -> None:
    import argparse

    import benchy
    from benchy.results.configfile import resolve_config

    parser = benchy.add_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--enable_benchy", "--benchy_count", "tokens"])
    assert args.benchy_count == "tokens"
    with pytest.raises(SystemExit):
        parser.parse_args(["--benchy_count", "words"])
    assert resolve_config({"global": {"count": "samples"}}, count="tokens").general.count == "tokens"
    assert resolve_config(load_config(environ={}), count="tokens").general.count == "tokens"
    with pytest.raises(ConfigError, match=r"--benchy_count: got 'words'"):
        resolve_config(load_config(environ={}), count="words")
