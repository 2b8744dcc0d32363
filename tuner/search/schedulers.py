"""`--scheduler`: which Ray Tune trial scheduler may stop, pause or perturb trials, with defaults
derived from the space: every budget is counted in epochs (Tune's training_iteration).

fifo       run every trial to the end (Ray's default).
asha       ASHAScheduler: max_t = epochs, grace period 1 epoch, reduction factor 3; with several
           objectives the same rungs ranked by Pareto front (tuner/search/pareto_asha.py).
hyperband  asynchronous HyperBand (Li et al., the ASHA paper): ASHAScheduler with the same budget and
           one bracket per HyperBand bracket, floor(log3(epochs)) + 1; HyperBandForBOHB under --search bohb
           (a searcher's `own_scheduler`, tuner/search/bohb.py).
median     MedianStoppingRule: stop a trial below the median of the others at the same epoch.
pbt        PopulationBasedTraining (synchronous): every epochs/4 epochs, the last excepted, the bottom
           quarter copies a top trial's checkpoint and perturbs the hyperparameters a space marks
           `pbt_mutable` (default: those of MUTABLE it searches over).

Each is Ray's own scheduler, subclassed to record its decisions (tuner/search/decisions.py) and, for
PBT, to let trials end after the last epoch.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ray.tune.schedulers import TrialScheduler
from ray.tune.search.sample import Domain

from tuner.errors import TunerError
from tuner.search.decisions import RecordingASHA, RecordingMedian, RecordingPBT
from tuner.settings.experiment import SCHEDULERS
from tuner.spec.param_space import is_grid

if TYPE_CHECKING:
    from tuner.search.base import Search

TIME_ATTR = "training_iteration"
REDUCTION_FACTOR = 3
# ASHA's (grace period, reduction factor) at every epoch budget: 1 and 3 at every budget measured, rather
# than a grace period that grows with the epochs. Evidence, at 27 epochs (rungs 1, 3, 9, 27), against the
# longer grace and the other factors:
# - bench/search_efficiency.py --epochs 27 --seeds 5 --asha-shapes 3:3 1:4 --shape-searches optuna
#   (digits CNN, 24 configs): optuna + ASHA (1, 3) spent 0.306 of grid's trial-epochs and reached grid's
#   best -0.5 pp in 4/5 seeds at a median 0.168; (3, 3), the grace period scaled to epochs / 9, spent
#   0.454 for 5/5 at 0.248; (1, 4) spent 0.262 but reached it in 3/5 only.
# - bench/synthetic_search.py --epochs 27 --seeds 20 --asha-shapes 1:2 1:4 3:3 9:3 (Hartmann-6): median
#   regret with optuna 0.294 (1, 3) at 1003 trial-epochs, 0.280 (3, 3) at 1206, 0.319 (1, 4) at 869,
#   0.349 (1, 2) at 1253, 0.370 (9, 3) at 1458; the 25-75 % ranges all overlap, so (1, 3) buys the
#   same regret for fewer epochs than a longer grace period.
# At 9 epochs (rungs 1, 3, 9) the same shape met the digits target in 5/5 seeds (README).
# Reruns of both the same day (README) reached it in fewer seeds (3/5 at 9 epochs; 4/5 random, 3/5 optuna
# at 27, where (3, 3) and (1, 4) reached it in 2/5): 5 seeds do not settle these rows.
ASHA_SHAPE = (1, REDUCTION_FACTOR)
# Fewer epochs than this leave ASHA (grace period 1) no second rung: it could only stop trials after
# their first epoch and promote the rest straight to the end, so --search auto keeps FIFO there.
ASHA_MIN_EPOCHS = REDUCTION_FACTOR
# Hyperparameters a checkpoint survives a change of: architecture keys (hidden, channels) change the
# weights' shapes and `optimizer` the optimiser state, so PBT cannot mutate those mid-training.
MUTABLE = ("lr", "weight_decay", "momentum", "batch_size", "dropout")


def hyperband_brackets(epochs: int) -> int:
    """HyperBand's s_max + 1 for a budget of `epochs` from a first rung of 1 epoch: bracket s stops trials
    first at 3^s epochs, and the last runs them all to the end (a rung at the budget stops nothing)."""
    brackets = 1
    while REDUCTION_FACTOR**brackets <= epochs:
        brackets += 1
    return brackets


def pbt_mutations(param_space: dict[str, Any], mutable: Sequence[str] | None = None) -> dict[str, Any]:
    """What PBT may perturb: the `mutable` keys (default MUTABLE) that the space searches over."""
    mutations: dict[str, Any] = {}
    for key in MUTABLE if mutable is None else mutable:
        value = param_space.get(key)
        if isinstance(value, Domain):
            mutations[key] = value
        elif is_grid(value) and len(value["grid_search"]) > 1:
            mutations[key] = list(value["grid_search"])
    return mutations


def check(scheduler: str, search: "Search", param_space: dict[str, Any], mutable: Sequence[str] | None = None) -> None:
    if scheduler not in SCHEDULERS:
        raise TunerError(f"unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}")
    if search.schedulers is not None and scheduler not in search.schedulers:
        raise TunerError(
            f"{search.name} runs with its own scheduler, under --scheduler {' or '.join(search.schedulers)} only; "
            f"drop --scheduler {scheduler} or use {search.schedulers[-1]}"
        )
    if scheduler == "pbt":
        if not search.under_pbt:  # Ray's PBT.on_trial_add raises ValueError at the first trial
            raise TunerError(
                f"pbt evolves a population that Ray's own generator draws, and Ray refuses it with a search "
                f"algorithm such as {search.name}; use --search random (or grid) with pbt, or --scheduler asha "
                f"with {search.name}"
            )
        if not pbt_mutations(param_space, mutable):
            names = ", ".join(MUTABLE if mutable is None else mutable)
            raise TunerError(
                f"pbt has nothing to mutate: give one of {names} a search domain "
                "(tune.loguniform, tune.choice, ...) in the space, or list others in pbt_mutable"
            )


def retires_checkpoints(scheduler: str) -> bool:
    """PBT hands a donor's checkpoint to a trial that may start much later, by which time a bounded
    retention would have deleted it; other schedulers only ever resume a trial from its own latest."""
    return scheduler != "pbt"


def stopping_notice(scheduler: str, objectives: Sequence[tuple[str, str]]) -> str | None:
    """With several objectives, the one line that says what the scheduler stops trials by: asha by Pareto
    front, the others (Ray's, which take one metric) by the primary objective."""
    if len(objectives) < 2 or scheduler == "fifo":
        return None
    if scheduler == "asha":
        return "asha compares trials at each rung by Pareto front: a trial is stopped only when others dominate it"
    metric, mode = objectives[0]
    return f"{scheduler} takes one metric: it stops trials by the primary objective, {metric} ({mode}), alone"


def trial_scheduler(
    scheduler: str,
    search: "Search",
    param_space: dict[str, Any],
    epochs: int,
    mutable: Sequence[str] | None = None,
    objectives: Sequence[tuple[str, str]] = (),
) -> TrialScheduler | None:
    """The scheduler for TuneConfig(scheduler=...); the combination is checked before, by `check`."""
    if (own := search.own_scheduler(epochs)) is not None:
        return own
    if scheduler == "asha" and len(objectives) > 1:
        from tuner.search.pareto_asha import ParetoASHA

        grace_period, reduction_factor = ASHA_SHAPE
        return ParetoASHA(objectives, max_t=epochs, grace_period=grace_period, reduction_factor=reduction_factor)
    if scheduler == "asha":
        grace_period, reduction_factor = ASHA_SHAPE
        return RecordingASHA(
            "asha", time_attr=TIME_ATTR, max_t=epochs, grace_period=grace_period, reduction_factor=reduction_factor
        )
    if scheduler == "hyperband":
        # Not Ray's HyperBandScheduler: it pauses a trial at a rung until its whole bracket gets there, and
        # paused trials keep their slots under the concurrency limit, so a bracket larger than the limit
        # never filled and nothing was stopped (bench/synthetic_search.py spent exactly fifo's trial-epochs).
        return RecordingASHA(
            "hyperband",
            time_attr=TIME_ATTR,
            max_t=epochs,
            grace_period=1,
            reduction_factor=REDUCTION_FACTOR,
            brackets=hyperband_brackets(epochs),
        )
    if scheduler == "median":
        return RecordingMedian(time_attr=TIME_ATTR, grace_period=1, min_samples_required=3)
    if scheduler == "pbt":
        return RecordingPBT(
            time_attr=TIME_ATTR,
            perturbation_interval=max(1, epochs // 4),
            last_epoch=epochs,
            hyperparam_mutations=pbt_mutations(param_space, mutable),
            quantile_fraction=0.25,
            # Synchronous, as in the PBT paper: trials are ranked at the same epoch, so who exploits
            # whom depends on the scores, not on which trial happened to report first.
            synch=True,
        )
    return None
