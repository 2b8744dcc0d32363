"""The extension point of `--scheduler`: one subclass of `Scheduler` per name, listed in
tuner/search/schedulers/__init__.py.

A subclass says what it cannot take in class-level flags, which `check` reads before Ray starts, and
builds Ray's scheduler in `build`. Nothing here imports Ray until `build`: `--search auto` and the checks
read the flags only.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tuner.errors import TunerError
from tuner.settings.experiment import Tuning

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler

    from tuner.search.base import Search


@dataclass(frozen=True)
class SchedulerRequest:
    """What a scheduler is built from (`Scheduler.build`)."""

    space: dict[str, Any]  # the space module's param_space
    epochs: int  # the budget: every trial's last epoch
    mutable: Sequence[str] | None = None  # the hyperparameters PBT may perturb (None: its default)
    objectives: Sequence[tuple[str, str]] = ()  # (metric, mode) pairs, the primary first


class Scheduler:
    """One `--scheduler` name. The flags' defaults are those of a scheduler that stops trials early."""

    name: ClassVar[str]
    stops_early: ClassVar[bool] = True  # fifo runs every trial to its last epoch
    # Why it takes only the configs Ray's own generator draws (random, grid), in words; None: it takes
    # any searcher. `--search auto` then picks random.
    model_search_refused: ClassVar[str | None] = None
    # Why it cannot run a space with conditions, in words; None: it can.
    conditions_refused: ClassVar[str | None] = None
    # Hands one trial's checkpoint to another trial (PBT's exploit), which may start much later: a bounded
    # checkpoint retention would have deleted it by then. Others resume a trial from its own latest only.
    shares_checkpoints: ClassVar[bool] = False

    def __init__(self, tuning: Tuning = Tuning()) -> None:
        self.tuning = tuning  # the settings, of which a scheduler reads its own (ASHA's shape)

    def check(self, search: "Search", param_space: dict[str, Any], mutable: Sequence[str] | None = None) -> None:
        """One line (TunerError) for a combination this scheduler cannot run, before Ray starts."""
        if search.schedulers is not None and self.name not in search.schedulers:
            raise TunerError(
                f"{search.name} runs with its own scheduler, under --scheduler {' or '.join(search.schedulers)} "
                f"only; drop --scheduler {self.name} or use {search.schedulers[-1]}"
            )
        if self.model_search_refused and not search.basic_variant:
            raise TunerError(
                f"{self.name} {self.model_search_refused}, and Ray refuses it with a search algorithm such as "
                f"{search.name}; use --search random (or grid) with {self.name}, or --scheduler asha with {search.name}"
            )

    def stopping_notice(self, objectives: Sequence[tuple[str, str]]) -> str | None:
        """With several objectives, the one line that says what this scheduler stops trials by: Ray's
        schedulers take one metric, so the primary objective alone."""
        if len(objectives) < 2 or not self.stops_early:
            return None
        metric, mode = objectives[0]
        return f"{self.name} takes one metric: it stops trials by the primary objective, {metric} ({mode}), alone"

    def build(self, request: SchedulerRequest) -> "TrialScheduler | None":
        """The scheduler for TuneConfig(scheduler=...) over `request.epochs` epochs (None: Ray's FIFO); the
        combination is checked before, by `check`."""
        raise NotImplementedError
