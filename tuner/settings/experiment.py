"""The settings of one experiment, in four small groups that `ExperimentSpec` (tuner/spec/space.py) is
composed of and `tuner.json` stores. A space module sets them by their field names (`epochs = 20`),
the command line by the same names (`--epochs 20`, generated from these declarations), Python by
building the group.

The names a choice may take are declared here; what each means lives in the stage that runs it
(`tuner/search/` for searches and schedulers, `tuner/training/parallel/` for strategies), keyed by
these same names.
"""

from dataclasses import dataclass

from tuner.settings import budgets
from tuner.settings.declaration import check, required, setting
from tuner.settings.kinds import AUTO, Name, Names, Number, NumberOrAuto, OneOf, Parsed, Whole

MODES = ("min", "max")
SEARCHES = ("grid", "random", "optuna", "hyperopt", "bohb", "auto")
SCHEDULERS = ("fifo", "asha", "hyperband", "median", "pbt")
STRATEGIES = ("ddp", "dp", "fsdp", "pipeline")  # how a trial spreads over its workers or GPUs
PRECISIONS = ("auto", "fp32", "tf32", "bf16", "fp16")  # the arithmetic a GPU trial trains in


@dataclass(frozen=True)
class Objective:
    metric: str = required(Name(), "the reported metric trials are ranked by (any name the loop reports)")
    mode: str = required(OneOf(MODES), "whether a higher (max) or lower (min) metric is better")

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class Budget:
    epochs: int = setting(5, Whole(1), "epochs per trial")
    num_samples: int = setting(
        1, Whole(1), "Ray's num_samples: random draws per grid point under grid search, configs in all otherwise"
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
    workers: int = setting(1, Whole(1), "Ray Train workers per trial (1 trains in the trial's own process)")
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
    cpus_per_worker: float = setting(1.0, Number(0, inclusive=False), "CPUs of each worker")
    gpus_per_worker: float | str = setting(
        AUTO,
        NumberOrAuto(0),
        "GPUs of each worker (a fraction shares a GPU between trials); auto: trials share the cluster's GPUs "
        "by the memory the smoke step measured, or train on the CPU where the cluster has no GPU",
    )
    max_concurrent: int | None = setting(
        None, Whole(1), "trials at once (default: as many as the cluster fits)", optional=True
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


@dataclass(frozen=True)
class Tuning:
    search: str = setting("grid", OneOf(SEARCHES), "what proposes configs: " + " | ".join(SEARCHES))
    scheduler: str = setting("fifo", OneOf(SCHEDULERS), "what may stop trials early: " + " | ".join(SCHEDULERS))
    pbt_mutable: tuple[str, ...] | None = setting(
        None,
        Names(),
        "the hyperparameters PBT may perturb, comma-separated (default: those of lr, weight_decay, momentum, "
        "batch_size, dropout the space searches)",
        optional=True,
    )

    def __post_init__(self) -> None:
        check(self)
        if self.pbt_mutable is not None:  # a list from a module or JSON: kept as a tuple, hashable and frozen
            object.__setattr__(self, "pbt_mutable", tuple(self.pbt_mutable))


GROUPS = {"objective": Objective, "budget": Budget, "resources": Resources, "tuning": Tuning}
