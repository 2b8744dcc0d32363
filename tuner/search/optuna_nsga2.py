"""`--search nsga2`: Optuna's NSGA-II sampler (NSGAIISampler): a genetic algorithm whose generations are
selected by Pareto front and crowding distance, with constraints by constrained domination. Optuna's
AutoSampler picks it for several objectives; with one objective it is a plain genetic algorithm.

Ray pickles the searcher, sampler and all, into the experiment's saved state at every snapshot, and
Optuna 5's genetic samplers hold a threading.Lock, which does not pickle: `PicklableNSGAII` leaves the
lock out of its state and makes a new one when loaded (it guards a cache of the study's generations,
rebuilt from the study). It stays at this path (tuner/ray_compat PICKLED_BY_PATH). Optuna's own fix
would make it go: check `pickle.dumps(optuna.samplers.NSGAIISampler())` after an upgrade.
"""

import threading
from typing import Any

from optuna.samplers import NSGAIISampler

from tuner.search.optuna_tpe import OptunaTPE


class PicklableNSGAII(NSGAIISampler):
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_thread_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._thread_lock = threading.Lock()


class OptunaNSGA2(OptunaTPE):
    name = "nsga2"
    conditions_refused = "crosses over the keys every trial has: a conditional key would be drawn at random"

    def sampler(self, seed: int) -> Any:
        return PicklableNSGAII(seed=seed)
