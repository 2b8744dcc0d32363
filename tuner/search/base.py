"""The extension point of `--search`: one subclass of `Search` per name, listed in tuner/search/__init__.py.

A subclass says what it can take in class-level flags, which `check` reads before Ray starts (so that a
combination it cannot run is one line, not an error from inside a trial), and builds Ray's searcher in
`build` (a plain space) and `build_conditional` (a space with conditions, where the searcher carries the
whole space and the Tuner gets none). Where a searcher's counting differs (grid runs a grid, random runs
each config of a finite space at most once), it overrides `tuner_space`, `trials` or `already_run`.

A new searcher is a module with its subclass and one line in `tuner.search.SEARCHES`; the conformance
tests (tests/search/test_searches.py) then run it over the same spaces as every other.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tuner import extras
from tuner.errors import TunerError
from tuner.search.space_counts import PLAIN, grid_as_choice, grid_axes
from tuner.search.warm_start import WarmStart
from tuner.settings.objectives import Constraint
from tuner.spec.conditions import Conditions
from tuner.spec.param_space import is_constant

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler


@dataclass(frozen=True)
class SearchRequest:
    """What a searcher is built from (`Search.build`, `Search.build_conditional`)."""

    space: dict[str, Any]  # the space module's param_space
    num_samples: int
    seed: int
    max_concurrent: int = 0  # trials at once at most (0: no limit)
    warm: WarmStart | None = None  # earlier trials the searcher starts from
    objectives: Sequence[tuple[str, str]] = ()  # (metric, mode) pairs, the primary first
    constraints: Sequence[Constraint] = ()
    conditions: Conditions = Conditions()  # a conditional space's (build_conditional)


class Search:
    """One `--search` name. The flags' defaults are those of a model-based searcher of one objective."""

    name: ClassVar[str]
    # Proposes from a model of the trials so far: it samples grid axes as choices of the same values
    # (said in one line), and only numbers and strings can be such values.
    model_based: ClassVar[bool] = True
    several_objectives: ClassVar[bool] = False  # proposes by several objectives at once
    steers_by_constraints: ClassVar[bool] = False  # keeps away from configs that broke a constraint
    # Why it cannot take a space with conditions (None: it can), said after the search's name.
    conditions_refused: ClassVar[str | None] = None
    # Why it cannot take earlier trials (--warm-start, extend), in words; None: it can.
    warm_start_refused: ClassVar[str | None] = "this searcher takes no earlier results"
    warm_best_first: ClassVar[bool] = False  # under --warm-start it runs the earlier best config first
    # Takes earlier trials over a space with conditions too (each with the keys it had).
    conditional_warm_start: ClassVar[bool] = False
    extra: ClassVar[str | None] = None  # the optional extra (tuner/extras.py) that installs its library
    # Schedulers it runs under (None: every one); bohb brings its own HyperBand.
    schedulers: ClassVar[tuple[str, ...] | None] = None
    # Ray's own BasicVariantGenerator draws its configs (grid, random), not a SearchGenerator over a
    # library's model: the only kind a scheduler with `model_search_refused` (PBT) takes.
    basic_variant: ClassVar[bool] = False
    # The search `tuner extend` continues the experiment with (None: this one).
    extends_as: ClassVar[str | None] = None

    def own_scheduler(self, epochs: int) -> "TrialScheduler | None":
        """The scheduler this search always runs with, whatever --scheduler says (None: the one asked for)."""
        return None

    def check(self, param_space: dict[str, Any], objectives: int = 1, conditions: Conditions = PLAIN) -> None:
        """One line (TunerError) for what this search cannot take, before Ray starts."""
        if objectives > 1 and not self.several_objectives:
            raise TunerError(
                f"{self.name} optimizes one metric, and this space has {objectives} objectives; use "
                "--search optuna (multi-objective TPE), nsga2 or random"
            )
        if conditions and self.conditions_refused:
            raise TunerError(
                f"{self.name} {self.conditions_refused}; use --search optuna (TPE), which models each "
                "conditional key on the trials that had it, or random"
            )
        if self.extra:
            extras.require(self.extra, f"--search {self.name}")
        if self.model_based:
            for key in grid_axes(param_space):
                if not all(is_constant(value) for value in param_space[key]["grid_search"]):
                    raise TunerError(
                        f"{self.name} cannot sample grid axis {key}, whose values are not numbers or strings; "
                        "use --search grid or random"
                    )

    def check_warm_start(self, finite: bool, extend: bool = False) -> None:
        """One line (TunerError) when this search cannot start from earlier trials (`finite`: the space has
        only grid axes, choices and constants)."""
        if self.warm_start_refused is None:
            return
        why = self.warm_start_refused
        if extend:
            raise TunerError(
                f"extend needs an experiment searched by optuna, random or grid (whose searchers take the trials "
                f"so far): {why}; start a new one with `tuner run --search optuna --warm-start <this experiment>`"
            )
        raise TunerError(
            f"--warm-start needs --search optuna (it learns from the earlier trials) or random over a finite space "
            f"(it skips configs already run): {why}"
        )

    def tuner_space(self, param_space: dict[str, Any]) -> dict[str, Any]:
        """The param_space the Tuner gets: grid axes as choices of the same values (all but grid sample them)."""
        return grid_as_choice(param_space)

    def trials(
        self, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
    ) -> int:
        """Tune's num_samples for `num_samples` asked (`already_run`: distinct configs a warm start skips)."""
        return num_samples

    def already_run(self, param_space: dict[str, Any], warm: WarmStart) -> int:
        """How many of the space's configs a warm start has run and this search will not draw again."""
        return 0

    def grid_notice(self, param_space: dict[str, Any], num_samples: int, extend: bool = False) -> str | None:
        """The one line that says this search samples the grid axes as choices (under `extend`, whose
        --num-samples the user gave, without the advice to give it)."""
        axes = grid_axes(param_space)
        if not self.model_based or not axes:
            return None
        said = f"{self.name} samples the grid axes ({', '.join(axes)}) as choices of the same values"
        if extend:
            return f"{said}: {num_samples} new configs"
        return f"{said}; num_samples = {num_samples} now counts configs in all (--num-samples N for more)"

    def space_notice(
        self, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
    ) -> str | None:
        """The one line about how this search takes this space: fewer trials than asked, keys it cannot
        model (None: nothing to say)."""
        return None

    def constraints_notice(self, constraints: Sequence[Constraint]) -> str | None:
        """The one line that says this search does not steer by the constraints."""
        if not constraints or self.steers_by_constraints:
            return None
        return (
            f"{self.name} proposes configs without regard to the constraints ({', '.join(map(str, constraints))}); "
            "the report marks the trials that break one (--search optuna steers clear of them)"
        )

    def build(self, request: SearchRequest) -> Any:
        """Ray's search algorithm over `self.tuner_space(request.space)`. The space is checked before, by
        `check`."""
        raise NotImplementedError

    def build_conditional(self, request: SearchRequest) -> Any:
        """Ray's searcher over a conditional space (`request.conditions`), carrying the space itself (the
        Tuner's param_space is empty); the plan limits its concurrency. Only called when
        `conditions_refused` is None, and with a warm start only when `conditional_warm_start`."""
        raise NotImplementedError
