"""Stage 2, search: the plan of an experiment's search (`plan`): which configs run (Ray Tune's
searchers) and which trials stop early (Ray Tune's schedulers), with defaults derived from the space
and its epoch budget.

`SEARCHES` is the table of `--search` names, each one class (tuner/search/base.py says what a class
holds), imported on first use: a typo in a space module is named before Optuna or HyperOpt loads.
`auto` is no searcher of its own: tuner/search/auto.py picks one of these.
"""

from typing import TYPE_CHECKING

from tuner.errors import TunerError
from tuner.lazy import resolve
from tuner.settings.experiment import SEARCHES as NAMES
from tuner.settings.kinds import AUTO

if TYPE_CHECKING:
    from tuner.search.base import Search

SEARCHES: dict[str, str] = {
    "grid": "tuner.search.grid:Grid",
    "random": "tuner.search.random_search:Random",
    "optuna": "tuner.search.optuna_tpe:OptunaTPE",
    "gp": "tuner.search.optuna_gp:OptunaGP",
    "cmaes": "tuner.search.optuna_cmaes:OptunaCmaEs",
    "nsga2": "tuner.search.optuna_nsga2:OptunaNSGA2",
    "hyperopt": "tuner.search.hyperopt_tpe:HyperOptTPE",
    "bohb": "tuner.search.bohb:BOHB",
}
assert (*SEARCHES, AUTO) == NAMES, "every search the settings name has a class here (auto picks one), and no other"

__all__ = ["SEARCHES", "search"]


def search(name: str) -> "Search":
    """The search `name` (not `auto`: tuner/search/auto.py resolves it first)."""
    if name not in SEARCHES:
        raise TunerError(f"unknown search {name!r}; choose one of {', '.join(NAMES)}")
    return resolve(SEARCHES[name])()
