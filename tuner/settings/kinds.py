"""What a setting's value may be, said once: how the command line reads it from text, and what any value
(from the command line, a space module or Python) must be. The same sentence names the problem in both
places ("epochs must be an integer >= 1, not 0")."""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

AUTO = "auto"


class Kind:
    """A kind of value. `expect` completes "must be ..."; `accepts` checks a value; `parse` reads the
    command line's text (raising ValueError with the reason) into a value that `accepts` then checks."""

    expect: str = "a value"

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def parse(self, text: str) -> Any:
        return text

    def problem(self, name: str, value: Any) -> str | None:
        """Why `value` can't be the setting `name`, as one sentence; None when it can."""
        return None if self.accepts(value) else f"{name} must be {self.expect}, not {value!r}"


def _real(value: Any) -> bool:
    """A finite int or float: True is no count, and nan or inf no share of a machine."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _beyond(maximum: float | None, why: str, value: Any) -> str:
    """`; <why>` for a well-formed value past the maximum: the bound is said with its reason."""
    return f"; {why}" if why and maximum is not None and _real(value) and value > maximum else ""


@dataclass(frozen=True)
class Whole(Kind):
    minimum: int
    maximum: int | None = None
    why: str = ""  # why there is a maximum, said to a value beyond it

    @property
    def expect(self) -> str:  # type: ignore[override]
        if self.maximum is None:
            return f"an integer >= {self.minimum}"
        return f"an integer from {self.minimum} to {self.maximum}"

    def accepts(self, value: Any) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and value >= self.minimum
            and (self.maximum is None or value <= self.maximum)
        )

    def parse(self, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a whole number") from None

    def problem(self, name: str, value: Any) -> str | None:
        problem = super().problem(name, value)
        return None if problem is None else problem + _beyond(self.maximum, self.why, value)


@dataclass(frozen=True)
class Number(Kind):
    minimum: float
    inclusive: bool = True
    maximum: float | None = None
    why: str = ""  # why there is a maximum, said to a value beyond it
    # The smallest positive amount (a Ray resource's unit): a value between 0 and it is refused, with `unit_why`.
    unit: float | None = None
    unit_why: str = ""

    @property
    def expect(self) -> str:  # type: ignore[override]
        if self.unit is not None and self.minimum == 0 and self.maximum is not None:  # a share of a resource
            shares = f"a number from {self.unit:g} to {self.maximum:g}"
            return f"0 or {shares}" if self.inclusive else shares
        low = f"{'>=' if self.inclusive else '>'} {self.minimum:g}"
        return f"a number {low}" if self.maximum is None else f"a number {low} and <= {self.maximum:g}"

    def accepts(self, value: Any) -> bool:
        return (
            _real(value)
            and (value >= self.minimum if self.inclusive else value > self.minimum)
            and (self.maximum is None or value <= self.maximum)
            and not (self.unit is not None and 0 < value < self.unit)
        )

    def parse(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None

    def problem(self, name: str, value: Any) -> str | None:
        problem = super().problem(name, value)
        if problem is None:
            return None
        if self.unit is not None and self.unit_why and _real(value) and 0 < value < self.unit:
            return f"{problem}; {self.unit_why}"
        return problem + _beyond(self.maximum, self.why, value)


@dataclass(frozen=True)
class NumberOrAuto(Number):
    """A number, or `auto`: tuner decides once it knows the cluster (and what the smoke step measured)."""

    @property
    def expect(self) -> str:  # type: ignore[override]
        return f"'auto' or {super().expect}"

    def accepts(self, value: Any) -> bool:
        return value == AUTO if isinstance(value, str) else super().accepts(value)

    def parse(self, text: str) -> float | str:  # type: ignore[override]
        if text.strip() == AUTO:
            return AUTO
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is neither 'auto' nor a number") from None


@dataclass(frozen=True)
class OneOf(Kind):
    choices: tuple[str, ...]

    @property
    def expect(self) -> str:  # type: ignore[override]
        if len(self.choices) == 2:
            return " or ".join(repr(choice) for choice in self.choices)
        return f"one of {', '.join(self.choices)}"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.choices


@dataclass(frozen=True)
class Name(Kind):
    """A string that names something the loop reports, e.g. a metric."""

    expect = "a non-empty name, such as 'val_loss'"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and bool(value.strip())


@dataclass(frozen=True)
class PlainName(Kind):
    """A name that becomes a directory: no separators or leading dots that would place it elsewhere."""

    expect = "a plain name of letters, digits, '.', '_' and '-'"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value) is not None


@dataclass(frozen=True)
class Text(Kind):
    """A path, an address or a URI: what it names is checked where it is used."""

    expect = "a non-empty string"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and bool(value)


@dataclass(frozen=True)
class Flag(Kind):
    expect = "True or False"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class Names(Kind):
    """A list of names; on the command line, comma-separated."""

    expect = "a list of names"

    def accepts(self, value: Any) -> bool:
        # Each one line: a name is said in one-line messages, which a line break would split.
        return isinstance(value, (list, tuple)) and all(
            isinstance(item, str) and item.splitlines() == [item] for item in value
        )

    def parse(self, text: str) -> list[str]:
        return [item.strip() for item in text.split(",") if item.strip()]


@dataclass(frozen=True)
class Parsed(Kind):
    """A string in a small language of its own (a duration, a stop condition): `read` raises the
    language's own one-line error (a TunerError) for text it can't read."""

    read: Callable[[str], Any]
    example: str

    @property
    def expect(self) -> str:  # type: ignore[override]
        return f"a string such as {self.example}"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, name: str, value: Any) -> str | None:
        if not isinstance(value, str):
            return f"{name} must be {self.expect}, not {value!r}"
        self.read(value)  # its TunerError names the problem itself
        return None
