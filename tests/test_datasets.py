import numpy as np
import pytest
import torch

from tests.dataset_files import write_cifar10, write_mnist
from tuner import data
from tuner.errors import TunerError


def test_digits_is_the_real_bundled_set_with_a_fixed_split():
    first, second = data.load("digits"), data.load("digits")
    assert len(first.y_train) + len(first.y_val) == 1797
    assert first.input_shape == (1, 8, 8) and first.num_classes == 10
    assert set(first.y_val.tolist()) == set(range(10))
    assert torch.equal(first.x_val, second.x_val)


@pytest.mark.parametrize("name,folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")])
def test_idx_files_are_read_by_torchvision(tmp_path, name, folder):
    raw = write_mnist(tmp_path, folder=folder, n_train=20, n_test=10)
    dataset = data.load(name, str(tmp_path))
    assert dataset.x_train.shape == (20, 1, 28, 28) and dataset.x_train.dtype == torch.uint8
    assert dataset.x_val.shape == (10, 1, 28, 28)
    assert dataset.y_train.tolist() == [i % 10 for i in range(20)]
    # The pixels are the bytes the test wrote, in order.
    written = np.frombuffer((raw / "train-images-idx3-ubyte").read_bytes()[16:], dtype=np.uint8)
    assert np.array_equal(dataset.x_train.numpy().reshape(-1), written)


def test_cifar10_pickles_are_read_by_torchvision(tmp_path):
    write_cifar10(tmp_path, per_batch=4, n_test=6)
    dataset = data.load("cifar10", str(tmp_path))
    assert dataset.x_train.shape == (20, 3, 32, 32)
    assert dataset.x_val.shape == (6, 3, 32, 32)
    assert len(dataset.mean) == 3 and all(0 < s for s in dataset.std)


def test_data_dir_from_environment(tmp_path, monkeypatch):
    write_mnist(tmp_path)
    monkeypatch.setenv("TUNER_DATA_DIR", str(tmp_path))
    assert data.load("mnist").x_train.shape[0] == 20


def test_missing_files_are_named(tmp_path):
    (tmp_path / "MNIST" / "raw").mkdir(parents=True)
    with pytest.raises(TunerError, match="t10k-labels-idx1-ubyte"):
        data.load("mnist", str(tmp_path))
    with pytest.raises(TunerError, match="data_batch_1.*batches.meta"):
        data.load("cifar10", str(tmp_path))


def test_no_root_and_absent_root(tmp_path, monkeypatch):
    monkeypatch.delenv("TUNER_DATA_DIR", raising=False)
    with pytest.raises(TunerError, match="--data-dir"):
        data.load("mnist")
    with pytest.raises(TunerError, match="does not exist"):
        data.load("mnist", str(tmp_path / "nowhere"))


def test_corrupt_file_is_reported_not_raised_raw(tmp_path):
    raw = write_mnist(tmp_path)
    (raw / "train-images-idx3-ubyte").write_bytes(b"not an idx file")
    with pytest.raises(TunerError, match="could not be read"):
        data.load("mnist", str(tmp_path))
    folder = write_cifar10(tmp_path)
    (folder / "data_batch_3").write_bytes(b"\x80garbage")
    with pytest.raises(TunerError, match="could not be read"):
        data.load("cifar10", str(tmp_path))
