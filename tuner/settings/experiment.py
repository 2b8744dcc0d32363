"""The settings of one experiment, in four small groups that `ExperimentSpec` (tuner/spec/space.py) is
composed of and `tuner.json` stores. A space module sets them by their field names (`epochs = 20`),
the command line by the same names (`--epochs 20`, generated from these declarations), Python by
building the group.

The names a choice may take are declared here; what each means lives in the stage that runs it
(`tuner/search/` for searches and schedulers, `tuner/training/parallel/` for strategies), keyed by
these same names.
"""

from dataclasses import dataclass
from typing import Any

from tuner.settings import budgets
from tuner.settings.declaration import check, required, setting
from tuner.settings.kinds import AUTO, Names, Number, NumberOrAuto, OneOf, Parsed, Whole
from tuner.settings.objectives import Constraint, Constraints, Metrics, Modes, Pairs, pairs, parse_constraint

SEARCHES = ("grid", "random", "optuna", "gp", "cmaes", "nsga2", "hyperopt", "bohb", "auto")
SCHEDULERS = ("fifo", "asha", "hyperband", "median", "pbt")
STRATEGIES = ("ddp", "dp", "fsdp", "pipeline")  # how a trial spreads over its workers or GPUs
PRECISIONS = ("auto", "fp32", "tf32", "bf16", "fp16")  # the arithmetic a GPU trial trains in

# The largest values a run can be asked for, each past anything a run could finish or a node could hold,
# so that a mistyped number is named before Ray starts rather than found by Ray (checked with the value).
MAX_EPOCHS = 100_000
EPOCHS_WHY = "no run finishes more; each epoch is a result Ray keeps in the driver's memory"
MAX_TRIALS = 100_000
TRIALS_WHY = (
    "each trial is a Ray actor, a directory and an entry of the state Ray rewrites every few seconds; "
    "grow a search in steps with tuner extend"
)
CONCURRENT_WHY = "no Ray cluster runs more trials at once"
MAX_WORKERS = 10_000
WORKERS_WHY = "each worker is a process of one process group, and no cluster runs more for one trial"
MAX_CPUS_PER_WORKER = 4096
MAX_GPUS_PER_WORKER = 64
SHARE_WHY = "a worker is one process on one node, and no node has more"
RESOURCE_UNIT = 0.0001
UNIT_WHY = "Ray counts CPUs and GPUs in units of 0.0001, and less is none"


@dataclass(frozen=True)
class Objective:
    """What ranks the trials. `metric` and `mode` read as the primary (first) objective's plain strings
    once built; `objectives` holds every (metric, mode) pair, `constraints` the outcome constraints."""

    metric: str = required(
        Metrics(),
        "the reported metric trials are ranked by (any name the loop reports); several, comma-separated "
        "(a list, or a mapping of each to its mode, in a space module), are traded off on a Pareto front",
    )
    mode: str = setting(
        None,
        Modes(),
        "whether a higher (max) or lower (min) metric is better; one per metric, comma-separated",
        optional=True,
    )
    constraints: tuple[str, ...] = setting(
        (),
        Constraints(),
        'outcome constraints a trial must meet to rank above those that do not, comma-separated: "latency_ms<=5"',
    )
    # No option of its own: what metric and mode declare, as tuner.json records it.
    objectives: tuple[tuple[str, str], ...] = setting((), Pairs(), "every objective as (metric, mode)", flag=None)

    def __post_init__(self) -> None:
        check(self)
        found = pairs(self.metric, self.mode, self.objectives)
        object.__setattr__(self, "objectives", found)
        object.__setattr__(self, "metric", found[0][0])
        object.__setattr__(self, "mode", found[0][1])
        object.__setattr__(self, "constraints", tuple(self.constraints))

    @property
    def several(self) -> bool:
        """More than one objective: trials are ranked by Pareto front."""
        return len(self.objectives) > 1

    @property
    def constraint_list(self) -> tuple[Constraint, ...]:
        return tuple(parse_constraint(text) for text in self.constraints)

    @property
    def reported(self) -> list[str]:
        """Every metric the loop must report: the objectives', then the constraints'."""
        names = dict.fromkeys(metric for metric, _ in self.objectives)
        names.update(dict.fromkeys(constraint.metric for constraint in self.constraint_list))
        return list(names)

    def overridden(self, given: dict[str, Any]) -> dict[str, Any]:
        """The command line's metric or mode, completed from this objective (`--mode max,max` keeps the
        metrics), the recorded pairs derived again from them."""
        if "metric" not in given and "mode" not in given:
            return given
        return {
            "metric": [name for name, _ in self.objectives],
            "mode": [way for _, way in self.objectives],
            **given,
            "objectives": (),
        }


@dataclass(frozen=True)
class Budget:
    """How much an experiment trains: epochs per trial, trials, and what may end it sooner."""

    epochs: int = setting(5, Whole(1, MAX_EPOCHS, EPOCHS_WHY), "epochs per trial")
    num_samples: int = setting(
        1,
        Whole(1, MAX_TRIALS, TRIALS_WHY),
        "Ray's num_samples: random draws per grid point under grid search, configs in all otherwise",
    )
    time_budget: str | None = setting(
        None,
        Parsed(budgets.parse_duration, "'30m'"),
        "stop starting and running trials after this long: 90s, 30m, 2h",
        optional=True,
    )
    stop: str | None = setting(
        None,
        Parsed(budgets.parse_stop, "'val_acc>=0.98'"),
        'end the experiment once a trial reaches it, e.g. "val_acc>=0.98"',
        optional=True,
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def time_budget_s(self) -> float | None:
        return budgets.parse_duration(self.time_budget) if self.time_budget is not None else None

    @property
    def stop_condition(self) -> budgets.StopCondition | None:
        return budgets.parse_stop(self.stop) if self.stop is not None else None


@dataclass(frozen=True)
class Resources:
    """What each trial gets: its workers, how it spreads over them, their CPUs and GPUs, its precision."""

    workers: int = setting(
        1, Whole(1, MAX_WORKERS, WORKERS_WHY), "Ray Train workers per trial (1 trains in the trial's own process)"
    )
    parallel: str = setting(
        "ddp", OneOf(STRATEGIES), "how a trial spreads over its workers or GPUs: ddp | dp | fsdp | pipeline"
    )
    precision: str = setting(
        "auto",
        OneOf(PRECISIONS),
        "a GPU trial's arithmetic: auto (TF32 matmuls and convolutions where the GPU has them, measured "
        "faster than bf16 on small models) | fp32 | tf32 | bf16 (autocast) | fp16 (autocast, loss scaling); "
        "a trial on the CPU trains in fp32 whatever this says",
    )
    cpus_per_worker: float = setting(
        1.0, Number(0, False, MAX_CPUS_PER_WORKER, SHARE_WHY, RESOURCE_UNIT, UNIT_WHY), "CPUs of each worker"
    )
    gpus_per_worker: float | str = setting(
        AUTO,
        NumberOrAuto(0, True, MAX_GPUS_PER_WORKER, SHARE_WHY, RESOURCE_UNIT, UNIT_WHY),
        "GPUs of each worker (a fraction shares a GPU between trials); auto: trials share the cluster's GPUs "
        "by the memory the smoke step measured, or train on the CPU where the cluster has no GPU",
    )
    max_concurrent: int | None = setting(
        None,
        Whole(1, MAX_TRIALS, CONCURRENT_WHY),
        "trials at once (default: as many as the cluster fits)",
        optional=True,
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def gpus_auto(self) -> bool:
        """gpus_per_worker is `auto`: the driver resolves it to a number before the first trial."""
        return self.gpus_per_worker == AUTO

    @property
    def gpus(self) -> float:
        """gpus_per_worker as the trials run with it: a number, once the driver has resolved `auto`."""
        if isinstance(self.gpus_per_worker, str):
            raise ValueError("gpus_per_worker is 'auto' until the driver resolves it (tuner/execution/packing.py)")
        return float(self.gpus_per_worker)

    @property
    def in_process(self) -> bool:
        """One worker trains in the Tune trial's own process, without Ray Train."""
        return self.workers == 1


REDUCTION_WHY = "a rung keeps 1/N of the trials that reach it, and an experiment holds at most that many"


@dataclass(frozen=True)
class Tuning:
    """How configs are proposed and trials stopped: the searcher, the scheduler and their settings."""

    search: str = setting("grid", OneOf(SEARCHES), "what proposes configs: " + " | ".join(SEARCHES))
    scheduler: str = setting("fifo", OneOf(SCHEDULERS), "what may stop trials early: " + " | ".join(SCHEDULERS))
    pbt_mutable: tuple[str, ...] | None = setting(
        None,
        Names(),
        "the hyperparameters PBT may perturb, comma-separated (default: those of lr, weight_decay, momentum, "
        "batch_size, dropout the space searches)",
        optional=True,
    )
    # ASHA's shape (bench/README.md, "ASHA's shape": 1 and 3 at every epoch budget measured).
    asha_grace_period: int = setting(
        1, Whole(1, MAX_EPOCHS, EPOCHS_WHY), "asha: the epochs every trial runs before it can be stopped"
    )
    asha_reduction_factor: int = setting(
        3,
        Whole(2, MAX_TRIALS, REDUCTION_WHY),
        "asha: each rung keeps the best 1/N of the trials that reach it (rungs at grace x N^k)",
    )

    def __post_init__(self) -> None:
        check(self)
        if self.pbt_mutable is not None:  # a list from a module or JSON: kept as a tuple, hashable and frozen
            object.__setattr__(self, "pbt_mutable", tuple(self.pbt_mutable))


GROUPS = {"objective": Objective, "budget": Budget, "resources": Resources, "tuning": Tuning}
