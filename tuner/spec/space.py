"""Space modules: plain Python files that declare one experiment, loaded and checked before Ray starts.

A space module sets module-level names (see docs/space-modules.md): required `metric`,
`mode` (unless `metric` maps each metric to its mode), `param_space`, and either `model` and `dataset`
(tuner's loop trains them; optionally `loss`, `metrics`, `optimizer`) or `train_loop` (the module's
own loop; `dataset` optional). `model` and `dataset` may name a shipped one. Optional: any setting of
`tuner/settings/experiment.py` by its name (`epochs`, `workers`, `search`, ...), and `description`.

Nothing here imports torch or Ray: a mistake is named before either loads.
"""

import dataclasses
import errno
import functools
import importlib
import importlib.util
import inspect
import os
import site
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tuner.data import DATASETS
from tuner.errors import TunerError
from tuner.models import MODELS
from tuner.settings import GROUPS, Budget, Objective, Resources, Tuning
from tuner.settings.declaration import settings_of
from tuner.signatures import is_torchmetric, takes
from tuner.spec import conditions, hyperparameters
from tuner.spec.conditions import Conditions
from tuner.spec.param_space import is_grid, is_group, known_values

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
# What a module may define besides the settings (tuner/settings/experiment.py).
MODULE_NAMES = {"metric", "mode", "param_space", "conditions", "description", *SIGNATURES}


SETTING_NAMES = {item.name: group for group, cls in GROUPS.items() for item, _ in settings_of(cls)}


@dataclass(frozen=True)
class ExperimentSpec:
    """One experiment as a space module declares it, checked whenever it is built. Its settings are the
    groups of tuner/settings/experiment.py; `ExperimentSpec.of` builds one from flat names, as a
    module (or a Python caller) writes them."""

    name: str
    objective: Objective
    param_space: dict[str, Any]
    # When a key is searched at all, as the module declares it ({"momentum": {"optimizer": "sgd"}});
    # read and checked as `conditional` (tuner/spec/conditions.py).
    conditions: Mapping[str, Mapping[str, Any]] | None = None
    model: str | Callable[..., Any] | None = None
    dataset: str | Callable[..., Any] | None = None
    loss: Callable[..., Any] | None = None
    metrics: Callable[..., Any] | Mapping[str, Any] | None = None
    optimizer: Callable[..., Any] | None = None
    train_loop: Callable[..., Any] | None = None
    budget: Budget = field(default_factory=Budget)
    resources: Resources = field(default_factory=Resources)
    tuning: Tuning = field(default_factory=Tuning)
    description: str = ""
    source: str = field(default="", compare=False)
    # Modules the space module imported from its own folder: the execution stage has Ray pickle them by
    # value, since workers may not have that folder.
    local_modules: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        validate(self)

    @functools.cached_property
    def conditional(self) -> Conditions:
        """The checked conditions (falsy for a plain space); its `order` lists every key, parents first."""
        return conditions.read(self.conditions, self.param_space)

    @classmethod
    def of(cls, name: str, **values: Any) -> "ExperimentSpec":
        """A spec from flat names: `metric`, `mode`, `param_space`, the parts, and any setting by its name
        (`epochs=20`), as a space module declares them."""
        if missing := [key for key in REQUIRED if key not in values and not _mode_in_metric(key, values)]:
            raise TunerError(f"space {name}: give {', '.join(missing)}; see docs/space-modules.md")
        grouped: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
        rest = {}
        for key, value in values.items():
            if key in SETTING_NAMES:
                grouped[SETTING_NAMES[key]][key] = value
            else:
                rest[key] = value
        if unknown := sorted(set(rest) - MODULE_NAMES - {"source", "local_modules"}):
            known = ", ".join(sorted(MODULE_NAMES | set(SETTING_NAMES)))
            raise TunerError(f"space {name}: {', '.join(unknown)} is no name a space defines; those are {known}")
        try:
            groups = {group: GROUPS[group](**given) for group, given in grouped.items()}
        except TunerError as error:
            raise TunerError(f"space {name}: {error}") from None
        return cls(name=name, **groups, **rest)

    def with_overrides(self, fixed: dict[str, Any] | None = None, **settings: Any) -> "ExperimentSpec":
        """A copy with the command line's settings applied (None: not given); `fixed` (`--set`) pins
        hyperparameters to one value."""
        for key in fixed or {}:
            if key not in self.param_space and key not in hyperparameters.KNOWN:
                raise TunerError(
                    f"--set {key}: not a key of the space's param_space "
                    f"({', '.join(self.param_space) or 'empty'}) nor one tuner's loop reads "
                    f"({', '.join(hyperparameters.KNOWN)})"
                )
        if unknown := sorted(set(settings) - set(SETTING_NAMES)):
            raise TunerError(f"{', '.join(unknown)}: no such setting; the settings are {', '.join(SETTING_NAMES)}")
        changes: dict[str, Any] = {"param_space": {**self.param_space, **(fixed or {})}}
        for group in GROUPS:
            given = {key: value for key, value in settings.items() if value is not None and SETTING_NAMES[key] == group}
            if group == "objective":
                given = self.objective.overridden(given)
            if given:
                try:
                    changes[group] = dataclasses.replace(getattr(self, group), **given)
                except TunerError as error:
                    raise TunerError(f"space {self.name}: {error}") from None
        return dataclasses.replace(self, **changes)


def _mode_in_metric(key: str, values: Mapping[str, Any]) -> bool:
    """`metric = {"val_acc": "max", "latency_ms": "min"}` gives each objective's mode: no `mode` needed."""
    return key == "mode" and isinstance(values.get("metric"), Mapping)


def available() -> list[str]:
    return sorted(p.stem for p in SPACES_DIR.glob("*.py") if not p.stem.startswith("_"))


def load(ref: str) -> ExperimentSpec:
    """Load a space by name (`digits_mlp`) or by path (`search_spaces/digits_mlp.py`)."""
    looks_like_path = ref.endswith(".py") or "/" in ref or "\\" in ref
    path = Path(ref) if looks_like_path else SPACES_DIR / f"{ref}.py"
    if not looks_like_path and (ref.startswith("_") or not path.is_file()):  # `_`: search_spaces' own files
        if os.path.isfile(ref):  # a file here, given without a path: say what it is
            _check_source(Path(ref), ref)
        here = f"; {ref} here is a directory" if os.path.isdir(ref) else ""
        raise TunerError(f"unknown space {ref!r}; available: {', '.join(available())} (or pass a .py path{here})")
    _check_source(path, ref)
    module, local_modules = _import(path)
    return from_module(module, name=path.stem, source=str(path), local_modules=local_modules)


def _check_source(path: Path, ref: str) -> None:
    """Raises the one line that says why `path` is no space module, which is a readable .py file of
    Python source; the OS's reasons in its own words (from the errno). Checked before the import, whose
    own errors would blame a syntax error or a missing name."""
    try:
        kind = path.stat().st_mode
    except OSError as err:
        if err.errno == errno.ENOENT:
            raise TunerError(f"space module {ref} does not exist; pass the path of a .py file") from None
        raise TunerError(f"space module {ref} cannot be read: {os.strerror(err.errno or 0).lower()}") from None
    if stat.S_ISDIR(kind):
        raise TunerError(f"space module {ref} is a directory; pass the path of a .py file in it")
    if not stat.S_ISREG(kind):
        raise TunerError(f"space module {ref} is not a regular file (a device, a pipe, ...); pass a .py file")
    if path.suffix != ".py":
        raise TunerError(
            f"space module {ref} is not a Python module (its name does not end in .py); a space is a .py "
            "file, or the name of one in search_spaces/"
        )
    try:
        data = path.read_bytes()
    except OSError as err:
        raise TunerError(f"space module {ref} cannot be read: {os.strerror(err.errno or 0).lower()}") from None
    try:
        text = importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as err:  # an encoding Python can't read it in
        reason = err.msg if isinstance(err, SyntaxError) else str(err)
        raise TunerError(f"space module {ref} is not Python source text ({reason}); pass a .py file") from None
    if "\0" in text:
        raise TunerError(f"space module {ref} is binary (it holds NUL bytes), not Python source; pass a .py file")


def _import(path: Path) -> tuple[ModuleType, tuple[str, ...]]:
    """Runs the module; returns it and the modules it imported from its own folder. The module's own
    functions and classes (and those of the modules beside it) are pickled by value when trials are
    sent to workers, which may not have its folder."""
    module_name = f"_tuner_space_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None  # a .py file (_check_source)
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
    except SystemExit as exit_:  # exit() at the module's top level ended the import (and tuner, silently)
        raise TunerError(
            f"space module {path} called exit({exit_.code!r}) as it was imported; a space module defines the "
            'experiment, so run a script\'s own code under `if __name__ == "__main__":`'
        ) from None
    finally:
        sys.path.remove(folder)
        # Out of sys.modules, cloudpickle pickles the module's functions by value.
        sys.modules.pop(module_name, None)
    # Not what is installed, even where the venv sits in the module's folder (README's .venv beside a
    # space module of one's own) or the user's own site-packages does (`pip install --user`, a space
    # module in the home folder): sklearn pickled by value fails with a RecursionError.
    places = {sys.prefix, sys.exec_prefix, *site.getsitepackages(), site.getusersitepackages()}
    installed = [Path(place).resolve() for place in places]
    local = []
    for name in sorted(set(sys.modules) - before):
        beside = getattr(sys.modules[name], "__file__", None)
        if beside is None or "." in name:
            continue
        where = Path(beside).resolve()
        if where.is_relative_to(folder) and not any(where.is_relative_to(place) for place in installed):
            local.append(name)
    return module, tuple(local)


def from_module(module: ModuleType, name: str, source: str, local_modules: tuple[str, ...] = ()) -> ExperimentSpec:
    missing = [key for key in REQUIRED if not hasattr(module, key) and not _mode_in_metric(key, vars(module))]
    if not hasattr(module, "train_loop"):
        missing += [key for key in ("model", "dataset") if not hasattr(module, key)]
    if missing:
        own_loop = " (or a train_loop instead of model)" if "model" in missing else ""
        raise TunerError(f"space module {source} is missing {', '.join(missing)}{own_loop}; see docs/space-modules.md")
    known = MODULE_NAMES | set(SETTING_NAMES)
    values = {key: getattr(module, key) for key in known if hasattr(module, key)}
    return ExperimentSpec.of(name, source=source, local_modules=local_modules, **values)


def _fail(space: ExperimentSpec, problem: str) -> None:
    raise TunerError(f"space {space.name}: {problem}")


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
    """What a spec must be beyond each setting's own check (done when its group is built): parts that
    fit, a param_space tuner's parts can run, settings that fit together."""
    for group in GROUPS:
        if not isinstance(getattr(space, group), GROUPS[group]):
            _fail(space, f"{group} must be a {GROUPS[group].__name__}, not {getattr(space, group)!r}")
    _check_parallel(space)
    _check_parts(space)
    _validate_param_space(space)
    _check_pbt_mutable(space)


def _check_parallel(space: ExperimentSpec) -> None:
    resources = space.resources
    if resources.parallel == "dp":
        if resources.workers != 1:
            _fail(
                space,
                "parallel = 'dp' is one process over the trial's GPUs: set workers = 1 and "
                "gpus_per_worker = N, or use parallel = 'ddp' for several workers",
            )
        # `auto` gives a dp trial whole GPUs (tuner/execution/packing.py); the resolved spec is checked again.
        if not resources.gpus_auto and resources.gpus_per_worker < 1:  # type: ignore[operator]
            _fail(
                space,
                "parallel = 'dp' runs nn.DataParallel over GPUs: set gpus_per_worker to the trial's number "
                "of GPUs (>= 1), or use parallel = 'ddp' with workers = N on CPUs",
            )
    elif resources.workers > 1 and not resources.gpus_auto and 0 < resources.gpus_per_worker < 1:  # type: ignore[operator]
        # ray-project/ray#48012: NCCL refuses two ranks on one GPU ("Duplicate GPU detected").
        _fail(
            space,
            f"{resources.workers} workers with gpus_per_worker = {resources.gpus_per_worker:g} would put several "
            "NCCL ranks on one GPU, which NCCL refuses; give each worker a whole GPU (gpus_per_worker = 1), "
            "or share a GPU between trials instead: workers = 1 with gpus_per_worker = 0.25",
        )


def _check_pbt_mutable(space: ExperimentSpec) -> None:
    mutable = space.tuning.pbt_mutable
    if mutable is None:
        return
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
    try:
        space.conditional  # noqa: B018 (read once here, so a mistake is named before Ray starts)
    except TunerError as error:
        _fail(space, str(error))


def _validate_values(space: ExperimentSpec, params: dict[Any, Any], checked: set[str], prefix: str) -> None:
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            _fail(space, f"param_space keys are hyperparameter names; {prefix}{key!r} is not a non-empty string")
        if is_grid(value):
            if set(value) != {"grid_search"}:
                _fail(
                    space,
                    f"param_space[{prefix}{key!r}] mixes grid_search with other keys; use "
                    "tune.grid_search([...]) for a grid axis",
                )
            if not isinstance(value["grid_search"], (list, tuple)) or not value["grid_search"]:
                _fail(space, f"param_space[{prefix}{key!r}] is an empty grid; give tune.grid_search at least one value")
        elif is_group(value):
            _validate_values(space, value, set(), prefix=f"{prefix}{key}/")  # a nested group of hyperparameters
            continue
        if prefix or key not in checked:
            continue
        for candidate in known_values(value):
            if (reason := hyperparameters.problem(key, candidate)) is not None:
                _fail(space, reason)
