"""`--set key=value` parsing: values are Python literals (`0.01`, `64`, `'sgd'`) or bare words.

Which keys a space accepts is the space's to say (`ExperimentSpec.with_overrides`).
"""

import ast
from typing import Any

from tuner.errors import TunerError


def parse_set(item: str) -> tuple[str, Any]:
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or not raw.strip():
        raise TunerError(f"--set {item!r} is not key=value; write it like --set lr=0.01")
    raw = raw.strip()
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw  # a bare word such as sgd
    if isinstance(value, (list, tuple, dict, set)):
        raise TunerError(f"--set {key}: expects one value, got {raw}; put a search axis in the space module")
    return key, value


def parse_sets(items: list[str]) -> dict[str, Any]:
    return dict(parse_set(item) for item in items)
