"""`--scheduler pbt`: Ray's PopulationBasedTraining, synchronous, recording its exploits: every epochs/4
epochs, the last excepted, the bottom quarter copies a top trial's checkpoint and perturbs the
hyperparameters a space marks `pbt_mutable` (default: those of MUTABLE it searches over)."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tuner.errors import TunerError
from tuner.search.schedulers import TIME_ATTR
from tuner.search.schedulers.base import Scheduler, SchedulerRequest
from tuner.spec.param_space import is_grid

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler

    from tuner.search.base import Search

# Hyperparameters a checkpoint survives a change of: architecture keys (hidden, channels) change the
# weights' shapes and `optimizer` the optimiser state, so PBT cannot mutate those mid-training.
MUTABLE = ("lr", "weight_decay", "momentum", "batch_size", "dropout")


def pbt_mutations(param_space: dict[str, Any], mutable: Sequence[str] | None = None) -> dict[str, Any]:
    """What PBT may perturb: the `mutable` keys (default MUTABLE) that the space searches over."""
    from ray.tune.search.sample import Domain

    mutations: dict[str, Any] = {}
    for key in MUTABLE if mutable is None else mutable:
        value = param_space.get(key)
        if isinstance(value, Domain):
            mutations[key] = value
        elif is_grid(value) and len(value["grid_search"]) > 1:
            mutations[key] = list(value["grid_search"])
    return mutations


class PBT(Scheduler):
    name = "pbt"
    # Ray's PBT.on_trial_add raises ValueError at the first trial under a SearchGenerator; and its
    # mutations would mislead a model of the configs anyway.
    model_search_refused = "evolves a population that Ray's own generator draws"
    conditions_refused = "mutates each hyperparameter on its own, which conditions cannot follow"
    shares_checkpoints = True

    def check(self, search: "Search", param_space: dict[str, Any], mutable: Sequence[str] | None = None) -> None:
        super().check(search, param_space, mutable)
        if not pbt_mutations(param_space, mutable):
            names = ", ".join(MUTABLE if mutable is None else mutable)
            raise TunerError(
                f"pbt has nothing to mutate: give one of {names} a search domain "
                "(tune.loguniform, tune.choice, ...) in the space, or list others in pbt_mutable"
            )

    def build(self, request: SchedulerRequest) -> "TrialScheduler | None":
        from tuner.search.decisions import RecordingPBT

        return RecordingPBT(
            time_attr=TIME_ATTR,
            perturbation_interval=max(1, request.epochs // 4),
            last_epoch=request.epochs,
            hyperparam_mutations=pbt_mutations(request.space, request.mutable),
            quantile_fraction=0.25,
            # Synchronous, as in the PBT paper: trials are ranked at the same epoch, so who exploits
            # whom depends on the scores, not on which trial happened to report first.
            synch=True,
        )
