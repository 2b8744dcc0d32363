"""The Tune function trainable: one worker runs the trial's loop in-process (also `dp`, over the trial's
GPUs), several run it on Ray Train V2 workers (ddp, fsdp, pipeline). This is where Ray meets the loop:
each runtime gives `run_trial_loop` a report function and the checkpoint to restore from, in its own
API. Either way the trial's checkpoints are Tune's (`tuner/execution/checkpoint_bridge.py`)."""

import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ray
import ray.train
import ray.train.torch
import torch
from ray import tune

from tuner.data.splits import Splits
from tuner.execution import packing
from tuner.execution.checkpoint_bridge import ForwardToTune, TrainRun, TrialStopped, tune_lets_training_go_on
from tuner.execution.mailbox import Mailbox
from tuner.ray_compat import env, logs, private
from tuner.settings import Resources
from tuner.storage import filesystem
from tuner.storage.whole_files import checkpoint_directory
from tuner.training import devices, gpu_memory
from tuner.training.context import LoopSetup, load_checkpoint
from tuner.training.trial import Parts, cpu_threads, run_trial_loop

# A DDP trial's own actor only waits on the Ray Train run; it asks for a little memory instead of
# CPU so that its worker group can use every core (Tune refuses a request for nothing at all).
DRIVER_ONLY_RESOURCES: dict[str, float] = {"CPU": 0, "memory": 64 * 1024**2}
STAGING_DIR = "train_runs"  # under the experiment: multi-worker trials' Ray Train runs, while they run


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of an experiment shares; the per-trial part is the hyperparameter config."""

    parts: Parts  # the space module's loop and dataset callables, pickled to every worker
    data: ray.ObjectRef | None  # -> Splits, put in the object store once by the driver; None: per trial
    epochs: int
    seed: int
    resources: Resources  # the spec's own
    experiment_path: str  # local path or pyarrow-fs URI of the experiment directory
    # Ray Train's own loggers in its controller and workers: they follow Train's LoggingConfig (INFO by
    # default), not the RAY_LOGGER_LEVEL tuner gives a local instance, and at INFO every rank prints
    # each report and checkpoint of every epoch into the live view.
    ray_logs: str

    def loop_setup(self, device: torch.device) -> LoopSetup:
        return LoopSetup(
            epochs=self.epochs,
            seed=self.seed,
            device=device,
            parallel=self.resources.parallel,
            precision=self.resources.precision,
            cpu_threads=cpu_threads(self.resources.cpus_per_worker),
        )


def _restored(checkpoint: Any, device: torch.device) -> dict[str, Any] | None:
    if checkpoint is None:
        return None
    with checkpoint_directory(checkpoint) as directory:
        return load_checkpoint(directory, device)


def _data(setup: TrialSetup) -> Splits | None:
    return ray.get(setup.data) if setup.data is not None else None


def device_for(resources: Resources) -> torch.device:
    """Where a one-process trial (and the smoke step) trains: its GPU when it asked for one (or `auto`,
    in the smoke step: the driver's GPU measures what a trial needs) and one is there. A trial without
    a GPU never asks CUDA anything."""
    wants_gpu = resources.gpus_auto or resources.gpus > 0
    return devices.with_index(torch.device("cuda")) if wants_gpu and torch.cuda.is_available() else torch.device("cpu")


class GpuShareExceeded(RuntimeError):
    """A trial that shares its GPU needed more than its share: it fails alone, the others go on."""


def _cap_gpu_memory(device: torch.device, gpus_per_worker: float) -> float | None:
    """A trial sharing its GPU lets its allocator take its share only (ray-project/ray#13680: Ray's
    fractional GPUs are logical); returns the fraction, None when the trial has its GPU to itself."""
    if device.type != "cuda":
        return None
    fraction = packing.memory_fraction(gpus_per_worker, gpu_memory.total_bytes(device))
    if fraction is not None:
        torch.cuda.set_per_process_memory_fraction(fraction, device)
    return fraction


def _share_exceeded(error: BaseException, gpus_per_worker: float, fraction: float, device: torch.device) -> str:
    total = gpu_memory.total_bytes(device) / packing.GIB
    larger = packing.share_of(max(1, packing.how_many_fit(1, gpus_per_worker) // 2))
    return (
        f"the trial ran out of its share of the GPU: gpus_per_worker = {gpus_per_worker:g} lets it take "
        f"{fraction * total:.1f} of the GPU's {total:.0f} GiB, so that the trials sharing the GPU cannot take "
        f"each other's memory; give each trial more with --gpus-per-worker {larger:g} (fewer trials per GPU), "
        f"or make it smaller (batch_size). CUDA said: {str(error).splitlines()[0] if str(error) else error!r}"
    )


def run_in_process(config: dict[str, Any], setup: TrialSetup) -> None:
    logs.quiet_exit_in_finalizers(setup.ray_logs)
    device = device_for(setup.resources)
    share = float(setup.resources.gpus)
    fraction = _cap_gpu_memory(device, share)
    try:
        _run_in_process(config, setup, device)
    except torch.cuda.OutOfMemoryError as error:
        if fraction is None:
            raise
        raise GpuShareExceeded(_share_exceeded(error, share, fraction, device)) from error


def _run_in_process(config: dict[str, Any], setup: TrialSetup, device: torch.device) -> None:

    def report(metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(checkpoint_dir) if checkpoint_dir else None)

    run_trial_loop(
        setup.parts,
        config,
        setup.loop_setup(device),
        data=_data(setup),
        trial_id=tune.get_context().get_trial_id(),
        report=report,
        restored=_restored(tune.get_checkpoint(), device),
    )


def train_worker(loop_config: dict[str, Any]) -> None:
    """Runs on each Ray Train worker; Ray Train has set up torch.distributed (gloo, or NCCL on GPUs)."""
    setup: TrialSetup = loop_config["setup"]
    logs.train_report_lines(setup.ray_logs)
    logs.quiet_exit_in_finalizers(setup.ray_logs)
    device = ray.train.torch.get_device()

    def report(metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        # Every rank must call report (it is a barrier); only rank 0 has a checkpoint to save.
        ray.train.report(
            metrics, checkpoint=ray.train.Checkpoint.from_directory(checkpoint_dir) if checkpoint_dir else None
        )
        if not tune_lets_training_go_on(loop_config["mailbox"]):
            raise TrialStopped

    try:
        # The Tune checkpoint the trial hands in (its latest, or a PBT donor's); never the Train run's
        # own, since each fit is a fresh run.
        run_trial_loop(
            setup.parts,
            loop_config["config"],
            setup.loop_setup(device),
            data=_data(setup),
            trial_id=loop_config["trial_id"],
            report=report,
            restored=_restored(loop_config["checkpoint"], device),
        )
    except TrialStopped:
        pass  # the run ends as a finished one, and Train releases its worker group


def run_on_workers(config: dict[str, Any], setup: TrialSetup) -> None:
    context = tune.get_context()
    trial_id = context.get_trial_id()  # read now: Tune's session is gone once it stopped the trial
    # A fresh Train run for every fit (a retry, a resume, a PBT exploit): the run only stages
    # checkpoints on their way to Tune, and it is deleted afterwards.
    run_name = f"{os.path.basename(context.get_trial_dir())}-{uuid.uuid4().hex[:8]}"
    staging = filesystem.join(setup.experiment_path, STAGING_DIR)
    mailbox = Mailbox.remote()  # type: ignore[attr-defined]
    trainer = private.torch_trainer_without_needless_actors(env.on_local_instance())(
        train_worker,
        train_loop_config={
            "config": config,
            "setup": setup,
            "trial_id": trial_id,
            "checkpoint": tune.get_checkpoint(),
            "mailbox": mailbox,
        },
        scaling_config=ray.train.ScalingConfig(
            num_workers=setup.resources.workers,
            use_gpu=setup.resources.gpus > 0,
            resources_per_worker={"CPU": setup.resources.cpus_per_worker, "GPU": setup.resources.gpus},
        ),
        run_config=ray.train.RunConfig(
            name=run_name,
            storage_path=staging,
            # Train V2 takes its own UserCallback here; the annotation still names Tune's Callback.
            callbacks=[ForwardToTune(mailbox)],  # type: ignore[list-item]
            # Safe: the workers wait after each report until Tune has its copy of the checkpoint.
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=1),
            logging_config=ray.train.LoggingConfig(log_level=setup.ray_logs),  # type: ignore[call-arg]
        ),
    )
    run = _train_runs[trial_id] = TrainRun(
        trainer, mailbox, after_fit=lambda: _delete_staging(filesystem.join(staging, run_name))
    )
    with env.fast_train_polls():
        run.run()


def _delete_staging(path: str) -> None:
    fs, inner = filesystem.filesystem(path)
    try:
        fs.delete_dir(inner)
    except (FileNotFoundError, OSError):
        shutil.rmtree(inner, ignore_errors=True)  # gone already, or half-written: nothing to keep


def run_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    if setup.resources.in_process:
        run_in_process(config, setup)
    else:
        run_on_workers(config, setup)


# The Train run of the trial this actor runs, for its cleanup below (a multi-worker trial's actor is
# never reused, so there is at most one).
_train_runs: dict[str, TrainRun] = {}


def _cleanup_when_train_run_ended(trial_id: str, cleanup: Callable[[], None]) -> None:
    # A module function, not a method: Ray pickles the trainable class by value, and this dict with it.
    run = _train_runs.pop(trial_id, None)
    if run is not None:
        run.stopping.set()
    try:
        cleanup()  # Tune's own: wakes the trial's thread from tune.report with SystemExit
    finally:
        if run is not None:
            run.wait_until_ended()


def actor_name(trial_id: str) -> str:
    """What Ray's dashboard (its Actors page, the log lines of the actor's process) calls the actor that
    runs a trial."""
    return f"trial {trial_id}"


def trainable(setup: TrialSetup):
    # Classes built at run time, as Tune builds its own function trainables, so that each actor is named
    # after its trial: Ray names an actor by its class's own __repr__, once it is made. The resources go
    # on the function (Tune's class reads them there): `tune.with_resources` on a class would subclass
    # it, and its processes would be titled `ray::ResourceTrainable`.
    in_process = setup.resources.in_process
    resources = (
        {"CPU": setup.resources.cpus_per_worker, "GPU": setup.resources.gpus} if in_process else DRIVER_ONLY_RESOURCES
    )
    function_trial = private.function_trainable_class(
        tune.with_resources(tune.with_parameters(run_trial, setup=setup), resources), "run_trial"
    )
    if in_process:

        class InProcessTrial(function_trial):  # type: ignore[misc,valid-type]
            """Tune reuses this actor for trial after trial: Ray's Actors page keeps the name of the trial
            it was made for, and each reset names the log lines after the trial it runs now."""

            def __repr__(self) -> str:
                return actor_name(self.trial_id)

            def reset(self, new_config: dict[str, Any], storage: Any = None) -> bool:
                done = super().reset(new_config, storage)
                private.name_log_lines(repr(self))
                return bool(done)

        return InProcessTrial

    class MultiWorkerTrial(function_trial):  # type: ignore[misc,valid-type]
        """Tune's function trainable, whose cleanup (Tune stopping or pausing the trial) waits for the
        trial's Train run to end by itself: the actor's exit would otherwise kill the Train controller
        with it, and a killed controller's worker group stays reserved until Ray's cleaner notices."""

        def __repr__(self) -> str:
            return actor_name(self.trial_id)

        def cleanup(self) -> None:
            _cleanup_when_train_run_ended(self.trial_id, super().cleanup)

    return MultiWorkerTrial
