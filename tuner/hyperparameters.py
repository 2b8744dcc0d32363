"""Hyperparameters the training loop understands, with the value used when a space leaves one out.

A key that is not listed here would be silently ignored by the loop, so space modules and `--set`
are checked against this table: a typo such as `learning_rate` fails before any trial starts, and so
does a value that could only crash a trial later (`batch_size=0`, a negative `lr`).
"""

from collections.abc import Callable
from typing import Any

DEFAULTS: dict[str, Any] = {
    "lr": 1e-3,
    "batch_size": 64,
    "optimizer": "adam",
    "momentum": 0.9,  # sgd only
    "weight_decay": 0.0,
    "hidden": 128,  # width of the MLP / CNN classifier head
    "channels": 32,  # CNN width
    "dropout": 0.0,
    "seed": None,  # None: the experiment's --seed
}

OPTIMIZERS = ("adam", "adamw", "sgd")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "lr": (lambda v: _number(v) and v > 0, "a number > 0"),
    "batch_size": (lambda v: _whole(v) and v >= 1, "an integer >= 1"),
    "optimizer": (lambda v: v in OPTIMIZERS, f"one of {', '.join(OPTIMIZERS)}"),
    "momentum": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "weight_decay": (lambda v: _number(v) and v >= 0, "a number >= 0"),
    "hidden": (lambda v: _whole(v) and v >= 1, "an integer >= 1"),
    "channels": (lambda v: _whole(v) and v >= 1, "an integer >= 1"),
    "dropout": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "seed": (lambda v: v is None or (_whole(v) and v >= 0), "an integer >= 0"),
}


def problem(key: str, value: Any) -> str | None:
    """Why `value` can't be used for `key`, or None when it can."""
    ok, expected = RULES[key]
    try:
        valid = ok(value)
    except TypeError:  # e.g. comparing a string with a number
        valid = False
    return None if valid else f"{key} must be {expected}, not {value!r}"


def resolve(config: dict[str, Any], experiment_seed: int) -> dict[str, Any]:
    """The full set of hyperparameters one trial trains with."""
    resolved = {**DEFAULTS, **config}
    if resolved["seed"] is None:
        resolved["seed"] = experiment_seed
    return resolved
