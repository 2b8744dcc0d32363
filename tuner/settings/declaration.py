"""One declaration per setting: a dataclass field whose metadata holds its kind and help. Everything
else is derived from it: the command-line option (`tuner/cli.py` walks these fields), the check a
value gets wherever it comes from (`check`), and the default (the field's own)."""

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tuner.errors import TunerError
from tuner.settings.kinds import Kind

METADATA_KEY = "tuner.setting"


@dataclass(frozen=True)
class Setting:
    kind: Kind
    help: str
    optional: bool = False  # None is a value: "not set", the default decides
    # How the command line spells it when not `--<name with dashes>` (e.g. --no-smoke), extra argparse
    # arguments (nargs, const, metavar), or None where it has no option of its own (said why, at the field).
    flag: str | None = ""
    argparse: dict[str, Any] = field(default_factory=dict)

    def problem(self, name: str, value: Any) -> str | None:
        if value is None and self.optional:
            return None
        return self.kind.problem(name, value)

    def option(self, name: str) -> str | None:
        if self.flag is None:
            return None
        return self.flag or f"--{name.replace('_', '-')}"


def setting(
    default: Any,
    kind: Kind,
    help: str,
    *,
    optional: bool = False,
    flag: str | None = "",
    argparse: dict[str, Any] | None = None,
) -> Any:
    """A dataclass field declaring one setting, with its default."""
    declared = Setting(kind, help, optional=optional, flag=flag, argparse=argparse or {})
    return field(default=default, metadata={METADATA_KEY: declared})


def required(kind: Kind, help: str) -> Any:
    """A setting without a default (the metric, the mode): a space module must give it."""
    return field(metadata={METADATA_KEY: Setting(kind, help)})


def settings_of(cls_or_instance: Any) -> Iterator[tuple[dataclasses.Field[Any], Setting]]:
    """The declared settings of a dataclass, in declaration order."""
    for item in dataclasses.fields(cls_or_instance):
        if METADATA_KEY in item.metadata:
            yield item, item.metadata[METADATA_KEY]


def check(instance: Any) -> None:
    """Raise the first declared setting's problem as a TunerError; the groups call this when built."""
    for item, declared in settings_of(instance):
        if (problem := declared.problem(item.name, getattr(instance, item.name))) is not None:
            raise TunerError(problem)


def as_record(instance: Any) -> dict[str, Any]:
    """The declared settings' values, as JSON keeps them (tuple -> list)."""
    return {
        item.name: list(value) if isinstance(value := getattr(instance, item.name), tuple) else value
        for item, _ in settings_of(instance)
    }


def from_record(cls: type, record: dict[str, Any]) -> Any:
    """An instance from the keys of `record` that are `cls`'s settings; other keys are ignored."""
    names = {item.name for item, _ in settings_of(cls)}
    return cls(**{key: value for key, value in record.items() if key in names})
