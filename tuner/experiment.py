"""Run one experiment: check everything that can be checked, then hand the space to Ray Tune."""

import math
import time
from dataclasses import dataclass

import pandas as pd
import ray
from ray import tune
from ray.tune.search.basic_variant import BasicVariantGenerator

from tuner import data, report, storage
from tuner.errors import TunerError
from tuner.space import Space
from tuner.trainable import trainable
from tuner.train import TrialSetup

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
    address: str | None = None  # an existing Ray cluster; None starts a local instance


@dataclass(frozen=True)
class Outcome:
    experiment_path: str
    trials: pd.DataFrame
    metric: str


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


def run(space: Space, options: RunOptions) -> Outcome:
    name = options.name or f"{space.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    storage_path = storage.normalize(options.storage_path)
    experiment_path = f"{storage_path.rstrip('/')}/{name}"
    if storage.exists(experiment_path):
        raise TunerError(f"experiment {experiment_path} already exists; pick another --name (results are never overwritten)")
    dataset = data.load(space.dataset, options.data_dir)  # a missing data root fails here, before Ray starts

    ray.init(address=options.address, include_dashboard=False, dashboard_host="127.0.0.1",
             configure_logging=True, logging_level="WARNING")
    try:
        fits = _check_resources(space)
        max_concurrent = options.max_concurrent or space.max_concurrent or fits
        setup = TrialSetup(
            model=space.model,
            data=ray.put(dataset),
            epochs=space.epochs,
            seed=options.seed,
            workers=space.workers,
            cpus_per_worker=space.cpus_per_worker,
            gpus_per_worker=space.gpus_per_worker,
            experiment_path=experiment_path,
        )
        storage.write_meta(experiment_path, {
            "space": space.name, "source": space.source, "model": space.model, "dataset": space.dataset,
            "metric": space.metric, "mode": space.mode, "params": sorted(space.param_space),
            "epochs": space.epochs, "num_samples": space.num_samples, "workers": space.workers, "seed": options.seed,
        })
        tuner = tune.Tuner(
            trainable(setup),
            param_space=space.param_space,
            tune_config=tune.TuneConfig(
                metric=space.metric,
                mode=space.mode,
                num_samples=space.num_samples,
                max_concurrent_trials=max_concurrent,
                search_alg=BasicVariantGenerator(random_state=options.seed),
                trial_name_creator=TrialNamer(space.name),
                trial_dirname_creator=TrialNamer(space.name),
            ),
            run_config=tune.RunConfig(
                name=name,
                storage_path=storage_path,
                checkpoint_config=tune.CheckpointConfig(
                    num_to_keep=2, checkpoint_score_attribute=space.metric, checkpoint_score_order=space.mode
                ),
            ),
        )
        tuner.fit()
    finally:
        ray.shutdown()
    return Outcome(experiment_path, report.write(experiment_path), space.metric)
