"""Space modules: plain Python files that declare one experiment, loaded and checked before Ray starts.

A space module sets module-level names (see README, "Writing a space module"):
required `model`, `dataset`, `metric`, `mode`, `param_space`; optional `num_samples`, `epochs`,
`workers`, `cpus_per_worker`, `gpus_per_worker`, `max_concurrent`, `search`, `scheduler`,
`time_budget`, `stop`, `description`.
"""

import dataclasses
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ray.tune.search.sample import Categorical, Domain, Float, Integer

from tuner.data import DATASETS
from tuner.errors import TunerError
from tuner import budgets, hyperparameters, schedulers, searchers
from tuner.hyperparameters import DEFAULTS
from tuner.models import MODELS
from tuner.metrics import METRICS

SPACES_DIR = Path(__file__).resolve().parent.parent / "search_spaces"
REQUIRED = ("model", "dataset", "metric", "mode", "param_space")


@dataclass(frozen=True)
class Space:
    name: str
    model: str
    dataset: str
    metric: str
    mode: str
    param_space: dict[str, Any]
    num_samples: int = 1
    epochs: int = 5
    workers: int = 1
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    max_concurrent: int | None = None
    search: str = "grid"
    scheduler: str = "fifo"
    time_budget: str | None = None  # e.g. "30m"
    stop: str | None = None  # e.g. "val_acc>=0.98"
    description: str = ""
    source: str = field(default="", compare=False)

    def with_overrides(self, fixed: dict[str, Any] | None = None, **fields: Any) -> "Space":
        """A copy with CLI overrides applied; `fixed` pins hyperparameters to one value."""
        given = {k: v for k, v in fields.items() if v is not None}
        space = dataclasses.replace(self, param_space={**self.param_space, **(fixed or {})}, **given)
        validate(space)
        return space


def available() -> list[str]:
    return sorted(p.stem for p in SPACES_DIR.glob("*.py") if not p.stem.startswith("_"))


def load(ref: str) -> Space:
    """Load a space by name (`digits_mlp`) or by path (`search_spaces/digits_mlp.py`)."""
    looks_like_path = ref.endswith(".py") or "/" in ref or "\\" in ref
    path = Path(ref) if looks_like_path else SPACES_DIR / f"{ref}.py"
    if not path.is_file() or (not looks_like_path and ref.startswith("_")):  # `_`: search_spaces' own files
        if looks_like_path:
            raise TunerError(f"space module {ref} does not exist; pass the path of a .py file")
        raise TunerError(f"unknown space {ref!r}; available: {', '.join(available())} (or pass a .py path)")
    module = _import(path)
    return from_module(module, name=path.stem, source=str(path))


def _import(path: Path) -> ModuleType:
    module_name = f"_tuner_space_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise TunerError(f"space module {path} has a syntax error at line {err.lineno}: {err.msg}") from None
    except Exception as err:  # the user's module code: any failure is theirs to fix
        raise TunerError(f"space module {path} failed to import: {type(err).__name__}: {err}") from None
    sys.modules.pop(module_name, None)
    return module


def from_module(module: ModuleType, name: str, source: str) -> Space:
    missing = [key for key in REQUIRED if not hasattr(module, key)]
    if missing:
        raise TunerError(f"space module {source} is missing {', '.join(missing)}; see README 'Writing a space module'")
    known = {f.name for f in dataclasses.fields(Space)} - {"name", "source"}
    values = {key: getattr(module, key) for key in known if hasattr(module, key)}
    space = Space(name=name, source=source, **values)
    validate(space)
    return space


def _fail(space: Space, problem: str) -> None:
    raise TunerError(f"space {space.name}: {problem}")


def validate(space: Space) -> None:
    # Names are looked up in registries: anything but a string (a list, say) is refused first.
    for key in ("model", "dataset", "metric", "mode", "search", "scheduler"):
        if not isinstance(getattr(space, key), str):
            _fail(space, f"{key} must be a string, not {getattr(space, key)!r}")
    for key, example in (("time_budget", "'30m'"), ("stop", "'val_acc>=0.98'")):
        if getattr(space, key) is not None and not isinstance(getattr(space, key), str):
            _fail(space, f"{key} must be a string such as {example}, not {getattr(space, key)!r}")
    if space.model not in MODELS:
        _fail(space, f"model {space.model!r} is unknown; choose one of {', '.join(MODELS)}")
    if space.dataset not in DATASETS:
        _fail(space, f"dataset {space.dataset!r} is unknown; choose one of {', '.join(DATASETS)}")
    if space.metric not in METRICS:
        _fail(space, f"metric {space.metric!r} is not reported; choose one of {', '.join(METRICS)}")
    if space.mode not in ("min", "max"):
        _fail(space, f"mode must be 'min' or 'max', not {space.mode!r}")
    for key, minimum in (("num_samples", 1), ("epochs", 1), ("workers", 1)):
        value = getattr(space, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            _fail(space, f"{key} must be an integer >= {minimum}, not {value!r}")
    if space.max_concurrent is not None and (not isinstance(space.max_concurrent, int) or space.max_concurrent < 1):
        _fail(space, f"max_concurrent must be an integer >= 1, not {space.max_concurrent!r}")
    if not isinstance(space.cpus_per_worker, (int, float)) or space.cpus_per_worker <= 0:
        _fail(space, f"cpus_per_worker must be a number > 0, not {space.cpus_per_worker!r}")
    if not isinstance(space.gpus_per_worker, (int, float)) or space.gpus_per_worker < 0:
        _fail(space, f"gpus_per_worker must be a number >= 0, not {space.gpus_per_worker!r}")
    _validate_param_space(space)
    try:
        searchers.check(space.search, space.param_space)
        schedulers.check(space.scheduler, space.search, space.param_space, space.workers)
        if space.time_budget is not None:
            budgets.parse_duration(space.time_budget)
        if space.stop is not None:
            budgets.parse_stop(space.stop)
    except TunerError as err:
        _fail(space, str(err))


def _validate_param_space(space: Space) -> None:
    if not isinstance(space.param_space, dict):
        _fail(space, f"param_space must be a dict, not {type(space.param_space).__name__}")
    for key, value in space.param_space.items():
        if key not in DEFAULTS:
            _fail(space, f"param_space key {key!r} is not a hyperparameter the loop uses; known: {', '.join(DEFAULTS)}")
        if isinstance(value, dict):
            if set(value) != {"grid_search"}:
                _fail(space, f"param_space[{key!r}] is a dict; use tune.grid_search([...]) for a grid axis")
            if not isinstance(value["grid_search"], (list, tuple)) or not value["grid_search"]:
                _fail(space, f"param_space[{key!r}] is an empty grid; give tune.grid_search at least one value")
        for candidate in _values(value):
            if (reason := hyperparameters.problem(key, candidate)) is not None:
                _fail(space, reason)


def _values(value: Any) -> list[Any]:
    """The values a param can take that are known up front: grid and choice values, range bounds."""
    if isinstance(value, dict):
        return list(value["grid_search"])
    if isinstance(value, Categorical):
        return list(value.categories)
    if isinstance(value, Integer):
        return [value.lower, value.upper - 1]  # tune.randint's upper bound is exclusive
    if isinstance(value, Float):
        return [value.lower, value.upper]
    if isinstance(value, Domain):
        return []  # e.g. tune.sample_from: only known once sampled
    return [value]
