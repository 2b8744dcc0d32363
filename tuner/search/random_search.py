"""`--search random`: Ray's BasicVariantGenerator with every grid axis turned into `tune.choice`,
`num_samples` configs in all. Over a space of only grid axes and choices, distinct configs (drawn without
replacement, handed to the generator as its points_to_evaluate): 24 independent draws from 24 configs
would cover only ~64 % of them (1 - (1 - 1/24)^24), repeating the rest; at most every config once.
Under a warm start over such a space, the configs already run are skipped."""

from typing import Any

from ray import tune

from tuner.errors import TunerError
from tuner.search import conditional, warm_start
from tuner.search.base import Search, SearchRequest
from tuner.search.space_counts import PLAIN, discrete_axes, space_size, without_replacement
from tuner.search.warm_start import WarmStart
from tuner.spec.conditions import Conditions


class Random(Search):
    name = "random"
    model_based = False  # it draws any values, lists and dicts too, without a notice
    several_objectives = True  # it proposes without looking at the scores
    warm_start_refused = None
    basic_variant = True

    def check_warm_start(self, finite: bool, extend: bool = False) -> None:
        if not finite and not extend:  # `extend` still draws new configs, with another seed
            raise TunerError(
                "--warm-start with --search random only skips configs already run, and this space samples "
                "from a range, where no config repeats; use --search optuna, which learns from the earlier trials"
            )

    def trials(
        self, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
    ) -> int:
        """Each config of a finite space at most once (`already_run`: distinct configs a warm start skips)."""
        if (count := space_size(param_space, conditions)) is not None:
            return min(num_samples, count - already_run)
        return num_samples

    def already_run(self, param_space: dict[str, Any], warm: WarmStart) -> int:
        axes = discrete_axes(param_space)
        return 0 if axes is None else len(warm_start.skipped(axes, warm))

    def space_notice(
        self, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
    ) -> str | None:
        if (count := self.trials(param_space, num_samples, already_run, conditions)) == num_samples:
            return None
        if already_run:
            return (
                f"random: {count} of the space's configs have not run before, so {count} trials run "
                f"(each config once), not num_samples = {num_samples}"
            )
        return (
            f"random: the space has {count} distinct configs, so {count} trials run (each config once), "
            f"not num_samples = {num_samples}"
        )

    def build(self, request: SearchRequest) -> Any:
        axes = discrete_axes(request.space)
        skip = warm_start.skipped(axes, request.warm) if axes is not None else set()
        trials = self.trials(request.space, request.num_samples, len(skip))
        points = None if axes is None else without_replacement(axes, trials, request.seed, skip)
        return tune.search.BasicVariantGenerator(
            points_to_evaluate=points, random_state=request.seed, max_concurrent=request.max_concurrent
        )

    def build_conditional(self, request: SearchRequest) -> Any:
        return conditional.ConfigList(
            conditional.random_configs(request.space, request.conditions, request.num_samples, request.seed)
        )
