"""`<experiment>/tuner.json`: what tuner knows of an experiment that Ray's own state does not keep (the
space module to load again on resume, the metric the reports rank by, the parameters shown as columns),
read and written here only, as one typed record.

Files written by older versions lack some fields: those take the defaults below, which are what those
versions did (e.g. `parallel` came later; before it every multi-worker trial was ddp). Fields this
version does not know, from a newer one, are kept when the record is written back.
"""

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from tuner.storage import filesystem

FILE = filesystem.META_FILE


@dataclass(frozen=True)
class ExperimentMeta:
    space: str  # the space's name
    metric: str
    mode: str  # "min" or "max"
    params: list[str]  # the hyperparameters, nested groups flattened as group/name
    epochs: int
    source: str = ""  # the space module's absolute path: resume loads it again
    model: str | None = None  # how the space names its parts: a shipped name, or "<function> (own)"
    dataset: str | None = None
    train_loop: str | None = None
    data_dir: str | None = None  # --data-dir, for resume
    num_samples: int = 1
    workers: int = 1
    parallel: str = "ddp"
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    search: str = "grid"
    scheduler: str = "fifo"
    seed: int = 0
    started_at: float | None = None  # time.time() when `tuner run` started it
    ended_at: float | None = None  # ... when the last run or resume of it ended; None while one runs
    unread_params_warning: str | None = None  # param_space keys no trial read
    unknown: dict[str, Any] = field(default_factory=dict, compare=False)  # fields of a newer tuner


_FIELDS = {f.name for f in dataclasses.fields(ExperimentMeta)} - {"unknown"}


def write(experiment_path: str, meta: ExperimentMeta) -> None:
    record = {name: getattr(meta, name) for name in sorted(_FIELDS)}
    filesystem.write_atomic(f"{experiment_path}/{FILE}", json.dumps({**meta.unknown, **record}, indent=2).encode())


def read(experiment_path: str) -> ExperimentMeta:
    record = json.loads(filesystem.read_bytes(f"{experiment_path}/{FILE}"))
    known = {key: value for key, value in record.items() if key in _FIELDS}
    unknown = {key: value for key, value in record.items() if key not in _FIELDS}
    return ExperimentMeta(**known, unknown=unknown)


def update(experiment_path: str, **changes: Any) -> None:
    """Read, change some fields, write back atomically."""
    write(experiment_path, dataclasses.replace(read(experiment_path), **changes))
