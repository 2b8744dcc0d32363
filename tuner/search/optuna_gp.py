"""`--search gp`: Optuna's Gaussian-process sampler (GPSampler: a GP over the trials so far, the next
config where expected improvement is highest; several objectives by expected hypervolume improvement).
Optuna's AutoSampler picks it for small numeric budgets; its own docs put its sweet spot under a few
hundred trials, since each suggestion refits the GP on every trial so far."""

from typing import Any

from tuner.search.optuna_tpe import OptunaTPE


class OptunaGP(OptunaTPE):
    name = "gp"
    conditions_refused = "models the keys every trial has: a conditional key would be drawn at random, not learned"

    def sampler(self, seed: int) -> Any:
        import optuna

        return optuna.samplers.GPSampler(seed=seed)
