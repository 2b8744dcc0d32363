"""Several objectives and outcome constraints, as settings: what `metric`, `mode` and `constraints` may
be (`metric = ["val_acc", "latency_ms"]`, `mode = ["max", "min"]`, or one mapping `metric =
{"val_acc": "max", "latency_ms": "min"}`; `constraints = ["latency_ms <= 5"]`), read into the
(metric, mode) pairs and `Constraint`s that the search, the schedulers and the report use.

The first objective is the primary one: `Objective.metric`/`.mode` name it as plain strings, so code
that ranks by one metric reads it as before; it breaks ties on a Pareto front.
"""

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.errors import TunerError
from tuner.settings.budgets import OPERATORS
from tuner.settings.kinds import Kind

MODES = ("min", "max")


def _name(value: Any) -> bool:
    # One line: a name is said in one-line messages, which a line break would split.
    return isinstance(value, str) and bool(value.strip()) and value.splitlines() == [value]


def _comma_list(text: str) -> str | list[str]:
    """`a` as itself, `a,b` as a list: one objective is written as before."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    return items[0] if len(items) == 1 else items


@dataclass(frozen=True)
class Metrics(Kind):
    """A metric's name, a list of them (several objectives), or a mapping of each to its mode."""

    expect = "a non-empty name, such as 'val_loss' (or a list of them, or a mapping of each to 'min'/'max')"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, Mapping):
            return bool(value) and all(_name(key) for key in value)
        if isinstance(value, (list, tuple)):
            return bool(value) and all(_name(item) for item in value)
        return _name(value)

    def parse(self, text: str) -> str | list[str]:
        return _comma_list(text)


@dataclass(frozen=True)
class Modes(Kind):
    """'min' or 'max', or a list of them, one per metric."""

    expect = "'min' or 'max', or a list of them (one per metric)"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return bool(value) and all(item in MODES for item in value)
        return value in MODES

    def parse(self, text: str) -> str | list[str]:
        return _comma_list(text)


@dataclass(frozen=True)
class Constraint:
    """`metric op bound`: a trial is feasible when its metric meets every constraint."""

    metric: str
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.bound:.15g}"

    def satisfied(self, value: Any) -> bool:
        return _real(value) and OPERATORS[self.op](float(value), self.bound)

    def violation(self, value: Any) -> float:
        """How far `value` is beyond the bound: <= 0 when satisfied, > 0 otherwise (optuna's
        constraints_func convention); inf for a missing or non-numeric value."""
        if not _real(value):
            return math.inf
        margin = float(value) - self.bound if self.op in ("<=", "<") else self.bound - float(value)
        return min(margin, 0.0) if self.satisfied(value) else max(margin, 1e-12)


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_constraint(text: str) -> Constraint:
    match = re.fullmatch(r"\s*(\w+)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*", text) if isinstance(text, str) else None
    if match is None:
        raise TunerError(
            f'constraint {text!r} is not METRIC OP NUMBER (OP one of <=, >=, <, >); write e.g. "latency_ms <= 5"'
        )
    metric, op, raw = match.groups()
    try:
        bound = float(raw)
    except ValueError:
        raise TunerError(f"constraint {text!r}: {raw!r} is not a number") from None
    if not math.isfinite(bound):
        raise TunerError(f"constraint {text!r}: the bound must be a finite number")
    return Constraint(metric, op, bound)


@dataclass(frozen=True)
class Constraints(Kind):
    """A list of constraints; on the command line, comma-separated."""

    expect = 'a list of constraints such as ["latency_ms <= 5", "params <= 2e6"]'

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)

    def parse(self, text: str) -> list[str]:
        return [item.strip() for item in text.split(",") if item.strip()]

    def problem(self, name: str, value: Any) -> str | None:
        if not self.accepts(value):
            return f"{name} must be {self.expect}, not {value!r}"
        for item in value:
            parse_constraint(item)  # its TunerError names the constraint
        return None


@dataclass(frozen=True)
class Pairs(Kind):
    """Every objective as (metric, mode), as tuner.json records them."""

    expect = "a list of [metric, mode] pairs"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and _name(pair[0]) and pair[1] in MODES for pair in value
        )


def pairs(metric: Any, mode: Any, recorded: Sequence[Sequence[str]] = ()) -> tuple[tuple[str, str], ...]:
    """The objectives that `metric` and `mode` declare, primary first; `recorded` (tuner.json's
    `objectives`) when they name its primary objective, as a record read back does."""
    if recorded and isinstance(metric, str) and isinstance(mode, str):
        kept = tuple((str(name), str(way)) for name, way in recorded)
        if kept[0] == (metric, mode):
            return kept
        raise TunerError(
            f"objectives {[list(pair) for pair in kept]} (as tuner.json records them) disagree with metric "
            f"{metric!r} and mode {mode!r}; set metric and mode only"
        )
    if isinstance(metric, Mapping):
        if mode is not None:
            raise TunerError(
                "metric maps each metric to its mode, so mode is not needed; drop mode, or give metric as a list"
            )
        found = [(name, way) for name, way in metric.items()]
        for name, way in found:
            if way not in MODES:
                raise TunerError(f"metric {name!r} maps to {way!r}; each mode must be 'min' or 'max'")
        return tuple(found)
    if mode is None:
        raise TunerError("give mode ('min' or 'max' per metric), or metric as a mapping of each metric to its mode")
    metrics = [metric] if isinstance(metric, str) else list(metric)
    modes = [mode] if isinstance(mode, str) else list(mode)
    if len(metrics) != len(modes):
        raise TunerError(
            f"metric names {len(metrics)} objective(s) ({', '.join(metrics)}) but mode gives {len(modes)} "
            f"({', '.join(modes)}); give one mode per metric, in the same order"
        )
    if len(set(metrics)) != len(metrics):
        raise TunerError(f"metric names an objective twice ({', '.join(metrics)}); name each metric once")
    return tuple(zip(metrics, modes, strict=True))


def describe(objectives: Sequence[tuple[str, str]]) -> str:
    """`val_acc (max), latency_ms (min)`."""
    return ", ".join(f"{metric} ({mode})" for metric, mode in objectives)
