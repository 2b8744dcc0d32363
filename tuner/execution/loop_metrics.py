"""The numbers a trial's result holds of its loop's own (its metrics, the model's costs), without Ray's
bookkeeping or tuner's: what TensorBoard's runs and Ray's metrics of a running trial show."""

import math
import numbers
from typing import Any

from ray.tune.result import AUTO_RESULT_KEYS, DEBUG_METRICS, DONE, SHOULD_CHECKPOINT
from typing_extensions import TypeIs

from tuner.training.result_keys import BOOKKEEPING

# What Ray adds to every result besides the loop's own.
RAY_KEYS = {*AUTO_RESULT_KEYS, *DEBUG_METRICS, DONE, SHOULD_CHECKPOINT}


def is_real(value: Any) -> TypeIs[int | float]:
    """A finite number, not a bool: what a metric's value must be to be shown or ranked."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def loop_metrics(result: dict) -> dict[str, float]:
    """Each finite real number of `result` that the loop reported, by name."""
    return {
        key: float(value)
        for key, value in result.items()
        if key not in RAY_KEYS and key not in BOOKKEEPING and is_real(value)
    }
