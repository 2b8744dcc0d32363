"""Writers for tiny datasets in the real on-disk formats that torchvision's loaders read."""

import pickle
import struct
from pathlib import Path

import numpy as np

IDX_UBYTE = 0x08


def write_idx(path: Path, array: np.ndarray) -> None:
    """MNIST's IDX format: magic (0, 0, dtype, ndim), big-endian dims, then raw uint8 data."""
    header = struct.pack(">BBBB", 0, 0, IDX_UBYTE, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def write_mnist(root: Path, folder: str = "MNIST", n_train: int = 20, n_test: int = 10, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    raw = root / folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        write_idx(raw / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, size=(n, 28, 28)))
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", np.arange(n) % 10)
    return raw


def write_cifar10(root: Path, per_batch: int = 4, n_test: int = 6, seed: int = 0) -> Path:
    """The 'python version' release: pickled dicts of (N, 3072) uint8 rows in CHW order, plus labels."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)

    def batch(name: str, n: int) -> None:
        entry = {"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8), "labels": [i % 10 for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(entry))

    for i in range(1, 6):
        batch(f"data_batch_{i}", per_batch)
    batch("test_batch", n_test)
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": names}))
    return folder
