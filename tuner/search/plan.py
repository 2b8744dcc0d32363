"""What an experiment's search will be, decided once before Ray starts: `plan(spec, seed)` resolves
`--search auto`, checks that the search, the scheduler and the space fit together, and returns the
searcher, the scheduler, the number of trials and the notices to print. The driver hands it to Ray
Tune as it is."""

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ray.tune.schedulers import TrialScheduler

from tuner.errors import TunerError
from tuner.search import auto, schedulers, search, warm_start
from tuner.search.base import Search, SearchRequest
from tuner.search.schedulers.base import Scheduler, SchedulerRequest
from tuner.search.space_counts import discrete_axes, distinct_configs, grid_points, limited
from tuner.settings import Budget, Objective, Tuning
from tuner.settings.experiment import MAX_TRIALS, TRIALS_WHY
from tuner.settings.kinds import AUTO
from tuner.spec.conditions import Conditions
from tuner.spec.space import ExperimentSpec


@dataclass(frozen=True)
class SearchPlan:
    tuning: Tuning  # the search and scheduler that run: `auto` resolved
    budget: Budget  # the spec's, with the num_samples `auto` picked
    num_samples: int  # Tune's num_samples: trials in all under random and the model-based searchers
    param_space: dict[str, Any]  # as the Tuner gets it (grid axes as choices where the searcher samples)
    scheduler: TrialScheduler | None
    notices: tuple[str, ...]  # one line each, printed before the first trial
    seed: int
    space: dict[str, Any]  # the space's own param_space, which the searcher draws from
    objective: Objective  # the objectives and constraints the searcher and the scheduler get
    warm: warm_start.WarmStart | None = None  # earlier trials the searcher starts from
    # The space's conditions; when there are any, the searcher carries the whole space (param_space is
    # empty) and needs the objective, which Tune would otherwise hand it with the param_space.
    conditions: Conditions = Conditions()

    @property
    def searcher(self) -> Search:
        return search(self.tuning.search)

    def search_algorithm(self, max_concurrent: int) -> Any:
        """The searcher for TuneConfig(search_alg=...), limited to `max_concurrent` trials at once
        (known once Ray says how many fit)."""
        request = SearchRequest(
            self.space,
            self.budget.num_samples if self.conditions else self.num_samples,
            self.seed,
            max_concurrent,
            self.warm,
            self.objective.objectives,
            self.objective.constraint_list,
            self.conditions,
        )
        if self.conditions:
            return limited(self.searcher.build_conditional(request), max_concurrent)
        return self.searcher.build(request)

    @property
    def total_trials(self) -> int:
        """Trials in all, as Tune counts them: num_samples of each grid point (the grid axes of the space
        the Tuner gets; a model-based searcher has none there)."""
        return self.num_samples * grid_points(self.param_space)


def plan(
    spec: ExperimentSpec, seed: int, earlier: warm_start.Earlier | None = None, extend: bool = False
) -> SearchPlan:
    """`earlier`: trials the search starts from (`--warm-start`, or the experiment itself for `extend`,
    where num_samples counts the trials to add)."""
    tuning, num_samples, notices = spec.tuning, spec.budget.num_samples, []
    conditions, objective = spec.conditional, spec.objective
    if tuning.search == AUTO:
        choice = auto.choose(
            spec.param_space, num_samples, tuning.scheduler, spec.budget.epochs, len(objective.objectives),
            conditions, constrained=bool(objective.constraint_list),
        )  # fmt: skip
        tuning = dataclasses.replace(tuning, search=choice.search, scheduler=choice.scheduler)
        num_samples = choice.num_samples
        notices.append(choice.reason)
    with _in_space(spec):
        searcher, stopping = search(tuning.search), schedulers.scheduler(tuning.scheduler, tuning)
        _check(spec, searcher, stopping, tuning, conditions)
        warm, already_run = _warm_start(spec, searcher, earlier, extend) if earlier is not None else (None, 0)
    notices += _notices(spec, searcher, stopping, num_samples, already_run, warm, extend)
    trials = searcher.trials(spec.param_space, num_samples, already_run, conditions)
    param_space = {} if conditions else searcher.tuner_space(spec.param_space)
    if (points := grid_points(param_space)) * trials > MAX_TRIALS:
        raise TunerError(
            f"space {spec.name}: {points * trials} trials in all ({points} grid points x {trials} samples), "
            f"more than {MAX_TRIALS}: {TRIALS_WHY}; search fewer grid values, or --search random over them"
        )
    scheduler = searcher.own_scheduler(spec.budget.epochs)
    if scheduler is None:  # the searcher brings none of its own (bohb does): the one asked for
        request = SchedulerRequest(spec.param_space, spec.budget.epochs, tuning.pbt_mutable, objective.objectives)
        scheduler = stopping.build(request)
    budget = dataclasses.replace(spec.budget, num_samples=num_samples)
    return SearchPlan(
        tuning, budget, trials, param_space, scheduler, tuple(notices), seed, spec.param_space, objective, warm,
        conditions,
    )  # fmt: skip


def _notices(
    spec: ExperimentSpec,
    searcher: Search,
    stopping: Scheduler,
    num_samples: int,
    already_run: int,
    warm: warm_start.WarmStart | None,
    extend: bool,
) -> list[str]:
    """The searcher's and the scheduler's one-line notices about this space, in the order they are printed."""
    objective = spec.objective
    said = (
        searcher.grid_notice(spec.param_space, num_samples, extend),
        searcher.space_notice(spec.param_space, num_samples, already_run, spec.conditional),
        warm.notice if warm is not None else None,
        searcher.constraints_notice(objective.constraint_list),
        stopping.stopping_notice(objective.objectives),
    )
    return [notice for notice in said if notice]


@contextmanager
def _in_space(spec: ExperimentSpec) -> Iterator[None]:
    """A refusal names the space it is about."""
    try:
        yield
    except TunerError as error:
        raise TunerError(f"space {spec.name}: {error}") from None


def _check(spec: ExperimentSpec, searcher: Search, stopping: Scheduler, tuning: Tuning, conditions: Conditions) -> None:
    """Each refusal from the searcher's flags and the scheduler's, before Ray starts."""
    searcher.check(spec.param_space, len(spec.objective.objectives), conditions)
    if conditions and stopping.conditions_refused:
        raise TunerError(f"{stopping.name} {stopping.conditions_refused}; use --scheduler asha, or drop the conditions")
    stopping.check(searcher, spec.param_space, tuning.pbt_mutable)


def _warm_start(
    spec: ExperimentSpec, searcher: Search, earlier: warm_start.Earlier, extend: bool
) -> tuple[warm_start.WarmStart, int]:
    """The earlier trials fitted to the space, and how many of its configs they already ran."""
    if spec.conditional and not searcher.conditional_warm_start:
        # grid and random hand out configs decided up front, which do not yet skip the earlier ones.
        raise TunerError(
            f"{'tuner extend' if extend else '--warm-start'} over a space with conditions takes --search optuna "
            f"(TPE), which learns from the earlier trials' active keys; {searcher.name} does not"
        )
    axes = discrete_axes(spec.param_space)
    searcher.check_warm_start(finite=axes is not None, extend=extend)
    warm = warm_start.fit(earlier, searcher.tuner_space(spec.param_space))
    if searcher.warm_best_first and not extend:
        warm = dataclasses.replace(warm, best_first=True, notice=f"{warm.notice}; its best config runs first")
    already_run = searcher.already_run(spec.param_space, warm)
    if axes is not None and already_run and already_run >= distinct_configs(axes):
        raise TunerError(
            f"every one of the space's {already_run} configs has run in {earlier.source}; "
            "nothing is left to draw (widen the space, or use --search optuna over ranges)"
        )
    return warm, already_run
