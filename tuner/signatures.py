"""Space-module callables may take fewer arguments than tuner could pass: `model(config)` or
`model(config, data)`, `dataset()` or `dataset(config)`. This reads which, once, from the signature,
and tells a torchmetrics Metric from a metric function, without importing torch."""

import inspect
from collections.abc import Callable
from typing import Any


def takes(function: Callable[..., Any], counts: tuple[int, ...]) -> int | None:
    """The largest of `counts` that `function` can be called with positionally, or None. A signature
    Python cannot read (some builtins) gets the largest: the call itself will say if it does not fit."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return max(counts)
    if any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in parameters):
        return None  # a required keyword-only argument: tuner never passes one
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    accepted = float("inf") if any(p.kind == p.VAR_POSITIONAL for p in parameters) else len(positional)
    fitting = [n for n in counts if required <= n <= accepted]
    return max(fitting) if fitting else None


def call(function: Callable[..., Any], *args: Any) -> Any:
    """`function` called with as many of `args` as it takes (the leading ones)."""
    count = takes(function, tuple(range(len(args) + 1)))
    return function(*args[: count if count is not None else len(args)])


def is_torchmetric(value: Any) -> bool:
    """A torchmetrics Metric (or anything with its update/compute/reset protocol)."""
    return all(callable(getattr(value, name, None)) for name in ("update", "compute", "reset"))
