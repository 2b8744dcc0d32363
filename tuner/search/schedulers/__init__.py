"""`--scheduler`: which Ray Tune trial scheduler may stop, pause or perturb trials, with defaults
derived from the space: every budget is counted in epochs (Tune's training_iteration).

fifo       run every trial to the end (Ray's default).
asha       ASHAScheduler: max_t = epochs, grace period and reduction factor as the settings say (1 epoch
           and 3 by default: `asha_grace_period`, `asha_reduction_factor`); with several
           objectives the same rungs ranked by Pareto front (tuner/search/pareto_asha.py).
hyperband  asynchronous HyperBand (Li et al., the ASHA paper): ASHAScheduler with the same budget and
           one bracket per HyperBand bracket, floor(log3(epochs)) + 1; HyperBandForBOHB under --search bohb
           (a searcher's `own_scheduler`, tuner/search/bohb.py).
median     MedianStoppingRule: stop a trial below the median of the others at the same epoch.
pbt        PopulationBasedTraining (synchronous): every epochs/4 epochs, the last excepted, the bottom
           quarter copies a top trial's checkpoint and perturbs the hyperparameters a space marks
           `pbt_mutable` (default: those of MUTABLE it searches over).

`SCHEDULERS` is the table of these names, each one class (tuner/search/schedulers/base.py says what a class
holds), imported on first use like the searchers' table. Each builds Ray's own scheduler, subclassed to
record its decisions (tuner/search/decisions.py) and, for PBT, to let trials end after the last epoch.
"""

from typing import TYPE_CHECKING

from tuner.errors import TunerError
from tuner.lazy import resolve
from tuner.settings.experiment import SCHEDULERS as NAMES
from tuner.settings.experiment import Tuning

if TYPE_CHECKING:
    from tuner.search.schedulers.base import Scheduler

TIME_ATTR = "training_iteration"  # every budget counts epochs
REDUCTION_FACTOR = 3  # ASHA's, HyperBand's and BOHB's: a third of the trials go on at each rung

SCHEDULERS: dict[str, str] = {
    "fifo": "tuner.search.schedulers.fifo:FIFO",
    "asha": "tuner.search.schedulers.asha:ASHA",
    "hyperband": "tuner.search.schedulers.hyperband:HyperBand",
    "median": "tuner.search.schedulers.median:Median",
    "pbt": "tuner.search.schedulers.pbt:PBT",
}
assert tuple(SCHEDULERS) == NAMES, "every scheduler the settings name has a class here, and no other"

__all__ = ["SCHEDULERS", "scheduler"]


def scheduler(name: str, tuning: Tuning = Tuning()) -> "Scheduler":
    """The scheduler `name`, with the settings of `tuning` it takes (ASHA's shape)."""
    if name not in SCHEDULERS:
        raise TunerError(f"unknown scheduler {name!r}; choose one of {', '.join(NAMES)}")
    return resolve(SCHEDULERS[name])(tuning)
