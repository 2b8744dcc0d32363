"""Every private name of Ray's schedulers that tuner's recording schedulers read, call or override is
where tuner/ray_compat/schedulers.py says: on Ray's class, or on an instance as Ray builds it."""

import pytest
from ray.tune.schedulers import (
    AsyncHyperBandScheduler,
    HyperBandForBOHB,
    MedianStoppingRule,
    PopulationBasedTraining,
    async_hyperband,
    hyperband,
)

from tuner.ray_compat.schedulers import REACHED_IN, judged_by, metric_sign

# Each class as Ray builds it, with a metric and mode set as Tune sets them before the run.
BUILT = {
    AsyncHyperBandScheduler: lambda: AsyncHyperBandScheduler(metric="val_loss", mode="min", max_t=9),
    async_hyperband._Bracket: lambda: async_hyperband._Bracket(1, 9, 3, 0),
    MedianStoppingRule: lambda: MedianStoppingRule(metric="val_loss", mode="min"),
    HyperBandForBOHB: lambda: HyperBandForBOHB(metric="val_loss", mode="min", max_t=9),
    hyperband._Bracket: lambda: hyperband._Bracket("training_iteration", 3, 1, 9, 3, 0),
    PopulationBasedTraining: lambda: PopulationBasedTraining(
        metric="val_loss", mode="min", hyperparam_mutations={"lr": [0.1, 0.01]}
    ),
}


@pytest.mark.parametrize("cls", list(REACHED_IN), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_name_reached_for_is_where_ray_keeps_it(cls):
    built = BUILT[cls]()
    missing = [name for name in REACHED_IN[cls] if not hasattr(built, name)]
    assert not missing, f"Ray's {cls.__qualname__} has no {', '.join(missing)}: see tuner/ray_compat/schedulers.py"


def test_the_shared_reads_say_what_a_scheduler_decides_by():
    scheduler = BUILT[AsyncHyperBandScheduler]()
    assert judged_by(scheduler) == ("training_iteration", "val_loss", "min") and metric_sign(scheduler) == -1.0
    assert metric_sign(AsyncHyperBandScheduler(metric="val_acc", mode="max")) == 1.0
    assert metric_sign(AsyncHyperBandScheduler()) == 1.0  # before Tune sets a mode
