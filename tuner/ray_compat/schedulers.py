"""What tuner's recording schedulers (tuner/search/decisions.py) reach for inside Ray Tune 2.60's schedulers.

Ray keeps each decision's reasons inside its scheduler (the cutoff a rung compared with, the median of the
other trials' running means, the trials a halving kept, the donor of an exploit) and has no public API
for any of them; the recording schedulers subclass Ray's and read them where Ray keeps them. `REACHED_IN`
lists every private name they read, call or override, by the Ray class that has it;
tests/ray_compat/test_schedulers.py checks each against Ray's classes, so a Ray upgrade that moves one
fails there, by name, before any run. The reads that every recording scheduler shares are accessors here.
It can go when Ray's schedulers report their decisions (a callback or event per decision).
"""

from typing import Any

from ray.tune.schedulers import (
    AsyncHyperBandScheduler,
    HyperBandForBOHB,
    MedianStoppingRule,
    PopulationBasedTraining,
    async_hyperband,
    hyperband,
)

REACHED_IN: dict[type, tuple[str, ...]] = {
    AsyncHyperBandScheduler: (
        *("_time_attr", "_metric", "_mode", "_metric_op", "_trial_info", "_brackets", "_max_t"),
        *("_reduction_factor", "_stop_last_trials"),
    ),
    async_hyperband._Bracket: ("cutoff", "_rungs"),  # subclassed: `cutoff` overridden
    MedianStoppingRule: (
        *("_time_attr", "_metric", "_mode", "_stopped_trials", "_grace_period", "_min_samples_required"),
        *("_running_mean", "_trials_beyond_time", "_best_result"),
    ),
    HyperBandForBOHB: (
        *("_time_attr", "_metric", "_mode", "_metric_op", "_create_bracket", "_process_bracket"),
        *("_get_n0", "_get_r0", "_max_t_attr", "_eta", "_stop_last_trials"),
    ),
    hyperband._Bracket: ("successive_halving", "_cumul_r", "_live_trials"),  # subclassed: `successive_halving`
    PopulationBasedTraining: (
        *("_time_attr", "_metric", "_mode", "_metric_op", "_trial_state", "_hyperparam_mutations"),
        *("_checkpoint_or_exploit", "_get_new_config", "_exploit"),
    ),
}


def judged_by(scheduler: Any) -> tuple[str, str | None, str | None]:
    """The time attribute, metric and mode a Ray scheduler decides by (every one keeps them so)."""
    return scheduler._time_attr, scheduler._metric, scheduler._mode


def metric_sign(scheduler: Any) -> float:
    """1 for a maximised metric, -1 for a minimised one: Ray compares `sign * value` inside."""
    return float(scheduler._metric_op or 1.0)
