"""Run one experiment: check everything that can be checked, then hand the space to Ray Tune."""

import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import ray
from ray import tune

from tuner import budgets, data, report, saved_state, schedulers, searchers, storage
from tuner.checkpoint_retention import RetireCheckpoints, retire_after_fit
from tuner.cluster import Cluster, connect
from tuner.data.dataset import Dataset
from tuner.errors import Interrupted, TunerError
from tuner.space import Space
from tuner.trainable import trainable
from tuner.trial_logs import KeepResultRows
from tuner.train import TrialSetup

SNAPSHOT_PERIOD_S = "2"


@dataclass(frozen=True)
class TrialNamer:
    """Names trials and their directories `<space>_<trial id>`: short, and unique within the experiment."""

    space: str

    def __call__(self, trial: tune.experiment.Trial) -> str:
        return f"{self.space}_{trial.trial_id}"


@dataclass(frozen=True)
class RunOptions:
    storage_path: str
    name: str | None = None
    seed: int = 0
    data_dir: str | None = None
    max_concurrent: int | None = None
    cluster: Cluster = field(default_factory=Cluster)  # default: a local instance, no dashboard
    max_failures: int = 2  # retries of a crashed trial, each from its latest checkpoint
    verbose: int = 1  # Ray Tune's output: 0 silent, 1 the live trial table, 2 every result


@dataclass(frozen=True)
class Outcome:
    experiment_path: str
    trials: pd.DataFrame
    metric: str
    params: list[str]


def _check_resources(space: Space) -> int:
    """Fail before any trial starts if one trial cannot fit; returns how many trials fit at once."""
    cluster = ray.cluster_resources()
    fits = math.inf
    for resource, per_worker, flag in (("CPU", space.cpus_per_worker, "--cpus-per-worker"),
                                       ("GPU", space.gpus_per_worker, "--gpus-per-worker")):
        if per_worker <= 0:
            continue
        need, have = space.workers * per_worker, cluster.get(resource, 0.0)
        if need > have:
            raise TunerError(
                f"a trial needs {space.workers} workers x {per_worker:g} {resource} = {need:g} {resource}, "
                f"but the Ray cluster has {have:g}; lower --workers or {flag}"
            )
        fits = min(fits, int(have // need))
    return int(fits)


def _setup(meta: dict[str, Any], dataset: Dataset, experiment_path: str) -> TrialSetup:
    return TrialSetup(
        model=meta["model"],
        data=ray.put(dataset),
        epochs=meta["epochs"],
        seed=meta["seed"],
        workers=meta["workers"],
        cpus_per_worker=meta["cpus_per_worker"],
        gpus_per_worker=meta["gpus_per_worker"],
        experiment_path=experiment_path,
    )


@contextmanager
def _interruptible(experiment_path: str) -> Iterator[None]:
    """A first Ctrl-C makes Ray Tune save its state and return; a second one (while Ray saves, the
    report is written or Ray shuts down) ends here, resumable all the same once the experiment exists."""
    try:
        yield
    except KeyboardInterrupt:
        if storage.exists(f"{experiment_path}/{storage.META_FILE}"):
            raise Interrupted(experiment_path) from None
        raise


def _fit(tuner: tune.Tuner, experiment_path: str, scheduler: str) -> pd.DataFrame:
    """Run the trials, then write the report."""
    # How often Ray saves the experiment state and result rows to storage: what a killed driver or a
    # full disk leaves for `tuner resume` and `tuner report`. Ray's default waits 10 s or more.
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", SNAPSHOT_PERIOD_S)
    try:
        results = tuner.fit()
        if results.num_errors:
            # Ray may also end normally, its trials failed on the storage: the same error, and nothing
            # deleted or rewritten (retiring checkpoints would free space and hide the cause).
            _check_storage(experiment_path)
        if schedulers.retires_checkpoints(scheduler):
            retire_after_fit(results)
        return report.write(experiment_path)
    except TunerError:
        raise
    except Exception:
        # A full or read-only storage makes Ray fail in many places (checkpoints, state files, even
        # its own error files); what the user must know is that the storage is the cause.
        _check_storage(experiment_path)
        raise


def _check_storage(experiment_path: str) -> None:
    if problem := storage.write_problem(experiment_path):
        raise TunerError(f"cannot write to {experiment_path}: {problem}; what was written is kept: free space "
                         f"or make it writable, then: python -m tuner resume {experiment_path}") from None


def run(space: Space, options: RunOptions) -> Outcome:
    name = options.name or f"{space.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    storage_path = storage.normalize(options.storage_path)
    experiment_path = f"{storage_path.rstrip('/')}/{name}"
    if storage.exists(experiment_path):
        raise TunerError(f"experiment {experiment_path} already exists; pick another --name (results are never overwritten)")
    if problem := storage.write_problem(storage_path):
        raise TunerError(f"cannot write to --storage-path {storage_path}: {problem}; pick another --storage-path")
    dataset = data.load(space.dataset, options.data_dir)  # a missing data root fails here, before Ray starts
    stopper = budgets.parse_stop(space.stop) if space.stop else None

    with _interruptible(experiment_path), connect(options.cluster):
        fits = _check_resources(space)
        max_concurrent = options.max_concurrent or space.max_concurrent or fits
        search_alg, param_space = searchers.build(space.search, space.param_space, space.num_samples, options.seed,
                                                  max_concurrent)
        # Everything `resume` needs to rebuild the trainable; Ray's own tuner.pkl keeps the rest.
        meta = {
            "space": space.name, "source": space.source, "model": space.model, "dataset": space.dataset,
            "data_dir": options.data_dir, "metric": space.metric, "mode": space.mode,
            "params": sorted(space.param_space), "epochs": space.epochs, "num_samples": space.num_samples,
            "workers": space.workers, "cpus_per_worker": space.cpus_per_worker,
            "gpus_per_worker": space.gpus_per_worker, "search": space.search, "scheduler": space.scheduler,
            "seed": options.seed,
        }
        storage.write_meta(experiment_path, meta)
        callbacks: list[tune.Callback] = [KeepResultRows()]
        if schedulers.retires_checkpoints(space.scheduler):
            callbacks.append(RetireCheckpoints())
        tuner = tune.Tuner(
            trainable(_setup(meta, dataset, experiment_path)),
            param_space=param_space,
            tune_config=tune.TuneConfig(
                metric=space.metric,
                mode=space.mode,
                num_samples=space.num_samples,
                search_alg=search_alg,
                scheduler=schedulers.build(space.scheduler, space.search, space.param_space, space.epochs,
                                           space.workers),
                time_budget_s=budgets.parse_duration(space.time_budget) if space.time_budget else None,
                trial_name_creator=TrialNamer(space.name),
                trial_dirname_creator=TrialNamer(space.name),
                # A trial's process is the next trial's: no process start, and torch's one-off cost of
                # its first optimizer (importing torch._dynamo, ~1.5 s here) is paid once per actor.
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                name=name,
                storage_path=storage_path,
                stop=stopper,
                verbose=options.verbose,
                callbacks=callbacks,
                failure_config=tune.FailureConfig(max_failures=options.max_failures),
                # No num_to_keep: Ray would delete a checkpoint the saved state may still point at.
                checkpoint_config=tune.CheckpointConfig(
                    checkpoint_score_attribute=space.metric,
                    checkpoint_score_order=space.mode,
                ),
            ),
        )
        return Outcome(experiment_path, _fit(tuner, experiment_path, space.scheduler), space.metric, meta["params"])


def resume(experiment_path: str, cluster: Cluster = Cluster(), data_dir: str | None = None) -> Outcome:
    """Continue an interrupted experiment: unfinished and errored trials go on from their latest
    checkpoints; finished trials are kept as they are and not run again."""
    experiment_path = storage.normalize(experiment_path)
    meta = report.load_meta(experiment_path)
    dataset = data.load(meta["dataset"], data_dir or meta["data_dir"])
    if torn := saved_state.cut_short(experiment_path):
        raise TunerError(f"cannot resume {experiment_path}: Ray's saved state {torn} is cut short (it was being "
                         "written when the disk filled); the results so far are kept: python -m tuner report "
                         f"{experiment_path}; to search on, start again with `tuner run --name <a new name>`")
    with _interruptible(experiment_path), connect(cluster):
        if not tune.Tuner.can_restore(experiment_path):
            raise TunerError(f"{experiment_path} has no Ray Tune state to resume from (it stopped before the first "
                             "trial was recorded); start it again with `tuner run --name <a new name>`")
        tuner = tune.Tuner.restore(
            experiment_path,
            trainable=trainable(_setup(meta, dataset, experiment_path)),
            resume_unfinished=True,
            resume_errored=True,
        )
        return Outcome(experiment_path, _fit(tuner, experiment_path, meta["scheduler"]), meta["metric"], meta["params"])
