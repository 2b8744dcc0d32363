"""Space modules: plain Python files that declare one experiment, loaded and checked before Ray starts.

A space module sets module-level names (see README, "Writing a space module"): required `metric`,
`mode`, `param_space`, and either `model` and `dataset` (tuner's loop trains them; optionally `loss`,
`metrics`, `optimizer`) or `train_loop` (the module's own loop; `dataset` optional). `model` and
`dataset` may name a shipped one. Optional: `num_samples`, `epochs`, `workers`, `parallel`,
`cpus_per_worker`, `gpus_per_worker`, `max_concurrent`, `search`, `scheduler`, `time_budget`, `stop`, `pbt_mutable`,
`description`.
"""

import dataclasses
import importlib
import importlib.util
import inspect
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import ray.cloudpickle
from ray.tune.search.sample import Categorical, Domain, Float, Integer

from tuner.data import DATASETS
from tuner.errors import TunerError
from tuner.models import MODELS
from tuner.search import schedulers, searchers
from tuner.spec import budgets, hyperparameters
from tuner.spec.signatures import is_torchmetric, takes
from tuner.training import parallel

SPACES_DIR = Path(__file__).resolve().parents[2] / "search_spaces"
REQUIRED = ("metric", "mode", "param_space")
# The parts of tuner's loop a module may bring, and how each is called.
SIGNATURES: dict[str, tuple[tuple[int, ...], str]] = {
    "model": ((1, 2), "model(config) or model(config, data)"),
    "dataset": ((0, 1), "dataset() or dataset(config)"),
    "loss": ((2,), "loss(outputs, targets)"),
    "metrics": ((2,), "metrics(outputs, targets)"),
    "optimizer": ((2,), "optimizer(config, params)"),
    "train_loop": ((2,), "train_loop(config, ctx)"),
}
LOOP_PARTS = ("model", "loss", "metrics", "optimizer")  # what an own train_loop replaces


@dataclass(frozen=True)
class ExperimentSpec:
    """One experiment as a space module declares it, checked (`validate`) whenever it is built."""

    name: str
    metric: str
    mode: str
    param_space: dict[str, Any]
    model: str | Callable[..., Any] | None = None
    dataset: str | Callable[..., Any] | None = None
    loss: Callable[..., Any] | None = None
    metrics: Callable[..., Any] | Mapping[str, Any] | None = None
    optimizer: Callable[..., Any] | None = None
    train_loop: Callable[..., Any] | None = None
    num_samples: int = 1
    epochs: int = 5
    workers: int = 1
    parallel: str = parallel.DEFAULT  # how a trial spreads over its workers or GPUs: tuner.training.parallel
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    max_concurrent: int | None = None
    search: str = "grid"
    scheduler: str = "fifo"
    time_budget: str | None = None  # e.g. "30m"
    stop: str | None = None  # e.g. "val_acc>=0.98"
    pbt_mutable: list[str] | None = None  # default: schedulers.MUTABLE
    description: str = ""
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        validate(self)

    def with_overrides(self, fixed: dict[str, Any] | None = None, **fields: Any) -> "ExperimentSpec":
        """A copy with CLI overrides applied; `fixed` (`--set`) pins hyperparameters to one value."""
        for key in fixed or {}:
            if key not in self.param_space and key not in hyperparameters.KNOWN:
                raise TunerError(
                    f"--set {key}: not a key of the space's param_space "
                    f"({', '.join(self.param_space) or 'empty'}) nor one tuner's loop reads "
                    f"({', '.join(hyperparameters.KNOWN)})"
                )
        given = {k: v for k, v in fields.items() if v is not None}
        return dataclasses.replace(self, param_space={**self.param_space, **(fixed or {})}, **given)


def available() -> list[str]:
    return sorted(p.stem for p in SPACES_DIR.glob("*.py") if not p.stem.startswith("_"))


def load(ref: str) -> ExperimentSpec:
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
    """Runs the module. Its own functions and classes (and those of modules it imports from its own
    folder) are pickled by value when trials are sent to workers, which may not have its folder."""
    module_name = f"_tuner_space_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    before = set(sys.modules)
    sys.modules[module_name] = module  # e.g. a @dataclass in the module looks itself up there
    sys.path.insert(0, folder)  # `import helpers` finds a helpers.py beside the module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise TunerError(f"space module {path} has a syntax error at line {err.lineno}: {err.msg}") from None
    except Exception as err:  # the user's module code: any failure is theirs to fix
        raise TunerError(f"space module {path} failed to import: {type(err).__name__}: {err}") from None
    finally:
        sys.path.remove(folder)
        # Out of sys.modules, cloudpickle pickles the module's functions by value.
        sys.modules.pop(module_name, None)
    for name in set(sys.modules) - before:
        beside = getattr(sys.modules[name], "__file__", None)
        if beside and Path(beside).resolve().is_relative_to(folder) and "." not in name:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])
    return module


def from_module(module: ModuleType, name: str, source: str) -> ExperimentSpec:
    missing = [key for key in REQUIRED if not hasattr(module, key)]
    if not hasattr(module, "train_loop"):
        missing += [key for key in ("model", "dataset") if not hasattr(module, key)]
    if missing:
        own_loop = " (or a train_loop instead of model)" if "model" in missing else ""
        raise TunerError(
            f"space module {source} is missing {', '.join(missing)}{own_loop}; see README 'Writing a space module'"
        )
    known = {f.name for f in dataclasses.fields(ExperimentSpec)} - {"name", "source"}
    values = {key: getattr(module, key) for key in known if hasattr(module, key)}
    return ExperimentSpec(name=name, source=source, **values)


def _fail(space: ExperimentSpec, problem: str) -> None:
    raise TunerError(f"space {space.name}: {problem}")


def _number(value: Any) -> bool:
    """A finite int or float: True is no count, and nan or inf no share of a machine."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _signature(function: Callable[..., Any]) -> str:
    try:
        return f"{getattr(function, '__name__', type(function).__name__)}{inspect.signature(function)}"
    except (TypeError, ValueError):
        return repr(function)


def _check_callable(space: ExperimentSpec, key: str, value: Any, registry: dict[str, str] | None = None) -> None:
    counts, form = SIGNATURES[key]
    if isinstance(value, str) and registry is not None:
        if value not in registry:
            _fail(space, f"{key} {value!r} is unknown; choose one of {', '.join(registry)}, or define {form}")
        return
    if not callable(value):
        shipped = f"a shipped name ({', '.join(registry)}) or " if registry else ""
        _fail(space, f"{key} must be {shipped}a function {form}, not {value!r}")
    if takes(value, counts) is None:
        _fail(space, f"{key} is {_signature(value)}; define it as {form}")


def _check_metrics(space: ExperimentSpec) -> None:
    metrics = space.metrics
    if isinstance(metrics, Mapping):
        for name, value in metrics.items():
            if not isinstance(name, str):
                _fail(space, f"metrics keys are the names reported; {name!r} is not a string")
            if is_torchmetric(value):
                continue
            if not callable(value):
                _fail(
                    space,
                    f"metrics[{name!r}] must be a torchmetrics Metric or a function (outputs, targets), not {value!r}",
                )
            _check_callable(space, "metrics", value)
    elif metrics is not None:
        _check_callable(space, "metrics", metrics)


def _check_parts(space: ExperimentSpec) -> None:
    if space.train_loop is not None:
        _check_callable(space, "train_loop", space.train_loop)
        given = [key for key in LOOP_PARTS if getattr(space, key) is not None]
        if given:
            pronoun = "it" if len(given) == 1 else "them"
            _fail(
                space,
                f"a train_loop trains its own model, so {', '.join(given)} would be ignored; remove "
                f"{pronoun} (or rename, if the loop calls {pronoun})",
            )
    elif space.model is None or space.dataset is None:
        _fail(space, "give model and dataset, or a train_loop")
    else:
        _check_callable(space, "model", space.model, MODELS)
    if space.dataset is not None:
        _check_callable(space, "dataset", space.dataset, DATASETS)
    for key in ("loss", "optimizer"):
        if getattr(space, key) is not None:
            _check_callable(space, key, getattr(space, key))
    _check_metrics(space)


def validate(space: ExperimentSpec) -> None:
    for key in ("metric", "mode", "search", "scheduler"):
        if not isinstance(getattr(space, key), str):
            _fail(space, f"{key} must be a string, not {getattr(space, key)!r}")
    for key, example in (("time_budget", "'30m'"), ("stop", "'val_acc>=0.98'")):
        if getattr(space, key) is not None and not isinstance(getattr(space, key), str):
            _fail(space, f"{key} must be a string such as {example}, not {getattr(space, key)!r}")
    if not space.metric.strip():
        _fail(space, "metric must name a reported metric, such as 'val_loss'")
    if space.mode not in ("min", "max"):
        _fail(space, f"mode must be 'min' or 'max', not {space.mode!r}")
    for key, minimum in (("num_samples", 1), ("epochs", 1), ("workers", 1)):
        value = getattr(space, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            _fail(space, f"{key} must be an integer >= {minimum}, not {value!r}")
    if space.max_concurrent is not None and (
        not isinstance(space.max_concurrent, int) or isinstance(space.max_concurrent, bool) or space.max_concurrent < 1
    ):
        _fail(space, f"max_concurrent must be an integer >= 1, not {space.max_concurrent!r}")
    if not _number(space.cpus_per_worker) or space.cpus_per_worker <= 0:
        _fail(space, f"cpus_per_worker must be a number > 0, not {space.cpus_per_worker!r}")
    if not _number(space.gpus_per_worker) or space.gpus_per_worker < 0:
        _fail(space, f"gpus_per_worker must be a number >= 0, not {space.gpus_per_worker!r}")
    _check_parallel(space)
    _check_parts(space)
    _validate_param_space(space)
    _check_pbt_mutable(space)
    try:
        searchers.check(space.search, space.param_space)
        schedulers.check(space.scheduler, space.search, space.param_space, space.pbt_mutable)
        if space.time_budget is not None:
            budgets.parse_duration(space.time_budget)
        if space.stop is not None:
            budgets.parse_stop(space.stop)
    except TunerError as err:
        _fail(space, str(err))


def _check_parallel(space: ExperimentSpec) -> None:
    if space.parallel not in parallel.STRATEGIES:
        _fail(space, f"parallel must be one of {', '.join(parallel.STRATEGIES)}, not {space.parallel!r}")
    if space.parallel == "dp":
        if space.workers != 1:
            _fail(
                space,
                "parallel = 'dp' is one process over the trial's GPUs: set workers = 1 and "
                "gpus_per_worker = N, or use parallel = 'ddp' for several workers",
            )
        if space.gpus_per_worker < 1:
            _fail(
                space,
                "parallel = 'dp' runs nn.DataParallel over GPUs: set gpus_per_worker to the trial's number "
                "of GPUs (>= 1), or use parallel = 'ddp' with workers = N on CPUs",
            )
    elif space.workers > 1 and 0 < space.gpus_per_worker < 1:
        # ray-project/ray#48012: NCCL refuses two ranks on one GPU ("Duplicate GPU detected").
        _fail(
            space,
            f"{space.workers} workers with gpus_per_worker = {space.gpus_per_worker:g} would put several "
            "NCCL ranks on one GPU, which NCCL refuses; give each worker a whole GPU (gpus_per_worker = 1), "
            "or share a GPU between trials instead: workers = 1 with gpus_per_worker = 0.25",
        )


def _check_pbt_mutable(space: ExperimentSpec) -> None:
    mutable = space.pbt_mutable
    if mutable is None:
        return
    if not isinstance(mutable, (list, tuple)) or not all(isinstance(key, str) for key in mutable):
        _fail(space, f"pbt_mutable must be a list of param_space keys, not {mutable!r}")
    if absent := [key for key in mutable if key not in space.param_space]:
        _fail(space, f"pbt_mutable names {', '.join(absent)}, which param_space does not search over")


def _validate_param_space(space: ExperimentSpec) -> None:
    if not isinstance(space.param_space, dict):
        _fail(space, f"param_space must be a dict, not {type(space.param_space).__name__}")
    checked = hyperparameters.checked(
        own_loop=space.train_loop is not None,
        own_optimizer=space.optimizer is not None,
        shipped_model=isinstance(space.model, str),
    )
    _validate_values(space, space.param_space, checked, prefix="")


def _validate_values(space: ExperimentSpec, params: dict[Any, Any], checked: set[str], prefix: str) -> None:
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            _fail(space, f"param_space keys are hyperparameter names; {prefix}{key!r} is not a non-empty string")
        if isinstance(value, dict) and "grid_search" in value:
            if set(value) != {"grid_search"}:
                _fail(
                    space,
                    f"param_space[{prefix}{key!r}] mixes grid_search with other keys; use "
                    "tune.grid_search([...]) for a grid axis",
                )
            if not isinstance(value["grid_search"], (list, tuple)) or not value["grid_search"]:
                _fail(space, f"param_space[{prefix}{key!r}] is an empty grid; give tune.grid_search at least one value")
        elif isinstance(value, dict):
            _validate_values(space, value, set(), prefix=f"{prefix}{key}/")  # a nested group of hyperparameters
            continue
        if prefix or key not in checked:
            continue
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


def flat_keys(params: dict[str, Any], prefix: str = "") -> list[str]:
    """The hyperparameter names as the reports show them: nested groups flattened as `group/name`."""
    keys = []
    for key, value in params.items():
        if isinstance(value, dict) and "grid_search" not in value:
            keys += flat_keys(value, prefix=f"{prefix}{key}/")
        else:
            keys.append(f"{prefix}{key}")
    return sorted(keys)
