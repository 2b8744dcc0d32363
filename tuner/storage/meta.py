"""`<experiment>/tuner.json`: what tuner knows of an experiment that Ray's own state does not keep (the
space module to load again on resume, the parameters shown as columns, and the experiment's settings
as `ExperimentSpec` holds them), read and written here only, as one typed record.

The settings are stored as their groups (`"budget": {"epochs": 5, ...}`), from the same declarations
as the command line's options (tuner/settings/). Files written before the groups kept them flat
(`"epochs": 5`); those are read into the groups, and a setting they lack takes its declared default,
which is what those versions did. Fields this version does not know, from a newer one, are kept when
the record is written back.

What a run adds beside the settings (how the trials got GPUs, a warm start, each `tuner extend`) are
typed records too (`GpuRecord`, `WarmStartRecord`, `Extension`), kept in the file as the JSON objects
earlier versions wrote, so that files of either read as the same records.
"""

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from tuner.errors import TunerError
from tuner.settings import GROUPS, Budget, Objective, Resources, Tuning
from tuner.settings.declaration import as_record, from_record
from tuner.settings.run import RunOptions
from tuner.storage import filesystem

FILE = filesystem.META_FILE
DEFAULT_SEED = RunOptions().seed


@dataclass(frozen=True)
class GpuRecord:
    """How the trials got GPUs (tuner/execution/packing.py): gpus_per_worker as set and as resolved,
    trials per GPU (0: on the CPU), why in words, and the smoke step's measurement where it ran."""

    setting: float | str  # "auto" or the number given
    gpus_per_worker: float
    trials_per_gpu: int
    why: str
    peak_gib: float | None = None
    gpu_gib: float | None = None
    step_s: float | None = None


@dataclass(frozen=True)
class WarmStartRecord:
    """`--warm-start`: the experiment the search started from, and how many of its trials seeded it."""

    source: str = field(metadata={"json": "from"})  # the key earlier versions wrote
    trials: int


@dataclass(frozen=True)
class Extension:
    """One `tuner extend`: the trials asked for and added, the search and its seed, when it started, and
    `previous_state`, the Ray state file that held every trial before it (the extension is a Ray run of
    its own in the same directory; the report reads the newest state and each of these:
    tuner/results/report.py)."""

    num_samples: int
    trials: int
    search: str
    seed: int
    started_at: float
    previous_state: str | None = None


@dataclass(frozen=True)
class ExperimentMeta:
    space: str  # the space's name
    params: list[str]  # the hyperparameters, nested groups flattened as group/name
    objective: Objective
    budget: Budget = field(default_factory=Budget)
    resources: Resources = field(default_factory=Resources)
    tuning: Tuning = field(default_factory=Tuning)  # the search and scheduler that ran (`auto` resolved)
    source: str = ""  # the space module's absolute path: resume loads it again
    model: str | None = None  # how the space names its parts: a shipped name, or "<function> (own)"
    dataset: str | None = None
    train_loop: str | None = None
    data_dir: str | None = None  # --data-dir, for resume
    seed: int = DEFAULT_SEED
    started_at: float | None = None  # time.time() when `tuner run` started it
    ended_at: float | None = None  # ... when the last run or resume of it ended; None while one runs
    unread_params_warning: str | None = None  # param_space keys no trial read
    total_trials: int | None = None  # the experiment's trials in all, started or not (None: before tuner recorded it)
    # What ended the latest run before every trial had ended, when it was --stop or the time budget, in
    # words ("val_acc>=0.5 reached by trial 1a2b3_00004"); None otherwise (every trial ended, or Ctrl-C)
    stopped_by: str | None = None
    gpus: GpuRecord | None = None  # the resolved gpus_per_worker is also in `resources`
    # The space's fixed keys as this experiment ran them (constants and --set pins): `tuner extend`
    # loads the module again and pins them as they were
    fixed: dict[str, Any] | None = None
    warm_start: WarmStartRecord | None = None
    extensions: list[Extension] = field(default_factory=list)  # each `tuner extend`, in order
    unknown: dict[str, Any] = field(default_factory=dict, compare=False)  # fields of a newer tuner

    def latest_run(self) -> "ExperimentMeta":
        """The record as the latest Ray run sees it: an extension's run has only its own trials."""
        if not self.extensions:
            return self
        return dataclasses.replace(self, total_trials=self.extensions[-1].trials)


_PLAIN = {f.name for f in dataclasses.fields(ExperimentMeta)} - set(GROUPS) - {"unknown"}


class Damaged(TunerError):
    """`tuner.json` cannot be read as what tuner wrote (cut short, edited, not JSON): `reason` says how.
    The commands add what they can still do; nothing rewrites the file."""

    def __init__(self, experiment_path: str, reason: str) -> None:
        self.experiment_path, self.reason = experiment_path, reason
        super().__init__(f"{filesystem.join(experiment_path, FILE)} is damaged ({reason})")


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value is of the field's declared type (the annotations of ExperimentMeta)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and all(_fits(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if dataclasses.is_dataclass(hint):  # a record: an object with its required keys, each of its type
        return isinstance(value, dict) and all(
            (_json_key(f) in value and _fits(value[_json_key(f)], f.type))
            if _required(f)
            else _fits(value.get(_json_key(f)), f.type)
            for f in dataclasses.fields(hint)
        )
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


_HINTS = typing.get_type_hints(ExperimentMeta)


def _json_key(record_field: dataclasses.Field[Any]) -> str:
    return str(record_field.metadata.get("json", record_field.name))


def _required(record_field: dataclasses.Field[Any]) -> bool:
    return record_field.default is dataclasses.MISSING and record_field.default_factory is dataclasses.MISSING


def _to_json(value: Any) -> Any:
    """A field's value as JSON holds it: records as objects under their JSON keys."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_json_key(f): _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_to_json(item) for item in value]
    return value


def _from_json(value: Any, hint: Any) -> Any:
    """A JSON value that `_fits` its field, as the field's type: objects become their records."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        records = [arg for arg in args if dataclasses.is_dataclass(arg)]
        return _from_json(value, records[0]) if records and isinstance(value, dict) else value
    if origin is list:
        return [_from_json(item, args[0]) for item in value]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        known = {_json_key(f): f for f in dataclasses.fields(hint)}
        return hint(
            **{known[key].name: _from_json(item, known[key].type) for key, item in value.items() if key in known}
        )
    return value


def to_record(meta: ExperimentMeta) -> dict[str, Any]:
    record = {name: _to_json(getattr(meta, name)) for name in sorted(_PLAIN)}
    record.update({group: as_record(getattr(meta, group)) for group in GROUPS})
    return {**meta.unknown, **record}


def from_json_record(record: dict[str, Any]) -> ExperimentMeta:
    """The record as `to_record` writes it, or as tuner wrote it before the groups (flat settings)."""
    groups = {}
    used = set(_PLAIN)
    for group, cls in GROUPS.items():
        nested = record.get(group)
        values = nested if isinstance(nested, dict) else record  # a flat file: the settings at the top
        groups[group] = from_record(cls, values)
        used |= {group} if isinstance(nested, dict) else {item.name for item in dataclasses.fields(cls)}
    plain = {key: _from_json(value, _HINTS[key]) for key, value in record.items() if key in _PLAIN}
    unknown = {key: value for key, value in record.items() if key not in used}
    return ExperimentMeta(**plain, **groups, unknown=unknown)


def write(experiment_path: str, meta: ExperimentMeta) -> None:
    filesystem.write_atomic(filesystem.join(experiment_path, FILE), json.dumps(to_record(meta), indent=2).encode())


def read(experiment_path: str) -> ExperimentMeta:
    """The record; `Damaged` when it is not one tuner wrote (an OSError when it cannot be read at all)."""
    data = filesystem.read_bytes(filesystem.join(experiment_path, FILE))
    try:
        record = json.loads(data)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError both
        raise Damaged(experiment_path, f"not JSON: {error}") from None
    if not isinstance(record, dict):
        raise Damaged(experiment_path, f"a JSON {type(record).__name__}, not an object")
    if missing := [name for name in ("space", "params") if name not in record]:
        raise Damaged(experiment_path, f"it has no {' or '.join(missing)}")
    for name in sorted(_PLAIN & set(record)):
        if not _fits(record[name], _HINTS[name]):
            shown = json.dumps(record[name])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise Damaged(experiment_path, f"{name} is {shown}, not {_type_name(_HINTS[name])}")
    try:
        return from_json_record(record)
    except TunerError as error:  # a setting out of its declared range
        raise Damaged(experiment_path, str(error)) from None
    except TypeError:  # a group without a setting it cannot do without
        raise Damaged(experiment_path, "its objective has no metric") from None


def _type_name(hint: Any) -> str:
    """`str`, `list[str]`, `float | None`: a field's type as the annotation writes it."""
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "").replace(f"{__name__}.", "")


def update(experiment_path: str, **changes: Any) -> None:
    """Read, change some fields, write back atomically."""
    write(experiment_path, dataclasses.replace(read(experiment_path), **changes))
