"""The shipped models, each a `model(config, data)` callable: the contract a space module's own `model`
follows, so `model = "cnn"` and `from tuner.models import cnn; model = cnn` are the same space.

`data` is the space's `Splits`, which gives the input shape and the number of outputs. The registry
names them as "module:attribute" strings (see `tuner.lazy`): `tuner.spec.space` checks a name without
importing torch.
"""

from typing import Any

from tuner.lazy import resolve

MODELS: dict[str, str] = {
    "mlp": "tuner.models._mlp:mlp",
    "cnn": "tuner.models._cnn:cnn",
    "resnet18": "tuner.models._resnet:resnet18",
    "resnet50": "tuner.models._resnet:resnet50",
}
PUBLIC = {
    **MODELS,
    "small_image_resnet18": "tuner.models._resnet:small_image_resnet18",
    "Standardize": "tuner.models.standardize:Standardize",
}

__all__ = sorted(PUBLIC)


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        return resolve(PUBLIC[name])
    raise AttributeError(f"module 'tuner.models' has no attribute {name!r}")
