"""`--search optuna`: Optuna's TPE sampler through Ray's OptunaSearch; with several objectives its
multi-objective TPE, and with constraints each trial's violations set on it, which TPE reads
(tuner/search/optuna_objectives.py). Over a conditional space, a define-by-run function: a key is
suggested only when its parents' values make it active, so TPE models only the trials that had it.

`OptunaTPE` is also the base of the searchers that are another of Optuna's samplers in the same place
(tuner/search/optuna_gp.py, optuna_cmaes.py, optuna_nsga2.py): each overrides `sampler` and its flags.
A warm start reaches each the same way, as a study that already holds the earlier trials.
"""

from typing import Any

from tuner.search import conditional, warm_start
from tuner.search.base import Search, SearchRequest
from tuner.search.space_counts import limited


class OptunaTPE(Search):
    name = "optuna"
    several_objectives = True
    steers_by_constraints = True  # Trial.set_constraint, which Optuna 5's samplers read
    warm_start_refused = None
    warm_best_first = True  # optuna's own advice for known good parameters: enqueue them
    conditional_warm_start = True

    def sampler(self, seed: int) -> Any:
        """The Optuna sampler, seeded (a study of several objectives uses the same one)."""
        import optuna

        return optuna.samplers.TPESampler(seed=seed)

    def build(self, request: SearchRequest) -> Any:
        from ray.tune.search.optuna import OptunaSearch

        _quiet_optuna()
        objectives, constraints, warm = request.objectives, request.constraints, request.warm
        # A warm start's study, already holding the earlier trials, is loaded from the storage it comes in.
        storage = (
            warm_start.optuna_storage(warm, self.tuner_space(request.space), list(objectives))
            if warm is not None
            else None
        )
        sampler = self.sampler(request.seed)
        if len(objectives) > 1 or constraints:
            from tuner.search.optuna_objectives import OptunaObjectives

            searcher = OptunaObjectives(objectives, constraints, sampler=sampler, storage=storage)
            return limited(searcher, request.max_concurrent)
        return limited(OptunaSearch(sampler=sampler, storage=storage), request.max_concurrent)

    def build_conditional(self, request: SearchRequest) -> Any:
        from ray.tune.search.optuna import OptunaSearch

        from tuner.search.optuna_objectives import OptunaObjectives

        _quiet_optuna()
        objectives, constraints, warm = request.objectives, request.constraints, request.warm
        # The earlier trials over the keys each had: optuna takes a trial with some keys of the space.
        storage = warm_start.optuna_storage(warm, request.space, list(objectives)) if warm is not None else None
        define_by_run = conditional.DefineByRun(request.space, request.conditions)
        sampler = self.sampler(request.seed)
        if len(objectives) > 1 or constraints:
            return OptunaObjectives(objectives, constraints, sampler=sampler, storage=storage, space=define_by_run)
        (metric, mode), *_ = objectives
        return OptunaSearch(space=define_by_run, metric=metric, mode=mode, sampler=sampler, storage=storage)


def _quiet_optuna() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # its "new study created" line is noise here
