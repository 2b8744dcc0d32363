"""tuner: hyperparameter search for PyTorch on Ray Tune.

`python -m tuner run|resume|report|list|submit` is the command line. From Python:

    import tuner

    space = tuner.load_space("digits_mlp")           # a shipped name or a path to a space module
    outcome = tuner.run(space, tuner.RunOptions(name="first"))
    exp = tuner.load(outcome.experiment_path)       # the experiment in pandas, with its plots
    exp.best(), exp.trials, exp.history, exp.plot_learning_curves()

The package follows an experiment's path, one folder per stage: `spec/` (the space module, its checks
and overrides), `search/` (Ray Tune searchers and schedulers), `training/` (one trial's loop, torch
only), `execution/` (running trials on Ray), `storage/` (keeping results safe around Ray's storage),
`results/` (reports, plots, importance); `data/` and `models/` are the shipped datasets and models a
space module names. Names not listed in `__all__` are internal and may move.

Everything here is imported on first use, not with `import tuner`: the training loop imports tuner's
modules inside Ray's worker processes and must not pull Ray Tune in with them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = [
    "Experiment",
    "ExperimentSpec",
    "Outcome",
    "RunOptions",
    "SCORED",
    "TrialStatus",
    "TunerError",
    "load",
    "load_space",
    "resume",
    "run",
]

# public name -> (module, attribute)
_LOCATIONS = {
    "ExperimentSpec": ("tuner.spec.space", "ExperimentSpec"),
    "load_space": ("tuner.spec.space", "load"),
    "RunOptions": ("tuner.execution.experiment", "RunOptions"),
    "Outcome": ("tuner.execution.experiment", "Outcome"),
    "run": ("tuner.execution.experiment", "run"),
    "resume": ("tuner.execution.experiment", "resume"),
    "Experiment": ("tuner.results.analysis", "Experiment"),
    "load": ("tuner.results.analysis", "load"),
    "TrialStatus": ("tuner.results.status", "TrialStatus"),
    "SCORED": ("tuner.results.status", "SCORED"),
    "TunerError": ("tuner.errors", "TunerError"),
}

if TYPE_CHECKING:
    from tuner.errors import TunerError
    from tuner.execution.experiment import Outcome, RunOptions, resume, run
    from tuner.results.analysis import Experiment, load
    from tuner.results.status import SCORED, TrialStatus
    from tuner.spec.space import ExperimentSpec
    from tuner.spec.space import load as load_space


def __getattr__(name: str) -> Any:
    if name not in _LOCATIONS:
        raise AttributeError(f"module 'tuner' has no attribute {name!r}")
    module, attribute = _LOCATIONS[name]
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # the next lookup skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
