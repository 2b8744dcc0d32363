"""Which hyperparameters a trial actually read, so a typo is caught without forbidding new names.

A space may name any hyperparameter, since the user's own model and loop decide what they mean. A
misspelt one (`learning_rate` where the loop reads `lr`) would then be searched over and silently
ignored. So each trial hands its code a config that records every key looked up, present or not;
the trial reports the names with its results, and after the run a key no trial read is named in one
warning, with the read name it was probably meant to be.
"""

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# The result key that carries the names a trial read, comma-separated (a string survives Ray's
# progress.csv as it is).
RESULT_KEY = "config_keys_read"


class ReadTrackingConfig(dict):
    """A trial's config that notes the keys read through it (`config["lr"]`, `.get`, `in`, `**config`)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        # Overriding __iter__ makes dict(config) and **config go through __getitem__, so they count.
        return super().__iter__()

    def items(self):  # untyped: dict's own return type (dict_items) is private
        self.read.update(self)
        return super().items()

    def values(self):  # untyped: dict's own return type (dict_values) is private
        self.read.update(self)
        return super().values()

    def copy(self) -> "ReadTrackingConfig":
        copied = ReadTrackingConfig(super().items())
        copied.read = self.read  # reads through the copy are the trial's reads too
        return copied

    def reported(self) -> str:
        return ",".join(sorted(self.read))


def reads_of(reported: Iterable[Any]) -> set[str]:
    """The union of RESULT_KEY values of several results (missing or empty ones skipped)."""
    return {name for value in reported if isinstance(value, str) for name in value.split(",") if name}


def given_keys(params: Iterable[str], configs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The top-level keys of `params` (flat names, `group/name`) that some trial's config had, sorted. A
    conditional key whose condition held in no trial (tuner/spec/conditions.py) was never there to read."""
    had = {key for config in configs for key in config}
    return sorted({param.split("/")[0] for param in params} & had)


def _initials(name: str) -> str:
    return "".join(part[0] for part in name.lower().split("_") if part)


def _suggestion(key: str, candidates: list[str]) -> str | None:
    """The candidate `key` was probably meant to be: a close spelling, or the same initials
    (learning_rate and lr, weight_decay and wd)."""
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.75)
    if close:
        return close[0]
    same = [c for c in candidates if len(c) > 1 and (_initials(key) == c.lower() or _initials(c) == key.lower())]
    return same[0] if same else None


def unread_warning(keys: Iterable[str], read: set[str], known: Iterable[str] = ()) -> str | None:
    """One line naming each of `keys` that nobody read, or None. Candidates for "did you mean" are the
    names read that the space does not define, then `known` (names tuner's own loop reads)."""
    keys = list(keys)
    unread = [key for key in keys if key not in read]
    if not unread:
        return None
    candidates = sorted(read - set(keys)) + [name for name in known if name not in keys and name not in read]
    parts = []
    for key in unread:
        meant = _suggestion(key, candidates)
        parts.append(key + (f" (did you mean {meant}?)" if meant else ""))
    return "param_space keys no trial read, so their values changed nothing: " + ", ".join(parts)
