"""Datasets by name. Each loader takes an optional local root and returns an in-memory `Dataset`."""

from typing import TYPE_CHECKING

from tuner.lazy import resolve

if TYPE_CHECKING:
    from tuner.data.dataset import Dataset

DATASETS: dict[str, str] = {
    "digits": "tuner.data.digits:load",
    "mnist": "tuner.data.torchvision_sets:load_mnist",
    "fashion_mnist": "tuner.data.torchvision_sets:load_fashion_mnist",
    "cifar10": "tuner.data.torchvision_sets:load_cifar10",
}


def load(name: str, data_dir: str | None = None) -> "Dataset":
    return resolve(DATASETS[name])(data_dir)
