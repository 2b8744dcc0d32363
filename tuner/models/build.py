from typing import Any

from torch import nn

from tuner.data.dataset import Dataset
from tuner.lazy import resolve
from tuner.models import MODELS
from tuner.models.standardize import Standardize


def build(name: str, dataset: Dataset, hp: dict[str, Any]) -> nn.Module:
    body = resolve(MODELS[name])(dataset.input_shape, dataset.num_classes, **hp)
    return nn.Sequential(Standardize(dataset.pixel_scale, dataset.mean, dataset.std), body)
