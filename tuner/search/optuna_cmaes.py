"""`--search cmaes`: Optuna's CMA-ES sampler (CmaEsSampler, over the `cmaes` package): a multivariate
normal over the numeric keys, adapted generation by generation towards the better configs. Optuna's
AutoSampler picks it for numeric spaces with budgets of several hundred trials and more. A choice
(categorical key) is drawn at random, as Optuna does for what CMA-ES cannot model, with a notice."""

from typing import Any

from ray.tune.search.sample import Categorical

from tuner.search.optuna_tpe import OptunaTPE
from tuner.search.space_counts import PLAIN
from tuner.spec.conditions import Conditions


class OptunaCmaEs(OptunaTPE):
    name = "cmaes"
    several_objectives = False
    steers_by_constraints = False  # CmaEsSampler reads no constraints
    conditions_refused = "adapts one distribution over a fixed set of numeric keys; a conditional key is none"

    def sampler(self, seed: int) -> Any:
        import optuna

        # warn_independent_sampling off: the notice below says it once, not a warning per trial.
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)

    def space_notice(
        self, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
    ) -> str | None:
        chosen = sorted(key for key, value in self.tuner_space(param_space).items() if isinstance(value, Categorical))
        if not chosen:
            return None
        return f"cmaes models numeric keys only; it draws {', '.join(chosen)} at random in every trial"
