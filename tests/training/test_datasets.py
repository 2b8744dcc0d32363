import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.dataset_files import write_cifar10, write_mnist
from tuner import data
from tuner.errors import TunerError
from tuner.models import Standardize


def load(name: str, data_dir: str | None = None) -> data.Splits:
    """A shipped dataset through the registry, as `dataset = "<name>"` in a space reaches it."""
    from tuner.lazy import resolve

    loader = resolve(data.DATASETS[name])
    return loader(data_dir=data_dir) if data_dir is not None else loader()


def test_digits_is_the_real_bundled_set_with_a_fixed_split():
    first, second = data.digits(), data.digits()
    (x_train, y_train), (x_val, y_val) = first  # the (train, val) pair a space's dataset() returns
    assert len(y_train) + len(y_val) == 1797
    assert first.input_shape == (1, 8, 8) and first.num_classes == 10 and first.output_size == 10
    assert set(y_val.tolist()) == set(range(10))
    assert torch.equal(x_val, second.val[0])


def test_digits_are_sklearns_images_and_split_and_a_later_run_does_not_import_sklearn(tmp_path, monkeypatch):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = data.digits()  # computes scikit-learn's split and keeps it
    (kept,) = tmp_path.glob("tuner/digits-split-sklearn*-seed0.npz")
    second = data.digits()  # reads it
    images, labels = load_digits(return_X_y=True)
    x = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_train, x_val, y_train, y_val = train_test_split(x, labels, test_size=0.2, stratify=labels, random_state=0)
    for splits in (first, second):
        assert np.array_equal(splits.train[0].numpy(), x_train) and np.array_equal(splits.val[0].numpy(), x_val)
        assert np.array_equal(splits.train[1].numpy(), y_train) and np.array_equal(splits.val[1].numpy(), y_val)
    check = "from tuner import data; data.digits(); import sys; print('sklearn' in sys.modules)"
    later = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env={**os.environ})
    assert later.stdout.strip() == "False", later.stderr
    kept.write_bytes(b"torn")  # a cache cut short is computed again, the same
    assert torch.equal(data.digits().val[0], first.val[0])


@pytest.mark.parametrize("name,folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")])
def test_idx_files_are_read_by_torchvision(tmp_path, name, folder):
    raw = write_mnist(tmp_path, folder=folder, n_train=20, n_test=10)
    (x_train, y_train), (x_val, _) = load(name, str(tmp_path))
    assert x_train.shape == (20, 1, 28, 28) and x_train.dtype == torch.uint8
    assert x_val.shape == (10, 1, 28, 28)
    assert y_train.tolist() == [i % 10 for i in range(20)]
    # The pixels are the bytes the test wrote, in order.
    written = np.frombuffer((raw / "train-images-idx3-ubyte").read_bytes()[16:], dtype=np.uint8)
    assert np.array_equal(x_train.numpy().reshape(-1), written)


def test_cifar10_pickles_are_read_by_torchvision(tmp_path):
    write_cifar10(tmp_path, per_batch=4, n_test=6)
    splits = load("cifar10", str(tmp_path))
    assert splits.train[0].shape == (20, 3, 32, 32)
    assert splits.val[0].shape == (6, 3, 32, 32)
    standardize = Standardize.fit(splits)  # the shipped models' first layer: per-channel statistics
    assert standardize.mean.shape == (1, 3, 1, 1) and (standardize.std > 0).all()
    scaled = standardize(splits.train[0])
    assert abs(float(scaled.mean())) < 1e-5 and abs(float(scaled.std()) - 1) < 0.05


def test_data_dir_from_environment(tmp_path, monkeypatch):
    write_mnist(tmp_path)
    monkeypatch.setenv("TUNER_DATA_DIR", str(tmp_path))
    assert data.mnist().train[0].shape[0] == 20


def test_missing_files_are_named(tmp_path):
    (tmp_path / "MNIST" / "raw").mkdir(parents=True)
    with pytest.raises(TunerError, match="t10k-labels-idx1-ubyte"):
        load("mnist", str(tmp_path))
    with pytest.raises(TunerError, match="data_batch_1.*batches.meta"):
        load("cifar10", str(tmp_path))


def test_the_files_checked_before_ray_starts_are_those_torchvision_reads():
    from torchvision import datasets

    from tuner.data import local_root

    assert local_root.CIFAR10_FOLDER == datasets.CIFAR10.base_folder
    read = [name for name, _ in datasets.CIFAR10.train_list + datasets.CIFAR10.test_list]
    assert list(local_root.CIFAR10_FILES) == [*read, datasets.CIFAR10.meta["filename"]]
    for name, cls in (("mnist", datasets.MNIST), ("fashion_mnist", datasets.FashionMNIST)):
        unread = cls.__new__(cls)  # where it reads from, asked without the files it would read at once
        unread.root = "root"
        assert local_root.FILES[name] == (os.path.relpath(unread.raw_folder, "root"), local_root.IDX_FILES)
        assert [Path(url).stem for url, _ in cls.resources] == list(local_root.IDX_FILES)
    assert set(local_root.FILES) == {name for name in data.DATASETS if name != "digits"}


def test_no_root_and_absent_root(tmp_path, monkeypatch):
    monkeypatch.delenv("TUNER_DATA_DIR", raising=False)
    with pytest.raises(TunerError, match="--data-dir"):
        load("mnist")
    with pytest.raises(TunerError, match="does not exist"):
        load("mnist", str(tmp_path / "nowhere"))


def test_corrupt_file_is_reported_not_raised_raw(tmp_path):
    raw = write_mnist(tmp_path)
    (raw / "train-images-idx3-ubyte").write_bytes(b"not an idx file")
    with pytest.raises(TunerError, match="could not be read"):
        load("mnist", str(tmp_path))
    folder = write_cifar10(tmp_path)
    (folder / "data_batch_3").write_bytes(b"\x80garbage")
    with pytest.raises(TunerError, match="could not be read"):
        load("cifar10", str(tmp_path))
