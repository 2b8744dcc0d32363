"""MNIST, FashionMNIST and CIFAR-10 read from a local root by torchvision's own loaders (download=False).

Images stay uint8 in memory (4x smaller than floats, also in Ray's object store); the shipped models
scale and standardise them in their first layer.
"""

from pathlib import Path

import numpy as np
import torch
from torchvision import datasets

from tuner.data.local_root import CIFAR10_FILES, CIFAR10_FOLDER, FILES, require, resolve_root
from tuner.data.splits import Splits
from tuner.errors import TunerError


class _LocalCIFAR10(datasets.CIFAR10):
    # torchvision pins the md5 of the official download; a well-formed local copy (a subset too) is
    # accepted here, and a file that does not parse is reported by `_read` instead.
    train_list = [[name, None] for name, _ in datasets.CIFAR10.train_list]
    test_list = [[name, None] for name, _ in datasets.CIFAR10.test_list]
    meta = {**datasets.CIFAR10.meta, "md5": None}


def _read(cls: type, root: Path, train: bool, where: Path):
    try:
        return cls(root=str(root), train=train, download=False)
    except Exception as err:  # torchvision raises a mix of RuntimeError/ValueError/pickle errors
        raise TunerError(
            f"dataset files under {where} could not be read ({type(err).__name__}: {err}); "
            "replace them with an intact copy"
        ) from None


def _idx(cls: type, name: str, data_dir: str | None) -> Splits:
    root = resolve_root(data_dir)
    folder, files = FILES[name]
    require(root, folder, files)
    train = _read(cls, root, True, root / folder)
    val = _read(cls, root, False, root / folder)
    return Splits(
        (train.data.unsqueeze(1).contiguous(), train.targets.long()),
        (val.data.unsqueeze(1).contiguous(), val.targets.long()),
    )


def mnist(*, data_dir: str | None = None) -> Splits:
    """uint8 images (N, 1, 28, 28) and int64 labels from DIR/MNIST/raw (DIR: data_dir, else TUNER_DATA_DIR)."""
    return _idx(datasets.MNIST, "mnist", data_dir)


def fashion_mnist(*, data_dir: str | None = None) -> Splits:
    """As `mnist`, from DIR/FashionMNIST/raw."""
    return _idx(datasets.FashionMNIST, "fashion_mnist", data_dir)


def cifar10(*, data_dir: str | None = None) -> Splits:
    """uint8 images (N, 3, 32, 32) and int64 labels from DIR/cifar-10-batches-py."""
    root = resolve_root(data_dir)
    require(root, CIFAR10_FOLDER, CIFAR10_FILES)
    train = _read(_LocalCIFAR10, root, True, root / CIFAR10_FOLDER)
    val = _read(_LocalCIFAR10, root, False, root / CIFAR10_FOLDER)

    def chw(images: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))

    return Splits(
        (chw(train.data), torch.tensor(train.targets).long()), (chw(val.data), torch.tensor(val.targets).long())
    )
