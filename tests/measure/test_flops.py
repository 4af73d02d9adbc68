"""The FLOPs of a real step (torch's FlopCounterMode, counted by hand here), the counted extra step,
the token tally and the energy counters."""

from __future__ import annotations

import os
from typing import Any, List

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from benchy.measure.counting import TokenTally, make_counter
from benchy.measure.flops import StepCounter
from benchy.measure.system import NO_ENERGY, Rapl, SystemSampler


def counted(step: Any, samples: int = 1) -> Any:
    counter = StepCounter(samples, "SYNTHETIC_1")
    counter.enter()
    try:
        step()
    finally:
        counter.leave()
    assert counter.count is not None
    return counter.count


def mlp_step(batch: int, x_grad: bool) -> int:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(batch, 8, requires_grad=x_grad)
    found = counted(lambda: F.cross_entropy(model(x), torch.zeros(batch, dtype=torch.long)).backward(), batch)
    return found


@pytest.mark.parametrize("x_grad", [False, True])
def test_a_two_layer_mlp_forward_and_backward_exactly(x_grad: bool) -> None:
    b = 5
    forward = 2 * b * 8 * 16 + 2 * b * 16 * 4  # two matmuls (the bias adds are not FLOPs to the counter)
    # Backward: each layer's weight gradient (the same size as its forward), the hidden layer's input
    # gradient, and the input's only when it needs one.
    backward = (2 * b * 16 * 4) + (2 * b * 4 * 16) + (2 * b * 8 * 16) + (2 * b * 16 * 8 if x_grad else 0)
    found = mlp_step(b, x_grad)
    assert found.total == forward + backward
    assert found.by_dtype == {"float32": forward + backward}
    assert found.device_type == "cpu" and found.device.startswith("cpu") and found.samples == b
    assert found.unknown == ()


@pytest.mark.parametrize("x_grad", [False, True])
def test_a_small_conv_net_forward_and_backward_exactly(x_grad: bool) -> None:
    torch.manual_seed(0)
    conv, head = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4 * 8 * 8, 2)
    x = torch.randn(2, 3, 8, 8, requires_grad=x_grad)

    def step() -> None:
        F.cross_entropy(head(F.relu(conv(x)).flatten(1)), torch.zeros(2, dtype=torch.long)).backward()

    found = counted(step, 2)
    conv_fwd = 2 * (2 * 4 * 8 * 8) * (3 * 3 * 3)  # 2 x output elements x (in channels x kernel)
    head_fwd = 2 * 2 * 256 * 2
    backward = head_fwd * 2 + conv_fwd * (2 if x_grad else 1)  # head: weight + input grads; conv: weight (+ input)
    assert found.total == conv_fwd + head_fwd + backward
    assert found.by_op["aten.convolution"] == conv_fwd and found.by_op["aten.convolution_backward"] == conv_fwd * (
        2 if x_grad else 1
    )


def test_bfloat16_flops_are_counted_as_bfloat16() -> None:
    a, b = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(8, 3, dtype=torch.bfloat16)
    found = counted(lambda: (a @ b, torch.randn(2, 2) @ torch.randn(2, 2)))
    assert found.by_dtype == {"bfloat16": 2 * 4 * 8 * 3, "float32": 2 * 2 * 2 * 2}


def test_cpu_attention_is_counted_with_torchs_formula() -> None:
    q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
    found = counted(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())
    forward = 2 * (2 * 2 * 4 * 16 * 16 * 8)  # q @ k^T and the weights @ v: 2 FLOPs a multiply-add each
    assert found.total == forward + int(2.5 * forward)  # torch's backward formula: 2.5x the forward
    assert found.unknown == ()


def test_a_compiled_step_is_counted_or_said() -> None:
    model = nn.Linear(8, 4)
    x = torch.randn(3, 8)
    try:
        compiled = torch.compile(model, backend="eager")
        compiled(x)
    except Exception as err:  # pragma: no cover - a torch without dynamo here
        pytest.skip(f"torch.compile unavailable: {err}")
    found = counted(lambda: compiled(x).sum().backward())
    # The compiled graph's ops run under the counter: the forward matmul and the weight's gradient
    # (x needs none), 2 * 3 * 8 * 4 FLOPs each, exactly as the uncompiled step counts them.
    plain = counted(lambda: model(x).sum().backward())
    assert found.total == plain.total == 2 * (2 * 3 * 8 * 4) and found.skipped is None


def test_an_unknown_heavy_op_is_named() -> None:
    lib = torch.library.Library("benchy_test", "DEF")
    lib.define("fused_mm(Tensor a, Tensor b) -> Tensor")
    lib.impl("fused_mm", lambda a, b: a @ b, "CompositeExplicitAutograd")
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    found = counted(lambda: torch.ops.benchy_test.fused_mm(a, b))
    assert "benchy_test.fused_mm" in found.unknown and found.total == 0


# --- tokens -------------------------------------------------------------------------------------------


def padded(lengths: List[int], width: int) -> Any:
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.arange(1, n + 1)
        mask[i, :n] = 1
    return ids, mask


@pytest.mark.parametrize("layout", ["hf dict", "tuple", "named", "no mask"])
def test_tokens_of_made_up_batches_are_exact(layout: str) -> None:
    batches = [padded([3, 5, 8, 2], 8), padded([16, 1, 4, 9], 16), padded([7, 7, 7, 7], 7)]

    def make(ids: torch.Tensor, mask: torch.Tensor) -> Any:
        if layout == "hf dict":
            return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}
        if layout == "tuple":
            return (ids, mask, ids.masked_fill(mask == 0, -100))
        if layout == "named":
            return {"tokens": ids, "valid": mask.bool(), "y": torch.zeros(len(ids))}
        return {"input_ids": ids}

    made = [make(*b) for b in batches]
    keys = dict(token_key="tokens", mask_key="valid") if layout == "named" else {}
    tally = TokenTally(make_counter(made[0]), made[0], budget=float("inf"), **keys)
    assert sum(tally.count(b) for b in made) == 12  # it still counts samples
    found = tally.take()
    assert (found.samples, found.tokens, found.batches, found.sampled) == (12, 4 * 8 + 4 * 16 + 4 * 7, 3, 3)
    real = (3 + 5 + 8 + 2) + (16 + 1 + 4 + 9) + 28
    assert found.real == (found.tokens if layout == "no mask" else real)
    assert found.masked is (layout != "no mask")
    assert tally.take().batches == 0  # taken: a fresh start
    if layout == "tuple":
        assert tally.source == "tokens: the positions of batch[0], non-padding by batch[1]"


def test_the_mask_is_summed_on_a_sample_of_batches_when_its_sum_is_dear() -> None:
    ids, mask = padded([3, 5], 8)
    batch = {"input_ids": ids, "attention_mask": mask}
    times = iter([0.0, 3.5e-6] * 5)  # each timed sum takes 3.5 us against a budget of 1 us
    tally = TokenTally(make_counter(batch), batch, clock=lambda: next(times))
    assert tally.every == 4
    for _ in range(10):
        tally.count(batch)
    found = tally.take()
    assert (found.batches, found.sampled, found.every) == (10, 3, 4)  # batches 1, 5 and 9
    assert found.tokens == 160 and found.sampled_tokens == 48 and found.real == 24


def test_token_batches_that_cannot_be_read_say_why() -> None:
    with pytest.raises(TypeError, match=r"no tensor of integer token ids of two or more dimensions .* global\.token_key"):
        TokenTally(make_counter((torch.zeros(4), torch.zeros(4))), (torch.zeros(4), torch.zeros(4)))
    with pytest.raises(TypeError, match=r"no tensor of integer token ids"):  # float features are not token ids
        TokenTally(make_counter((torch.zeros(4, 8), torch.zeros(4))), (torch.zeros(4, 8), torch.zeros(4)))
    batch = {"input_ids": torch.zeros(2, 3)}
    with pytest.raises(TypeError, match=r"token_key 'ids' is not in the batch"):
        TokenTally(make_counter(batch), batch, token_key="ids")
    with pytest.raises(TypeError, match=r"mask_key 'mask' is not in the batch"):
        TokenTally(make_counter(batch), batch, mask_key="mask")


# --- energy -------------------------------------------------------------------------------------------


def write_zone(root: Any, name: str, energy: int, wrap: int = 2**32) -> None:
    zone = root / name
    zone.mkdir(exist_ok=True)
    (zone / "energy_uj").write_text(f"{energy}\n")
    (zone / "max_energy_range_uj").write_text(f"{wrap}\n")


def test_rapl_packages_are_read_and_wrap(tmp_path: Any) -> None:
    write_zone(tmp_path, "intel-rapl:0", 1_000_000)
    write_zone(tmp_path, "intel-rapl:1", 4_000_000_000, wrap=4_294_967_296)
    write_zone(tmp_path, "intel-rapl:0:0", 5)  # a sub-zone: inside its package's count
    rapl = Rapl.find(str(tmp_path))
    assert rapl is not None and len(rapl.zones) == 2
    before = rapl.read()
    write_zone(tmp_path, "intel-rapl:0", 3_500_000)
    write_zone(tmp_path, "intel-rapl:1", 5_000_000, wrap=4_294_967_296)  # wrapped past 2^32
    after = rapl.read()
    assert before is not None and after is not None
    assert rapl.joules(before, after) == pytest.approx(2.5 + (5_000_000 + 4_294_967_296 - 4_000_000_000) / 1e6)
    assert Rapl.find(str(tmp_path / "absent")) is None
    if os.geteuid() != 0:  # an unreadable counter (the usual case for a user) is no zone
        (tmp_path / "intel-rapl:0" / "energy_uj").chmod(0)
        found = Rapl.find(str(tmp_path))
        assert found is not None and len(found.zones) == 1


class FakeGpu:
    def __init__(self, energy: List[Any], power: float = 250.0) -> None:
        self.energy, self.power = list(energy), power

    def read(self) -> Any:
        return {"gpu_util": 0.5, "gpu_power_w": self.power}

    def energy_mj(self) -> Any:
        return self.energy.pop(0)


def test_the_sampler_reads_energy_counters_around_a_trial(tmp_path: Any) -> None:
    write_zone(tmp_path, "intel-rapl:0", 0)
    now = [0.0]
    sampler = SystemSampler(
        1.0, clock=lambda: now[0], gpu=lambda: FakeGpu([1_000_000, 1_450_000]), rapl=lambda: Rapl.find(str(tmp_path))
    )
    sampler.start()
    write_zone(tmp_path, "intel-rapl:0", 30_000_000)
    now[0] = 2.0
    found = sampler.stop()
    assert found is not None
    assert found.gpu_energy_j == pytest.approx(450.0) and found.gpu_energy_source == "GPU: NVML total-energy counter"
    assert found.cpu_energy_j == pytest.approx(30.0) and "RAPL" in (found.cpu_energy_source or "")


def test_without_an_energy_counter_the_gpus_power_is_integrated() -> None:
    now = [0.0]
    sampler = SystemSampler(1.0, clock=lambda: now[0], gpu=lambda: FakeGpu([None, None], power=200.0), rapl=lambda: None)
    sampler.start()
    now[0] = 1.5
    found = sampler.stop()
    assert found is not None and found.gpu_energy_j == pytest.approx(300.0)
    assert "power readings integrated" in (found.gpu_energy_source or "")
    bare = SystemSampler(1.0, gpu=lambda: None, rapl=lambda: None)
    bare.start()
    found = bare.stop()
    assert found is not None and found.energy_missing == NO_ENERGY and found.gpu_energy_j is None


@pytest.mark.parametrize(
    "pattern",
    [
        [1, 1, 1, 1],  # a loop that runs a step between two asks
        [0, 2, 0, 2, 0, 2],  # one that takes 2 batches at once (a gradient accumulation), then runs their steps
        [2, 0, 2, 0, 2, 0],  # the same, counted from the other phase
        [0, 0, 3, 0, 0, 3, 0, 0, 3],  # 3 at once
        [2, 2, 2],  # two models a step (a GAN's generator and discriminator): their FLOPs are the step's
    ],
    ids=["one a step", "two at once", "two at once, other phase", "three at once", "two models"],
)
def test_the_counter_finds_the_loops_period_between_its_asks(pattern: List[int]) -> None:
    torch.manual_seed(0)
    model = nn.Linear(8, 4)
    x = torch.randn(3, 8)
    per = counted(lambda: model(x).sum().backward(), 3).total
    models = 2 if pattern == [2, 2, 2] else 1
    counter = StepCounter(3, "FLOPS_1")
    counter.enter()
    for runs in pattern:  # between two asks, this many steps run
        for _ in range(runs):
            model(x).sum().backward()
        counter.mark()
        if counter.settled:
            break
    counter.leave()
    assert counter.count is not None and counter.count.total == per * models
    assert counter.intervals <= len(pattern)


def test_a_step_the_counter_sees_nothing_of_settles_on_zero() -> None:
    counter = StepCounter(3, "FLOPS_1")
    counter.enter()
    for _ in range(6):
        counter.mark()
        if counter.settled:
            break
    counter.leave()
    assert counter.intervals == 4 and counter.count is not None and counter.count.total == 0
