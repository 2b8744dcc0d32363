"""Hyperparameters the training loop understands, with the value used when a space leaves one out.

A key that is not listed here would be silently ignored by the loop, so space modules and `--set`
are checked against this table: a typo such as `learning_rate` fails before any trial starts.
"""

from typing import Any

DEFAULTS: dict[str, Any] = {
    "lr": 1e-3,
    "batch_size": 64,
    "optimizer": "adam",  # adam | adamw | sgd
    "momentum": 0.9,  # sgd only
    "weight_decay": 0.0,
    "hidden": 128,  # width of the MLP / CNN classifier head
    "channels": 32,  # CNN width
    "dropout": 0.0,
    "seed": None,  # None: the experiment's --seed
}

OPTIMIZERS = ("adam", "adamw", "sgd")


def resolve(config: dict[str, Any], experiment_seed: int) -> dict[str, Any]:
    """The full set of hyperparameters one trial trains with."""
    resolved = {**DEFAULTS, **config}
    if resolved["seed"] is None:
        resolved["seed"] = experiment_seed
    return resolved
