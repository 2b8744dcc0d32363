"""One scheduler decision, as the recording schedulers make it (tuner/search/decisions.py,
tuner/search/pareto_asha.py), decisions.jsonl keeps it (tuner/storage/decisions.py) and the report
words it (tuner/results/stops.py). Ray-free: the readers run without Ray.

Values and cutoffs are in the metric's own units. In the file a decision is a JSON object: the fields of
`EVERY_DECISION`, and those of a scheduler's own that it set; a row without a trial id is skipped, and a
field this version does not know is ignored.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any

# What became of the trial.
CONTINUE, STOP, EXPLOIT = "continue", "stop", "exploit"
# The fields every decision has in the file, null where unknown (readers of the raw rows count on them).
EVERY_DECISION = frozenset(
    ("trial_id", "scheduler", "decision", "metric", "mode", "epoch", "iteration", "value", "cutoff", "at")
)


@dataclass(frozen=True)
class Decision:
    trial_id: str
    scheduler: str = "?"  # the scheduler's name, as `--scheduler` takes it
    decision: str = CONTINUE  # CONTINUE, STOP or EXPLOIT
    metric: str = "?"  # what it was judged by, and that metric's mode ("max" or "min")
    mode: str = "max"
    # tuner's loop reports its epoch; Ray's schedulers count reports (iteration), the same unless a trial
    # restarted from another's checkpoint (PBT).
    epoch: float | None = None
    iteration: float | None = None
    value: float | None = None  # the trial's value it was judged by
    cutoff: float | None = None  # what that value was compared with; None: the first at its rung
    at: float | None = None  # time.time() of the decision
    rung: float | None = None  # ASHA, HyperBand, BOHB: the rung's epoch
    bracket: int | None = None  # HyperBand with several brackets: which one
    compared_with: int | None = None  # median, Pareto: how many other trials it was compared with
    # Several objectives (tuner/search/pareto_asha.py): the objectives, how many trials lie on Pareto
    # fronts ahead of it, and the share 1/reduction_factor that decides.
    pareto: list[str] | None = None
    ahead: int | None = None
    reduction_factor: float | None = None
    # PBT's exploit: the trial whose checkpoint and hyperparameters it copied, that trial's value and epoch,
    # and what the explore step changed (key -> [old, new, how]).
    clone_of: str | None = None
    clone_value: float | None = None
    clone_epoch: float | None = None
    changes: dict[str, list[Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        """Every decision's fields, null or not, and a scheduler's own fields where it set them."""
        return {
            f.name: value
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) is not None or f.name in EVERY_DECISION
        }

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "Decision | None":
        if not isinstance(row.get("trial_id"), str):
            return None
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in row.items() if key in known and value is not None})
