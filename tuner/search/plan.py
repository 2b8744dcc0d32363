"""What an experiment's search will be, decided once before Ray starts: `plan(spec, seed)` resolves
`--search auto`, checks that the search, the scheduler and the space fit together, and returns the
searcher, the scheduler, the number of trials and the notices to print. The driver hands it to Ray
Tune as it is."""

import dataclasses
from dataclasses import dataclass
from typing import Any

from ray.tune.schedulers import TrialScheduler

from tuner.errors import TunerError
from tuner.search import conditional, schedulers, searchers, warm_start
from tuner.settings import Budget, Objective, Tuning
from tuner.settings.experiment import MAX_TRIALS, TRIALS_WHY
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

    def search_algorithm(self, max_concurrent: int) -> Any:
        """The searcher for TuneConfig(search_alg=...), limited to `max_concurrent` trials at once
        (known once Ray says how many fit)."""
        if self.conditions:
            searcher = conditional.search_algorithm(
                self.tuning.search,
                self.space,
                self.conditions,
                self.budget.num_samples,
                self.seed,
                self.objective.metric,
                self.objective.mode,
            )
            return searchers.limited(searcher, max_concurrent)
        return searchers.search_algorithm(
            self.tuning.search,
            self.space,
            self.num_samples,
            self.seed,
            max_concurrent,
            warm=self.warm,
            objectives=self.objective.objectives,
            constraints=self.objective.constraint_list,
        )

    @property
    def total_trials(self) -> int:
        """Trials in all, as Tune counts them: num_samples of each grid point (the grid axes of the space
        the Tuner gets; a model-based searcher has none there)."""
        return self.num_samples * searchers.grid_points(self.param_space)


def plan(
    spec: ExperimentSpec, seed: int, earlier: warm_start.Earlier | None = None, extend: bool = False
) -> SearchPlan:
    """`earlier`: trials the search starts from (`--warm-start`, or the experiment itself for `extend`,
    where num_samples counts the trials to add)."""
    tuning, num_samples, notices = spec.tuning, spec.budget.num_samples, []
    conditions = spec.conditional
    if tuning.search == "auto":
        choice = searchers.choose(
            spec.param_space,
            num_samples,
            tuning.scheduler,
            spec.budget.epochs,
            len(spec.objective.objectives),
            conditions,
        )
        tuning = Tuning(search=choice.search, scheduler=choice.scheduler, pbt_mutable=tuning.pbt_mutable)
        num_samples = choice.num_samples
        notices.append(choice.reason)
    try:
        searchers.check(tuning.search, spec.param_space, len(spec.objective.objectives), conditions)
        if conditions and tuning.scheduler == "pbt":
            raise TunerError(
                "pbt mutates each hyperparameter on its own, which conditions cannot follow; use "
                "--scheduler asha, or drop the conditions"
            )
        schedulers.check(tuning.scheduler, tuning.search, spec.param_space, tuning.pbt_mutable)
        # Not built yet: the conditional searchers (tuner/search/conditional.py) take one metric, and a warm
        # start's trials would need fitting to the active keys of each branch.
        if conditions and (spec.objective.several or spec.objective.constraints):
            raise TunerError(
                "conditions work with one objective and no constraints so far; drop the conditions, or keep "
                "one metric and no constraints"
            )
        if conditions and earlier is not None:
            raise TunerError(
                f"{'tuner extend' if extend else '--warm-start'} does not take a space with conditions yet; "
                "run the conditional space from scratch"
            )
    except TunerError as error:
        raise TunerError(f"space {spec.name}: {error}") from None
    warm, already_run = None, 0
    if earlier is not None:
        axes = searchers.discrete_axes(spec.param_space)
        try:
            warm_start.check(tuning.search, spec.param_space, finite=axes is not None, extend=extend)
        except TunerError as error:
            raise TunerError(f"space {spec.name}: {error}") from None
        warm = warm_start.fit(earlier, searchers.tuner_space(tuning.search, spec.param_space))
        if tuning.search == "optuna" and not extend:
            warm = dataclasses.replace(warm, best_first=True, notice=f"{warm.notice}; its best config runs first")
        if tuning.search == "random" and axes is not None:
            already_run = len(warm_start.skipped(axes, warm))
            if already_run >= searchers.distinct_configs(axes):
                raise TunerError(
                    f"every one of the space's {already_run} configs has run in {earlier.source}; "
                    "nothing is left to draw (widen the space, or use --search optuna over ranges)"
                )
    notices += [
        notice
        for notice in (
            searchers.grid_notice(tuning.search, spec.param_space, num_samples, extend),
            searchers.random_notice(tuning.search, spec.param_space, num_samples, already_run, conditions),
            warm.notice if warm is not None else None,
            searchers.constraints_notice(tuning.search, spec.objective.constraint_list),
            schedulers.stopping_notice(tuning.scheduler, spec.objective.objectives),
        )
        if notice
    ]
    trials = searchers.trials(tuning.search, spec.param_space, num_samples, already_run, conditions)
    param_space = {} if conditions else searchers.tuner_space(tuning.search, spec.param_space)
    if (points := searchers.grid_points(param_space)) * trials > MAX_TRIALS:
        raise TunerError(
            f"space {spec.name}: {points * trials} trials in all ({points} grid points x {trials} samples), "
            f"more than {MAX_TRIALS}: {TRIALS_WHY}; search fewer grid values, or --search random over them"
        )
    return SearchPlan(
        tuning=tuning,
        budget=dataclasses.replace(spec.budget, num_samples=num_samples),
        num_samples=trials,
        param_space=param_space,
        scheduler=schedulers.trial_scheduler(
            tuning.scheduler,
            tuning.search,
            spec.param_space,
            spec.budget.epochs,
            tuning.pbt_mutable,
            spec.objective.objectives,
        ),
        notices=tuple(notices),
        seed=seed,
        space=spec.param_space,
        warm=warm,
        objective=spec.objective,
        conditions=conditions,
    )
