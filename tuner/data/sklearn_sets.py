"""scikit-learn's bundled 8x8 handwritten digits: 1,797 real images, no download.

The images are read from the file scikit-learn ships, and the split is scikit-learn's own
train_test_split, computed once per scikit-learn version and kept in the user's cache: importing
scikit-learn (scipy with it) costs more than a small run's data and smoke step together, and every run
of a digits space paid it in the driver before a trial could start."""

import gzip
import importlib.metadata
import importlib.util
import os
from pathlib import Path

import numpy as np
import torch

from tuner.data.splits import Splits

# The split is fixed, not seeded per trial, so every trial is scored on the same validation images.
SPLIT_SEED = 0
VALIDATION_SHARE = 0.2


def digits() -> Splits:
    """(x, y) pairs of float images (N, 1, 8, 8) in [0, 1] and int64 labels 0-9; 80 % train, 20 % val,
    stratified (scikit-learn's train_test_split with SPLIT_SEED)."""
    images, labels = _bundled_digits()
    x = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    train, val = _split_rows(labels)
    return Splits(
        (torch.from_numpy(x[train]), torch.from_numpy(labels[train]).long()),
        (torch.from_numpy(x[val]), torch.from_numpy(labels[val]).long()),
    )


def _sklearn_folder() -> Path:
    """scikit-learn's package folder, found without importing it (a package's spec runs no code)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("scikit-learn is not installed; pip install scikit-learn")
    return Path(next(iter(spec.submodule_search_locations)))


def _bundled_digits() -> tuple[np.ndarray, np.ndarray]:
    """The pixels (N, 64) and labels (N,) as sklearn.datasets.load_digits(return_X_y=True) returns them:
    the same file, read the way it reads it (np.loadtxt of the gzipped CSV, the label last)."""
    with gzip.open(_sklearn_folder() / "datasets" / "data" / "digits.csv.gz", "rt", encoding="utf-8") as rows:
        table = np.loadtxt(rows, delimiter=",")
    return table[:, :-1], table[:, -1].astype(int)


def _cache_file() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    version = importlib.metadata.version("scikit-learn")
    return root / "tuner" / f"digits-split-sklearn{version}-seed{SPLIT_SEED}.npz"


def _split_rows(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row indices of the training and validation images, in train_test_split's order."""
    cache = _cache_file()
    try:
        with np.load(cache) as kept:
            train, val = kept["train"], kept["val"]
        if len(train) + len(val) == len(labels):
            return train, val
    except (OSError, ValueError, KeyError):  # not there yet, or torn: computed again below
        pass
    from sklearn.model_selection import train_test_split

    train, val = train_test_split(
        np.arange(len(labels)), test_size=VALIDATION_SHARE, stratify=labels, random_state=SPLIT_SEED
    )
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.{os.getpid()}.partial.npz")
        np.savez(partial, train=train, val=val)
        partial.replace(cache)
    except OSError:  # a read-only home: the next run computes it again
        pass
    return train, val
