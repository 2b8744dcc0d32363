"""What a space's `dataset()` may return, and what `Splits` tells a model builder about it."""

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from tuner.data.splits import Splits
from tuner.errors import TunerError


def test_numpy_arrays_become_tensors_and_float64_becomes_float32():
    x, y = np.random.default_rng(0).normal(size=(10, 4)), np.arange(10) % 3
    splits = Splits.of(((x, y), (x[:4], y[:4])))
    assert splits.train[0].dtype == torch.float32 and splits.train[1].dtype == torch.int64
    assert (splits.input_shape, splits.classification, splits.num_classes, splits.output_size) == ((4,), True, 3, 3)


def test_float_targets_are_a_regression_with_one_output_per_value():
    x = torch.zeros(6, 2)
    assert Splits.of(((x, torch.zeros(6)), (x, torch.zeros(6)))).output_size == 1
    splits = Splits.of(((x, torch.zeros(6, 3)), (x, torch.zeros(6, 3))))
    assert (splits.classification, splits.num_classes, splits.output_size) == (False, None, 3)


def test_labels_of_both_splits_count_and_datasets_count_by_their_targets():
    x = torch.zeros(4, 1)
    assert Splits.of(((x, torch.tensor([0, 1, 1, 0])), (x, torch.tensor([0, 4, 1, 0])))).num_classes == 5
    dataset = TensorDataset(x, torch.tensor([0, 1, 2, 0]))
    assert Splits.of((dataset, dataset)).num_classes is None  # no `targets`: unknown
    dataset.targets = torch.tensor([0, 1, 2, 0])
    assert Splits.of((dataset, dataset)).num_classes == 3 and Splits.of((dataset, dataset)).input_shape == (1,)


@pytest.mark.parametrize(
    "value,message",
    [
        (
            None,
            "must return \\(train, val\\), each an \\(x, y\\) pair of tensors or a torch Dataset; "
            "it returned a NoneType",
        ),
        ((1, 2, 3), "it returned a tuple"),
        (
            ((torch.zeros(3, 2), torch.zeros(4)), (torch.zeros(1, 2), torch.zeros(1))),
            "the train split's x and y must have one row per sample; got shapes \\(3, 2\\) and \\(4,\\)",
        ),
        (((torch.zeros(0, 2), torch.zeros(0)), (torch.zeros(1, 2), torch.zeros(1))), "the train split is empty"),
        (((torch.zeros(2, 2), torch.zeros(2)), "val.csv"), "the val split is a str"),
        (
            ((["a", object()], [1, 2]), (torch.zeros(1, 2), torch.zeros(1))),
            "the train split's \\(x, y\\) are not arrays",
        ),
    ],
)
def test_malformed_returns_are_one_clear_line(value, message):
    with pytest.raises(TunerError, match=message):
        Splits.of(value)
