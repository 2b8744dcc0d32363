"""A space's data as the training loop sees it: a training split and a validation split.

A space module's `dataset()` returns `(train, val)`, each an `(x, y)` pair of tensors (or numpy
arrays) or a torch `Dataset`. `Splits` checks that shape once, before Ray starts, and answers what
a model builder may want to know about the data (input shape, number of classes, output size)
without the builder having to look at the tensors itself.
"""

import math
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils.data import Dataset
from typing_extensions import TypeIs

from tuner.errors import TunerError

TensorPair = tuple[torch.Tensor, torch.Tensor]
Split = TensorPair | Dataset


def is_tensor_pair(split: Any) -> TypeIs[TensorPair]:
    return isinstance(split, tuple) and len(split) == 2 and all(isinstance(t, torch.Tensor) for t in split)


def split_size(split: Split) -> int:
    """How many samples a split holds. A Dataset's length is not in its type (an IterableDataset has
    none), but the splits tuner trains on are map-style: DataLoader's sampler needs their len()."""
    return len(split[1]) if is_tensor_pair(split) else len(split)  # type: ignore[arg-type]


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    array = np.asarray(value)
    # numpy's default float64 would meet torch's float32 weights as a dtype error in the first layer.
    return torch.from_numpy(array.astype(np.float32) if array.dtype == np.float64 else array)


def _split(value: Any, which: str, source: str) -> Split:
    if isinstance(value, Dataset):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        try:
            x, y = _tensor(value[0]), _tensor(value[1])
        except (TypeError, ValueError) as err:
            raise TunerError(f"{source}: the {which} split's (x, y) are not arrays or tensors ({err})") from None
        if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
            raise TunerError(
                f"{source}: the {which} split's x and y must have one row per sample; got shapes "
                f"{tuple(x.shape)} and {tuple(y.shape)}"
            )
        if len(x) == 0:
            raise TunerError(f"{source}: the {which} split is empty")
        return x, y
    raise TunerError(
        f"{source} must return (train, val), each an (x, y) pair of tensors or a torch Dataset; "
        f"the {which} split is a {type(value).__name__}"
    )


class Splits(NamedTuple):
    """`train, val = splits` unpacks like the pair `dataset()` returned."""

    train: Split
    val: Split

    @classmethod
    def of(cls, value: Any, source: str = "dataset()") -> "Splits":
        """The `(train, val)` a dataset callable returned, checked; `source` names it in errors."""
        if isinstance(value, Splits):
            return value
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise TunerError(
                f"{source} must return (train, val), each an (x, y) pair of tensors or a torch "
                f"Dataset; it returned a {type(value).__name__}"
            )
        return cls(_split(value[0], "train", source), _split(value[1], "val", source))

    def _first(self) -> tuple[Any, Any]:
        if is_tensor_pair(self.train):
            return self.train[0][0], self.train[1][0]
        x, y = self.train[0][:2]
        return x, y

    def _targets(self) -> list[torch.Tensor] | None:
        """Every target of both splits where they are in memory (tensors, or a Dataset's `targets`)."""
        found = []
        for split in self:
            targets = split[1] if is_tensor_pair(split) else getattr(split, "targets", None)
            if targets is None:
                return None
            found.append(torch.as_tensor(targets))
        return found

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one sample's input, e.g. (1, 28, 28) or (13,)."""
        return tuple(torch.as_tensor(self._first()[0]).shape)

    @property
    def classification(self) -> bool:
        """Integer (or bool) targets are class labels; float targets are values to regress."""
        y = torch.as_tensor(self._first()[1])
        return not (torch.is_floating_point(y) or torch.is_complex(y))

    @property
    def num_classes(self) -> int | None:
        """One more than the largest label in either split, for class labels; None otherwise."""
        if not self.classification:
            return None
        targets = self._targets()
        if targets is None:
            return None
        return int(max(int(t.max()) for t in targets)) + 1

    @property
    def output_size(self) -> int:
        """How many outputs a model needs: one per class, else one per target value."""
        if self.classification:
            classes = self.num_classes
            if classes is None:
                raise TunerError(
                    "the number of classes is unknown: give the Dataset a `targets` attribute, "
                    "or build the model yourself"
                )
            return classes
        return math.prod(torch.as_tensor(self._first()[1]).shape)
