"""One trial's run of a `train_loop`, wherever it happens: a Tune trial's process, each Ray Train worker,
the smoke step in the driver. The callers differ only in how they report and what they restore from."""

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from tuner.data import DATASETS
from tuner.data.splits import Splits
from tuner.lazy import resolve
from tuner.models import MODELS
from tuner.signatures import call, takes
from tuner.training.config_reads import ReadTrackingConfig
from tuner.training.context import LoopSetup, ReportFn, TrialContext
from tuner.training.loop import ComponentLoop
from tuner.training.metrics import MetricsSpec

TrainLoop = Callable[[dict[str, Any], TrialContext], None]


@dataclass(frozen=True)
class Parts:
    """What a space module brings, resolved to callables: the loop every trial runs (tuner's own over
    the space's model, or the module's `train_loop`) and the dataset callable, if any."""

    train_loop: TrainLoop
    dataset: Callable[..., Any] | None = None

    @classmethod
    def of(
        cls,
        *,
        model: str | Callable[..., Any] | None = None,
        dataset: str | Callable[..., Any] | None = None,
        loss: Callable[..., Any] | None = None,
        metrics: MetricsSpec = None,
        optimizer: Callable[..., Any] | None = None,
        train_loop: TrainLoop | None = None,
    ) -> "Parts":
        """A space module's fields (already checked by the spec); shipped names become the shipped
        callables, which follow the same contract as a module's own."""
        build_model = resolve(MODELS[model]) if isinstance(model, str) else model
        load_data = resolve(DATASETS[dataset]) if isinstance(dataset, str) else dataset
        if train_loop is None:
            assert build_model is not None, "the spec requires a model or a train_loop"
            train_loop = ComponentLoop(model=build_model, loss=loss, metrics=metrics, optimizer=optimizer)
        return cls(train_loop=train_loop, dataset=load_data)

    @property
    def per_trial_data(self) -> bool:
        """A `dataset(config)` loads per trial; a `dataset()` once, in the driver."""
        return self.dataset is not None and takes(self.dataset, (0, 1)) == 1

    def load_data(self, config: dict[str, Any] | None = None) -> Splits | None:
        if self.dataset is None:
            return None
        return Splits.of(call(self.dataset, config if config is not None else {}))


def seed_everything(seed: int) -> None:
    """One seed for torch, numpy and random, so a trial's initialisation and shuffling repeat."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def run_trial_loop(
    parts: Parts,
    config: dict[str, Any],
    setup: LoopSetup,
    *,
    data: Splits | None,
    trial_id: str,
    report: ReportFn,
    restored: dict[str, Any] | None = None,
) -> ReadTrackingConfig:
    """Runs the loop on `config`; returns the config it got, which knows the keys that were read. The
    seed is the setup's (the experiment's), unless the config has a `seed` of its own. `data`: the
    driver's, else loaded here."""
    tracked = ReadTrackingConfig(config)
    if config.get("seed") is not None:
        setup = replace(setup, seed=tracked["seed"])
    if setup.cpu_threads is not None:
        use_cpu_threads(setup.cpu_threads)
    seed_everything(setup.seed)
    if data is None and parts.dataset is not None:
        data = parts.load_data(tracked)
    ctx = TrialContext(config=tracked, setup=setup, data=data, trial_id=trial_id, report=report, restored=restored)
    try:
        with ctx.precision.flags():
            parts.train_loop(tracked, ctx)
    finally:
        ctx.close()
    return tracked


def cpu_threads(cpus_per_worker: float) -> int:
    """The threads a worker with `cpus_per_worker` CPUs trains with: its whole CPUs, at least one (Ray
    sets OMP_NUM_THREADS the same way, but only in a process that has not set it before, and torch may
    have read it already)."""
    return max(1, int(cpus_per_worker))


def use_cpu_threads(threads: int) -> None:
    """torch's intra-op threads for this process, so packed trials don't each start one per core."""
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
