"""HyperOptSearch over a conditional space's nested choices (tuner/search/conditional.py builds them):
a parent's hp.choice picks one dict per value, which the suggestion carries nested; the trial gets
them merged into one flat config. Its own module: importing HyperOpt costs ~1 s, paid only when
`--search hyperopt` runs, and Ray pickles the class by this path into the saved state."""

from typing import Any

from ray.tune.search.hyperopt import HyperOptSearch

from tuner.search.conditional import flat


class BranchedHyperOpt(HyperOptSearch):
    def suggest(self, trial_id: str) -> Any:
        config = super().suggest(trial_id)
        return flat(config) if isinstance(config, dict) else config
