"""Sample counting over the batch structures loaders produce."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from benchy.measure.counting import count_samples, describe_rule, make_counter

CASES = [
    (torch.zeros(7, 3), 7),
    ((torch.zeros(5, 3), torch.zeros(5)), 5),
    ([torch.zeros(6, 3), torch.zeros(6)], 6),
    ({"image": torch.zeros(4, 3), "label": torch.zeros(4)}, 4),
    ({"meta": "x", "image": torch.zeros(3, 2)}, 3),
    ([{"data": torch.zeros(8, 2), "label": torch.zeros(8)}], 8),
    ([{"data": torch.zeros(8, 2)}, {"data": torch.zeros(5, 2)}], 13),  # two DALI pipelines
    (((torch.zeros(2, 3), torch.zeros(2)), torch.zeros(2)), 2),
    (np.zeros((9, 2)), 9),
]


@pytest.mark.parametrize("batch, expected", CASES)
def test_count_samples(batch, expected: int) -> None:
    assert count_samples(batch) == expected
    assert make_counter(batch)(batch) == expected


def test_specialised_counter_handles_partial_and_changed_batches() -> None:
    count = make_counter((torch.zeros(8, 2), torch.zeros(8)))
    assert count((torch.zeros(3, 2), torch.zeros(3))) == 3  # short last batch
    assert count({"x": torch.zeros(2, 2)}) == 2  # another structure: general walk
    assert make_counter(torch.zeros(4))(torch.zeros(1)) == 1


def test_fallback_and_uncountable() -> None:
    assert count_samples(["a", "b", "c"]) == 3
    assert count_samples(object(), fallback=16) == 16
    assert count_samples(torch.tensor(1.0), fallback=4) == 4  # a 0-d tensor has no batch dimension
    with pytest.raises(TypeError, match="cannot count the samples in a batch of type object"):
        make_counter(object())


@dataclasses.dataclass
class Batch:
    ids: list
    inputs: torch.Tensor
    labels: torch.Tensor


class Holder:
    def __init__(self, inputs: torch.Tensor) -> None:
        self._cache = torch.zeros(99)
        self.name = "x"
        self.inputs = inputs


RULE_CASES = [
    # (inputs_dict, labels_dict): one batch with different keys, not two devices.
    ([{"pixels": torch.zeros(4, 3), "mask": torch.zeros(4)}, {"label": torch.zeros(4)}], 4),
    (({"x": torch.zeros(6, 3)}, {"y": torch.zeros(6)}), 6),
    # Same keys: one dict per device (DALI output_map), summed.
    (({"data": torch.zeros(3, 2)}, {"data": torch.zeros(3, 2)}), 6),
    (Batch(ids=[1, 2, 3], inputs=torch.zeros(3, 5), labels=torch.zeros(3)), 3),
    (Holder(torch.zeros(7, 2)), 7),  # public attributes first: not the private cache
    ([{"text": "a"}, {"text": "b"}, {"text": "c"}], 3),  # per-sample dicts, no tensor: the length
    ([("a", 0), ("b", 1), ("c", 2)], 3),  # per-sample tuples (collate_fn=lambda x: x): the length
    ((["a", "b", "c"], [0, 1, 2]), 3),  # a tuple of columns: the first column's length
]


@pytest.mark.parametrize("batch, expected", RULE_CASES)
def test_counting_rules(batch, expected: int) -> None:
    assert count_samples(batch) == expected
    assert make_counter(batch)(batch) == expected


def test_specialised_counters_follow_short_batches_of_each_structure() -> None:
    assert make_counter(Batch([0], torch.zeros(8, 2), torch.zeros(8)))(Batch([0], torch.zeros(3, 2), torch.zeros(3))) == 3
    pair = [{"x": torch.zeros(8, 2)}, {"y": torch.zeros(8)}]
    assert make_counter(pair)([{"x": torch.zeros(5, 2)}, {"y": torch.zeros(5)}]) == 5
    devices = [{"data": torch.zeros(8, 2)}, {"data": torch.zeros(8, 2)}]
    assert make_counter(devices)([{"data": torch.zeros(8, 2)}, {"data": torch.zeros(2, 2)}]) == 10


def test_fallback_to_batch_size_is_said_once() -> None:
    said = []
    count = make_counter(object(), 16, said.append)
    assert count(object()) == 16 and count(object()) == 16
    assert len(said) == 1 and "counted as batch_size = 16 samples" in said[0]
    assert describe_rule(object(), 16) == "batch_size 16 (no tensor in the batch)"
    assert describe_rule((torch.zeros(2), torch.zeros(2))) == "leading dimension of batch[0]"
