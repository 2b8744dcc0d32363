"""What `tuner extend` searches: the experiment's space as it ran, with new trials, under the search that
can add to it.

An extension is a Ray Tune run of its own, its searcher warm-started from every scored trial so far:
optuna learns from them; random skips the configs already run over a finite space, else draws new
ones with another seed; a search that has run whole (a grid) adds trials as the search its class names
in `Search.extends_as`. Each extension takes another seed: the experiment's own would draw the configs
its first run drew.
"""

import dataclasses
from dataclasses import dataclass

from tuner.search import search as search_named
from tuner.search import warm_start
from tuner.search.plan import SearchPlan, plan
from tuner.spec.space import ExperimentSpec


@dataclass(frozen=True)
class ExtensionPlan:
    spec: ExperimentSpec  # the space as it ran, with the trials to add and the search that adds them
    plan: SearchPlan
    seed: int
    notices: tuple[str, ...]  # one line each, printed before the first trial


def plan_extension(
    ran: ExperimentSpec, first_seed: int, extensions_so_far: int, num_samples: int, earlier: warm_start.Earlier
) -> ExtensionPlan:
    """`ran`: the experiment's spec with the settings it ran with; `first_seed`: the seed of its first run."""
    ran_by = search_named(ran.tuning.search)
    spec = dataclasses.replace(
        ran,
        budget=dataclasses.replace(ran.budget, num_samples=num_samples),
        tuning=dataclasses.replace(ran.tuning, search=ran_by.extends_as or ran_by.name),
    )
    seed = first_seed + extensions_so_far + 1
    extension = plan(spec, seed, earlier, extend=True)
    said: tuple[str, ...] = ()
    if ran_by.extends_as:
        said = (
            f"extend: the {ran_by.name} has run whole; the new trials are {ran_by.extends_as} draws of the same space",
        )
    return ExtensionPlan(spec, extension, seed, said + extension.notices)
