"""The Tune function trainable: one worker trains in-process, several run DDP through Ray Train V2."""

import os
from typing import Any

import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
from ray import tune
from ray.tune.integration.ray_train import TuneReportCallback

from tuner.train import Runtime, TrialSetup, train

# A DDP trial's own actor only waits on the Ray Train run; it asks for a little memory instead of
# CPU so that its worker group can use every core (Tune refuses a request for nothing at all).
DRIVER_ONLY_RESOURCES = {"CPU": 0, "memory": 64 * 1024**2}


def in_process_runtime(setup: TrialSetup) -> Runtime:
    use_gpu = setup.gpus_per_worker > 0 and torch.cuda.is_available()

    def report(metrics: dict[str, Any], ckpt_dir: str | None) -> None:
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(ckpt_dir) if ckpt_dir else None)

    return Runtime(
        trial_id=tune.get_context().get_trial_id(),
        rank=0,
        world_size=1,
        device=torch.device("cuda" if use_gpu else "cpu"),
        report=report,
        restored=tune.get_checkpoint(),
        wrap_model=lambda model: model,
        all_reduce=lambda tensor: tensor,
    )


def ray_train_runtime(trial_id: str) -> Runtime:
    context = ray.train.get_context()

    def report(metrics: dict[str, Any], ckpt_dir: str | None) -> None:
        # Every rank must call report (it is a barrier); only rank 0 has a checkpoint to save.
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(ckpt_dir) if ckpt_dir else None)

    def all_reduce(tensor: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    return Runtime(
        trial_id=trial_id,
        rank=context.get_world_rank(),
        world_size=context.get_world_size(),
        device=ray.train.torch.get_device(),
        report=report,
        restored=ray.train.get_checkpoint(),
        wrap_model=ray.train.torch.prepare_model,
        all_reduce=all_reduce,
    )


def train_worker(loop_config: dict[str, Any]) -> None:
    """Runs on each Ray Train worker."""
    train(loop_config["config"], loop_config["setup"], ray_train_runtime(loop_config["trial_id"]))


def run_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    if setup.workers == 1:
        train(config, setup, in_process_runtime(setup))
        return
    context = tune.get_context()
    trial_dir_name = os.path.basename(context.get_trial_dir())
    trainer = ray.train.torch.TorchTrainer(
        train_worker,
        train_loop_config={"config": config, "setup": setup, "trial_id": context.get_trial_id()},
        scaling_config=ray.train.ScalingConfig(
            num_workers=setup.workers,
            use_gpu=setup.gpus_per_worker > 0,
            resources_per_worker={"CPU": setup.cpus_per_worker, "GPU": setup.gpus_per_worker},
        ),
        run_config=ray.train.RunConfig(
            # Named after the trial so the dashboard and the storage tree tell runs apart; a rerun of
            # the same trial finds this run by name and resumes from its latest checkpoint.
            name=trial_dir_name,
            storage_path=f"{setup.experiment_path.rstrip('/')}/ddp_runs",
            callbacks=[TuneReportCallback()],
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=2),
        ),
    )
    trainer.fit()


def trainable(setup: TrialSetup):
    if setup.workers == 1:
        resources = {"CPU": setup.cpus_per_worker, "GPU": setup.gpus_per_worker}
    else:
        resources = DRIVER_ONLY_RESOURCES
    return tune.with_resources(tune.with_parameters(run_trial, setup=setup), resources)
