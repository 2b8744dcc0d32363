"""tuner: hyperparameter search for PyTorch on Ray Tune.

`python -m tuner run|resume|extend|report|list|submit` is the command line. From Python:

    import tuner

    space = tuner.load_space("digits_mlp")           # a shipped name or a path to a space module
    outcome = tuner.run(space, tuner.RunOptions(name="first"))
    exp = tuner.load(outcome.experiment_path)       # the experiment in pandas, with its plots
    exp.best(), exp.trials, exp.history, exp.plot_learning_curves()

The package follows an experiment's path, one folder per stage, each importing only the stages before
it: `spec/` (the space module and its checks), `search/` (the search plan: Ray Tune's searchers and
schedulers), `training/` (one trial's loop, torch only), `storage/` (experiment directories, tuner.json,
keeping results safe around Ray's storage), `execution/` (running trials on Ray), `results/` (reports,
plots, importance). `driver.py` runs them in order. Beside the stages: `settings/` (every setting,
declared once), `ray_compat/` (every workaround of Ray's behaviour), `data/` and `models/` (the shipped
datasets and models a space module names). Names not listed in `__all__` are internal and may move.

Everything here is imported on first use, not with `import tuner`: the training loop imports tuner's
modules inside Ray's worker processes and must not pull Ray Tune in with them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from tuner import environment  # noqa: F401  (first: its copy of the environment is the user's own)

__all__ = [
    "Budget",
    "Cluster",
    "Experiment",
    "ExperimentSpec",
    "Objective",
    "Outcome",
    "Resources",
    "RunOptions",
    "SCORED",
    "TrialStatus",
    "Tuning",
    "TunerError",
    "extend",
    "load",
    "load_space",
    "resume",
    "run",
]

# public name -> (module, attribute)
_LOCATIONS = {
    "ExperimentSpec": ("tuner.spec.space", "ExperimentSpec"),
    "load_space": ("tuner.spec.space", "load"),
    "RunOptions": ("tuner.settings.run", "RunOptions"),
    "Cluster": ("tuner.settings.run", "Cluster"),
    "Objective": ("tuner.settings.experiment", "Objective"),
    "Budget": ("tuner.settings.experiment", "Budget"),
    "Resources": ("tuner.settings.experiment", "Resources"),
    "Tuning": ("tuner.settings.experiment", "Tuning"),
    "Outcome": ("tuner.results.outcome", "Outcome"),
    "run": ("tuner.driver", "run"),
    "resume": ("tuner.driver", "resume"),
    "extend": ("tuner.driver", "extend"),
    "Experiment": ("tuner.results.analysis", "Experiment"),
    "load": ("tuner.results.analysis", "load"),
    "TrialStatus": ("tuner.trial_status", "TrialStatus"),
    "SCORED": ("tuner.trial_status", "SCORED"),
    "TunerError": ("tuner.errors", "TunerError"),
}

if TYPE_CHECKING:
    from tuner.driver import extend, resume, run
    from tuner.errors import TunerError
    from tuner.results.analysis import Experiment, load
    from tuner.results.outcome import Outcome
    from tuner.settings.experiment import Budget, Objective, Resources, Tuning
    from tuner.settings.run import Cluster, RunOptions
    from tuner.spec.space import ExperimentSpec
    from tuner.spec.space import load as load_space
    from tuner.trial_status import SCORED, TrialStatus


def __getattr__(name: str) -> Any:
    if name not in _LOCATIONS:
        raise AttributeError(f"module 'tuner' has no attribute {name!r}")
    module, attribute = _LOCATIONS[name]
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # the next lookup skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
