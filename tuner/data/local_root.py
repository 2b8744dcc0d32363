"""Where the shipped torchvision sets are read from, and the files each needs there, without torch.

The driver checks a run's data directory with these before Ray starts (a missing folder or file is one
line at once, not after Ray's start-up), and the loaders in tuner/data/torchvision_sets.py check the
same again where they read, for a space that calls them itself.
"""

import os
from pathlib import Path

from tuner.data import DATA_DIR_ENV
from tuner.errors import TunerError
from tuner.home import expand_home

IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
CIFAR10_FOLDER = "cifar-10-batches-py"
# torchvision's CIFAR10.train_list, test_list and meta file (tests/training/test_datasets.py compares them).
CIFAR10_FILES = (*(f"data_batch_{n}" for n in range(1, 6)), "test_batch", "batches.meta")
# The folder under the root, and the files in it, of each shipped set that reads a local root.
FILES = {
    "mnist": ("MNIST/raw", IDX_FILES),
    "fashion_mnist": ("FashionMNIST/raw", IDX_FILES),
    "cifar10": (CIFAR10_FOLDER, CIFAR10_FILES),
}


def resolve_root(data_dir: str | None) -> Path:
    root = data_dir or os.environ.get(DATA_DIR_ENV)
    if not root:
        raise TunerError(f"this dataset is read from a local root; pass --data-dir DIR or set {DATA_DIR_ENV}")
    path = expand_home(root)
    if not path.is_dir():
        raise TunerError(f"data dir {path} does not exist; pass --data-dir with the folder that holds the dataset")
    return path


def require(root: Path, folder: str, files: tuple[str, ...]) -> None:
    missing = [name for name in files if not (root / folder / name).is_file()]
    if missing:
        raise TunerError(
            f"dataset files missing under {root / folder}: {', '.join(missing)}; "
            "place the uncompressed files there (no download happens at run time)"
        )


def check(dataset: object, data_dir: str | None) -> None:
    """A run's data, before Ray starts: a data directory given must exist, and a shipped set that reads
    one finds its files there. A space's own dataset() is left to itself."""
    if data_dir is not None and not expand_home(data_dir).is_dir():
        raise TunerError(
            f"--data-dir {data_dir} does not exist or is not a folder; give the folder that holds the dataset"
        )
    if isinstance(dataset, str) and dataset in FILES:
        require(resolve_root(data_dir), *FILES[dataset])
