"""The hyperparameters tuner's own parts read, and the checks their values get before any trial starts.

A space may name any hyperparameter: its own model, optimizer or loop decides what a name means, and
a name nothing reads is caught after the run (`tuner/training/config_reads.py`). These are the names tuner's
loop, its default optimizer and its shipped models read. Where those parts read a name, a value that
could only crash a trial later (`batch_size=0`, a negative `lr`, `optimizer="lion"`) fails before Ray
starts; where the space's own code reads it, the value is the space's business.
"""

from collections.abc import Callable
from typing import Any

from tuner.settings.run import MAX_SEED

LOOP = ("batch_size",)  # tuner's loop
SEED = ("seed",)  # every trial: seeds torch, numpy and random (default: the experiment's --seed)
OPTIMIZER = ("optimizer", "lr", "momentum", "weight_decay")  # the default optimizer
MODEL = ("hidden", "channels", "dropout")  # the shipped models
KNOWN = LOOP + SEED + OPTIMIZER + MODEL
OPTIMIZERS = ("adam", "adamw", "sgd")  # what the default optimizer's `optimizer` may name


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "lr": (lambda v: _number(v) and v > 0, "a number > 0"),
    "batch_size": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "optimizer": (lambda v: v in OPTIMIZERS, f"one of {', '.join(OPTIMIZERS)}"),
    "momentum": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "weight_decay": (lambda v: _number(v) and v >= 0, "a number >= 0"),
    "hidden": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "channels": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "dropout": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "seed": (lambda v: v is None or (_integer(v) and 0 <= v <= MAX_SEED), f"an integer from 0 to {MAX_SEED}"),
}


def checked(own_loop: bool, own_optimizer: bool, shipped_model: bool) -> set[str]:
    """The names whose values tuner's parts read, for a space with these parts of its own."""
    names = set(SEED)
    if not own_loop:
        names.update(LOOP)
        names.update(("lr", "momentum", "weight_decay") if own_optimizer else OPTIMIZER)
    if shipped_model:
        names.update(MODEL)
    return names


def problem(key: str, value: Any) -> str | None:
    """Why `value` can't be used for `key`, or None when it can (or when tuner has no rule for `key`)."""
    if key not in RULES:
        return None
    ok, expected = RULES[key]
    try:
        valid = ok(value)
    except TypeError:  # e.g. comparing a string with a number
        valid = False
    return None if valid else f"{key} must be {expected}, not {value!r}"
