"""Sample counting over the batch structures loaders produce."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchy._batch import count_samples, make_counter

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
    assert count((torch.zeros(3, 2), torch.zeros(3))) == 3          # short last batch
    assert count({"x": torch.zeros(2, 2)}) == 2                     # another structure: general walk
    assert make_counter(torch.zeros(4))(torch.zeros(1)) == 1


def test_fallback_and_uncountable() -> None:
    assert count_samples(["a", "b", "c"]) == 3
    assert count_samples(object(), fallback=16) == 16
    assert count_samples(torch.tensor(1.0), fallback=4) == 4        # a 0-d tensor has no batch dimension
    with pytest.raises(TypeError, match="cannot count the samples in a batch of type object"):
        make_counter(object())
