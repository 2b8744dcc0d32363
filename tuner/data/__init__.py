"""The shipped datasets, each a `dataset()` callable returning `Splits` (train and val): the contract a
space module's own `dataset` follows, so `dataset = "digits"` and `from tuner.data import digits;
dataset = digits` are the same space.

The torchvision sets read a local root: their `data_dir` argument, else `TUNER_DATA_DIR` (which
`--data-dir` sets for the run). The registry names them as "module:attribute" strings (see
`tuner.lazy`): `tuner.spec.space` checks a name without importing torch.
"""

from typing import Any

from tuner.lazy import resolve

DATA_DIR_ENV = "TUNER_DATA_DIR"  # where the torchvision sets' root is, unless given; set by --data-dir
DATASETS: dict[str, str] = {
    "digits": "tuner.data.sklearn_sets:digits",
    "mnist": "tuner.data.torchvision_sets:mnist",
    "fashion_mnist": "tuner.data.torchvision_sets:fashion_mnist",
    "cifar10": "tuner.data.torchvision_sets:cifar10",
}
PUBLIC = {**DATASETS, "Splits": "tuner.data.splits:Splits"}

__all__ = sorted(PUBLIC)


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        return resolve(PUBLIC[name])
    raise AttributeError(f"module 'tuner.data' has no attribute {name!r}")
