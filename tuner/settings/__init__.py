"""Every setting, declared once (`declaration.setting`): the experiment's (`experiment`: objective,
budget, resources, tuning) and the run's (`run`: storage, seed, cluster, output). The command line's
options, the checks a value gets, the defaults and `tuner.json`'s fields all come from these
declarations. Imports neither torch nor Ray, nor any stage of tuner: every stage may import it."""

from tuner.settings.experiment import GROUPS, Budget, Objective, Resources, Tuning
from tuner.settings.run import Cluster, RunOptions

__all__ = ["GROUPS", "Budget", "Cluster", "Objective", "Resources", "RunOptions", "Tuning"]
