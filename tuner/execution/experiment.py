"""Run one experiment: check everything that can be checked, then hand the space to Ray Tune."""

import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import ray
import torch
from ray import tune
from ray.tune.search.variant_generator import generate_variants

from tuner.data import DATA_DIR_ENV
from tuner.data.splits import Splits
from tuner.errors import Interrupted, TunerError
from tuner.execution import tracking
from tuner.execution.cluster import Cluster, connect
from tuner.execution.console import LiveProgress
from tuner.execution.trainable import TrialSetup, trainable
from tuner.results import report
from tuner.search import schedulers, searchers
from tuner.spec import budgets, hyperparameters
from tuner.spec import space as spaces
from tuner.spec.space import ExperimentSpec
from tuner.storage import filesystem as storage
from tuner.storage import meta as meta_file
from tuner.storage import saved_state
from tuner.storage.checkpoint_retention import RetireCheckpoints, retire_after_fit
from tuner.storage.meta import ExperimentMeta
from tuner.storage.moved_modules import old_module_paths
from tuner.storage.trial_logs import KeepResultRows
from tuner.storage.trial_names import TrialNamer
from tuner.training import parallel
from tuner.training.config_reads import RESULT_KEY, reads_of, unread_warning
from tuner.training.smoke import check_reported, smoke_test
from tuner.training.trial import Parts
from tuner.training.user_traceback import UserCodeError

SNAPSHOT_PERIOD_S = "2"


@dataclass(frozen=True)
class RunOptions:
    storage_path: str = storage.DEFAULT_STORAGE_PATH
    name: str | None = None
    seed: int = 0
    data_dir: str | None = None
    max_concurrent: int | None = None
    cluster: Cluster = field(default_factory=Cluster)  # default: a local instance, no dashboard
    max_failures: int = 2  # retries of a crashed trial, each from its latest checkpoint
    verbose: int = 1  # 0: the summary only (-q), 1: tuner's live view, 2: Ray's own full output (-v)
    smoke: bool = True  # one batch of the space's code on the first config before Ray starts
    mlflow: str | None = None  # a tracking URI or path: every trial logged to MLflow (tuner/execution/tracking.py)


@dataclass(frozen=True)
class Outcome:
    experiment_path: str
    trials: pd.DataFrame
    metric: str
    params: list[str]
    unread: str | None = None  # the warning naming param_space keys no trial read


def _check_resources(space: ExperimentSpec) -> int:
    """Fail before any trial starts if one trial cannot fit; returns how many trials fit at once."""
    cluster = ray.cluster_resources()
    if space.parallel == "dp" and not cluster.get("GPU"):
        raise TunerError(
            "parallel = 'dp' runs nn.DataParallel over GPUs, and the Ray cluster has none; use "
            "--parallel ddp --workers N to train one trial over several CPU processes"
        )
    fits = math.inf
    for resource, per_worker, flag in (
        ("CPU", space.cpus_per_worker, "--cpus-per-worker"),
        ("GPU", space.gpus_per_worker, "--gpus-per-worker"),
    ):
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


def _setup(parts: Parts, data: Splits | None, meta: ExperimentMeta, experiment_path: str, verbose: int) -> TrialSetup:
    return TrialSetup(
        parts=parts,
        data=ray.put(data) if data is not None else None,
        epochs=meta.epochs,
        seed=meta.seed,
        workers=meta.workers,
        cpus_per_worker=meta.cpus_per_worker,
        gpus_per_worker=meta.gpus_per_worker,
        experiment_path=experiment_path,
        parallel=meta.parallel,
        ray_logs=RAY_LOG_LEVELS[verbose],
    )


def _parts(space: ExperimentSpec) -> Parts:
    return Parts.of(
        model=space.model,
        dataset=space.dataset,
        loss=space.loss,
        metrics=space.metrics,
        optimizer=space.optimizer,
        train_loop=space.train_loop,
    )


@contextmanager
def _data_dir(data_dir: str | None) -> Iterator[None]:
    """`--data-dir` as TUNER_DATA_DIR, where the shipped loaders (and Ray's workers, started meanwhile)
    look, for the duration of the run."""
    previous = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        os.environ[DATA_DIR_ENV] = data_dir
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DATA_DIR_ENV, None)
        else:
            os.environ[DATA_DIR_ENV] = previous


def _load_data(parts: Parts, space: str) -> Splits | None:
    """The data every trial shares, loaded once here; None when each trial loads its own."""
    if parts.per_trial_data:
        return None
    try:
        return parts.load_data()
    except TunerError:
        raise
    except Exception as error:  # the space's own dataset(): its failure is the user's to see
        raise UserCodeError(f"space {space}: dataset() failed (traceback above)", error) from None


def first_config(param_space: dict[str, Any], seed: int) -> dict[str, Any]:
    """The config the first grid point gets, its other values sampled with the experiment's seed."""
    _, spec = next(generate_variants({"config": param_space}, random_state=np.random.RandomState(seed)))
    return spec["config"]


def _smoke(space: ExperimentSpec, parts: Parts, data: Splits | None, seed: int, verbose: int) -> None:
    use_gpu = space.gpus_per_worker > 0 and torch.cuda.is_available()
    config = first_config(space.param_space, seed)
    # One process: ddp and fsdp run unwrapped, pipeline as one stage of all its layers; dp needs a GPU here.
    strategy = space.parallel if use_gpu or space.parallel != "dp" else parallel.DEFAULT
    result = smoke_test(
        parts,
        config,
        data=data,
        epochs=space.epochs,
        seed=seed,
        device=torch.device("cuda" if use_gpu else "cpu"),
        space=space.name,
        parallel=strategy,
    )
    check_reported(space.name, result.metrics, space.metric)
    if space.stop:
        check_reported(
            space.name, result.metrics, budgets.parse_stop(space.stop).metric, what="stop condition's metric"
        )
    if verbose:
        print(
            f"smoke step: one batch of the space's code on the first config ran in {result.seconds * 1000:.0f} ms "
            "(--no-smoke skips it)",
            flush=True,
        )


T = TypeVar("T")


def _while_ray_starts(work: Callable[[], T]) -> Callable[[], T]:
    """Starts `work` on a daemon thread; returns the function that waits for its result or raises its
    error. Not a ThreadPoolExecutor: the interpreter joins its threads at exit, so a space's dataset()
    that hangs would keep the process alive after Ctrl-C."""
    future: Future[T] = Future()

    def keep_outcome() -> None:
        try:
            future.set_result(work())
        except BaseException as error:  # the space's own code may raise anything; result() re-raises it
            future.set_exception(error)

    def result() -> T:
        # Polled, not one blocking wait: once Ray runs, a Ctrl-C may land on one of its threads, and
        # Python acts on it only when this thread next runs its own code.
        while not future.done():
            time.sleep(0.1)
        return future.result()

    threading.Thread(target=keep_outcome, name="tuner-prepare", daemon=True).start()
    return result


def _parts_and_data(space: ExperimentSpec) -> tuple[Parts, Splits | None]:
    """The space's parts (importing a shipped dataset's library: scikit-learn takes ~1 s) and the data
    every trial shares (None when each loads its own)."""
    parts = _parts(space)
    return parts, _load_data(parts, space.name)


def _prepare(space: ExperimentSpec, options: RunOptions) -> tuple[Parts, Splits | None]:
    """_parts_and_data, and the smoke step on them."""
    parts, data = _parts_and_data(space)
    if options.smoke:
        _smoke(space, parts, data, options.seed, options.verbose)
    return parts, data


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


# Per RunOptions.verbose: Ray Tune's own reporter only when asked for (tuner.execution.console says why), and
# Ray's INFO logs from every process (a checkpoint saved, a worker group started) only then too.
TUNE_VERBOSITY = {0: 0, 1: 0, 2: 1}
RAY_LOG_LEVELS = {0: "WARNING", 1: "WARNING", 2: "INFO"}

# Ray's own words when a result lacks the metric the search ranks by (TuneController._validate_result_metrics).
RAY_MISSING_METRIC = "did not include the specified metric"


@contextmanager
def _ray_output(verbose: int) -> Iterator[None]:
    """Ray Tune's reporter only at -v: its quietest level still prints an experiment table and a
    TensorBoard hint, while its older engine (RAY_AIR_NEW_OUTPUT=0) prints nothing at verbose=0."""
    previous = os.environ.get("RAY_AIR_NEW_OUTPUT")
    if verbose < 2:
        os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("RAY_AIR_NEW_OUTPUT", None)
        else:
            os.environ["RAY_AIR_NEW_OUTPUT"] = previous


def _fit(
    tuner: tune.Tuner, experiment_path: str, meta: ExperimentMeta, verbose: int
) -> tuple[pd.DataFrame, str | None]:
    """Run the trials, then write the report; returns it and the warning about keys no trial read."""
    # How often Ray saves the experiment state and result rows to storage: what a killed driver or a
    # full disk leaves for `tuner resume` and `tuner report`. Ray's default waits 10 s or more.
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", SNAPSHOT_PERIOD_S)
    try:
        with warnings.catch_warnings(), _ray_output(verbose):
            # Ray suggests reuse_actors under PBT; tuner turns it off for multi-worker trials on purpose.
            warnings.filterwarnings("ignore", message="Consider boosting PBT performance")
            try:
                results = tuner.fit()
            finally:  # Ctrl-C included: the run has ended either way
                _record_end(experiment_path)
        if results.num_errors:
            # Ray may also end normally, its trials failed on the storage: the same error, and nothing
            # deleted or rewritten (retiring checkpoints would free space and hide the cause).
            _check_storage(experiment_path)
        if schedulers.retires_checkpoints(meta.scheduler):
            retire_after_fit(results)
        warning = _unread(results, meta, experiment_path)
        return report.write(experiment_path), warning
    except TunerError:
        raise
    except Exception as error:
        # A full or read-only storage makes Ray fail in many places (checkpoints, state files, even
        # its own error files); what the user must know is that the storage is the cause.
        _check_storage(experiment_path)
        if RAY_MISSING_METRIC in str(error):
            raise TunerError(
                f"a trial reported without metric {meta.metric!r}, which the search ranks by; "
                "report it in every ctx.report, or set metric to a name the loop reports (the "
                f"smoke step checks this, unless --no-smoke); results so far: {experiment_path}"
            ) from None
        raise


def _record_end(experiment_path: str) -> None:
    """When this run of the experiment ended, for `tuner list` (tuner/results/experiments.py)."""
    try:
        meta_file.update(experiment_path, ended_at=time.time())
    except OSError:
        pass  # a full disk: _check_storage below says so; the status is only a listing's nicety


def _unread(results: tune.ResultGrid, meta: ExperimentMeta, experiment_path: str) -> str | None:
    """The warning naming param_space keys no trial read, also kept in tuner.json; None when every key
    was read, or when no trial got as far as reporting."""
    # ResultGrid iterates by __getitem__ and __len__, which mypy does not count as iterable.
    reported = [result.metrics.get(RESULT_KEY) for result in results if result.metrics]  # type: ignore[attr-defined]
    if not any(reported):
        return None
    keys = sorted({param.split("/")[0] for param in meta.params})
    warning = unread_warning(keys, reads_of(reported), known=hyperparameters.KNOWN)
    meta_file.update(experiment_path, unread_params_warning=warning)
    return warning


def _check_storage(experiment_path: str) -> None:
    if problem := storage.write_problem(experiment_path):
        raise TunerError(
            f"cannot write to {experiment_path}: {problem}; what was written is kept: free space "
            f"or make it writable, then: python -m tuner resume {experiment_path}"
        ) from None


def _describe(part: Any) -> str | None:
    """How tuner.json names a space's part: a shipped name as it is, a callable by its name."""
    if part is None or isinstance(part, str):
        return part
    return f"{getattr(part, '__qualname__', type(part).__name__)} (own)"


def run(space: ExperimentSpec, options: RunOptions) -> Outcome:
    name = options.name or storage.default_experiment_name(space.name)
    storage_path = storage.normalize(options.storage_path)
    experiment_path = f"{storage_path.rstrip('/')}/{name}"
    if storage.exists(experiment_path):
        raise TunerError(
            f"experiment {experiment_path} already exists; pick another --name (results are never overwritten)"
        )
    if problem := storage.write_problem(storage_path):
        raise TunerError(f"cannot write to --storage-path {storage_path}: {problem}; pick another --storage-path")
    if options.mlflow:
        tracking.check_installed()
    stopper = budgets.parse_stop(space.stop) if space.stop else None
    if space.search == "auto":
        choice = searchers.choose(space.param_space, space.num_samples, space.scheduler, space.epochs)
        space = replace(space, search=choice.search, scheduler=choice.scheduler, num_samples=choice.num_samples)
        if options.verbose:
            print(f"tuner: {choice.reason}", flush=True)

    with _data_dir(options.data_dir):
        # Ray's start (2.3-3.5 s here) is mostly waiting on the processes it spawns, so the data load
        # and the smoke step (together 1-3 s) run meanwhile; their errors surface once Ray is up, before
        # anything is written. Measured by bench/peers.py.
        prepared = _while_ray_starts(lambda: _prepare(space, options))
        with (
            _interruptible(experiment_path),
            connect(_for_trials(options.cluster, space.workers), ray_logs=RAY_LOG_LEVELS[options.verbose]),
        ):
            parts, data = prepared()
            fits = _check_resources(space)
            max_concurrent = options.max_concurrent or space.max_concurrent or fits
            search_alg, param_space = searchers.search_algorithm(
                space.search, space.param_space, space.num_samples, options.seed, max_concurrent
            )
            if options.verbose:
                for notice in (
                    searchers.grid_notice(space.search, space.param_space, space.num_samples),
                    searchers.random_notice(space.search, space.param_space, space.num_samples),
                ):
                    if notice:
                        print(f"tuner: {notice}", flush=True)
            # Everything `resume` needs to rebuild the trainable; Ray's own tuner.pkl keeps the rest.
            meta = ExperimentMeta(
                space=space.name,
                source=str(Path(space.source).resolve()) if space.source else "",
                model=_describe(space.model),
                dataset=_describe(space.dataset),
                train_loop=_describe(space.train_loop),
                data_dir=options.data_dir,
                metric=space.metric,
                mode=space.mode,
                params=spaces.flat_keys(space.param_space),
                epochs=space.epochs,
                num_samples=space.num_samples,
                workers=space.workers,
                parallel=space.parallel,
                cpus_per_worker=space.cpus_per_worker,
                gpus_per_worker=space.gpus_per_worker,
                search=space.search,
                scheduler=space.scheduler,
                seed=options.seed,
                started_at=time.time(),
            )
            meta_file.write(experiment_path, meta)
            callbacks: list[tune.Callback] = [KeepResultRows()]
            if options.verbose == 1:
                callbacks.append(
                    LiveProgress(
                        space.metric,
                        space.mode,
                        meta.params,
                        space.epochs,
                        budgets.parse_duration(space.time_budget) if space.time_budget else None,
                    )
                )
            if options.mlflow:
                callbacks.append(tracking.mlflow_callback(options.mlflow, name))
                if options.verbose:
                    uri = tracking.tracking_uri(options.mlflow)
                    print(
                        f"mlflow: every trial is a run of experiment {name} in {uri} (mlflow ui --backend-store-uri "
                        f"{uri})",
                        flush=True,
                    )
            if schedulers.retires_checkpoints(space.scheduler):
                callbacks.append(RetireCheckpoints())
            tuner = tune.Tuner(
                trainable(_setup(parts, data, meta, experiment_path, options.verbose)),
                param_space=param_space,
                tune_config=tune.TuneConfig(
                    metric=space.metric,
                    mode=space.mode,
                    num_samples=searchers.trials(space.search, space.param_space, space.num_samples),
                    search_alg=search_alg,
                    scheduler=schedulers.trial_scheduler(
                        space.scheduler, space.search, space.param_space, space.epochs, space.pbt_mutable
                    ),
                    time_budget_s=budgets.parse_duration(space.time_budget) if space.time_budget else None,
                    trial_name_creator=TrialNamer(space.name),
                    trial_dirname_creator=TrialNamer(space.name),
                    # A trial's process is the next trial's: no process start, and torch's one-off cost of
                    # its first optimizer (importing torch._dynamo, ~1.5 s here) is paid once per actor.
                    # Not for multi-worker trials: Tune keeps a paused trial's actor for reuse with its
                    # training thread parked in tune.report, and that thread's Train run would keep its
                    # worker group, so under synchronous PBT the trial that should run next never gets one.
                    reuse_actors=space.workers == 1,
                ),
                run_config=tune.RunConfig(
                    name=name,
                    storage_path=storage_path,
                    stop=stopper,
                    verbose=TUNE_VERBOSITY[options.verbose],
                    callbacks=callbacks,
                    failure_config=tune.FailureConfig(max_failures=options.max_failures),
                    # No num_to_keep: Ray would delete a checkpoint the saved state may still point at.
                    checkpoint_config=tune.CheckpointConfig(
                        checkpoint_score_attribute=space.metric,
                        checkpoint_score_order=space.mode,
                    ),
                ),
            )
            trials, unread = _fit(tuner, experiment_path, meta, options.verbose)
            return Outcome(experiment_path, trials, space.metric, meta.params, unread)


def _space_of(meta: ExperimentMeta, experiment_path: str) -> ExperimentSpec:
    """The experiment's space module, loaded again: its code is what the trials run."""
    source = meta.source
    if not Path(source).is_file():
        raise TunerError(
            f"cannot resume {experiment_path}: its space module {source or '(unknown)'} is gone; put "
            "it back where it was (trials run its code), or start again with `tuner run`"
        )
    return spaces.load(source)


def _for_trials(cluster: Cluster, workers: int) -> Cluster:
    """The cluster, with Ray's State API on a local instance when trials run Ray Train worker groups
    (see Cluster.state_api)."""
    return replace(cluster, state_api=workers > 1)


def resume(
    experiment_path: str, cluster: Cluster = Cluster(), data_dir: str | None = None, verbose: int = 1
) -> Outcome:
    """Continue an interrupted experiment: unfinished and errored trials go on from their latest
    checkpoints; finished trials are kept as they are and not run again."""
    experiment_path = storage.normalize(experiment_path)
    meta = report.load_meta(experiment_path)
    space = _space_of(meta, experiment_path)
    if torn := saved_state.cut_short(experiment_path):
        raise TunerError(
            f"cannot resume {experiment_path}: Ray's saved state {torn} is cut short (it was being "
            "written when the disk filled); the results so far are kept: python -m tuner report "
            f"{experiment_path}; to search on, start again with `tuner run --name <a new name>`"
        )
    with _data_dir(data_dir or meta.data_dir):
        loaded = _while_ray_starts(lambda: _parts_and_data(space))  # as in run()
        with (
            _interruptible(experiment_path),
            connect(_for_trials(cluster, space.workers), ray_logs=RAY_LOG_LEVELS[verbose]),
        ):
            parts, data = loaded()
            if not tune.Tuner.can_restore(experiment_path):
                raise TunerError(
                    f"{experiment_path} has no Ray Tune state to resume from (it stopped before the "
                    "first trial was recorded); start it again with `tuner run --name <a new name>`"
                )
            # Running again: `tuner list` tells a live run by the end it has not recorded yet.
            meta_file.write(experiment_path, replace(meta, ended_at=None))
            # Experiments saved before tuner's modules moved name the old paths: Ray unpickles them in
            # restore (tuner.pkl) and again when fit loads each trial's state.
            with old_module_paths():
                try:
                    tuner = tune.Tuner.restore(
                        experiment_path,
                        trainable=trainable(_setup(parts, data, meta, experiment_path, verbose)),
                        resume_unfinished=True,
                        resume_errored=True,
                    )
                except (ModuleNotFoundError, AttributeError) as error:
                    if "tuner" not in str(error):
                        raise
                    raise TunerError(
                        f"cannot resume {experiment_path}: its saved state names tuner code this version "
                        f"of tuner does not have ({error}); the results so far are kept: python -m tuner "
                        f"report {experiment_path}; resume it with the tuner that started it, or start "
                        "again with `tuner run --name <a new name>`"
                    ) from None
                trials, unread = _fit(tuner, experiment_path, meta, verbose)
            return Outcome(experiment_path, trials, meta.metric, meta.params, unread)
