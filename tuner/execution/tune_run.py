"""An experiment handed to Ray Tune: the Tuner built from the spec and the search plan (or restored
from storage), fitted, and what the fit leaves behind recorded in tuner.json. Everything here is an
adapter to Ray's API; the driver (tuner/driver.py) says in which order it happens."""

import logging
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import ray
from ray import tune

from tuner.command import tuner_command, tuner_hint
from tuner.data.splits import Splits
from tuner.errors import Interrupted, TunerError
from tuner.execution import packing, tracking
from tuner.execution.console import EarlierTrials, LiveProgress
from tuner.execution.live_study import LiveStudy
from tuner.execution.phases import Phases
from tuner.execution.ray_metrics import RayMetrics
from tuner.execution.stopper import MetricThreshold
from tuner.execution.tensorboard import TrialsForTensorBoard
from tuner.execution.trainable import TrialSetup, trainable
from tuner.execution.trial_phases import TrialPhases
from tuner.ray_compat import env, errors, logs, private
from tuner.search import decisions, schedulers
from tuner.search.plan import SearchPlan
from tuner.settings import Resources, RunOptions
from tuner.settings.budgets import stop_reached, time_budget_reached
from tuner.spec import hyperparameters
from tuner.spec.param_space import flat_keys
from tuner.spec.space import ExperimentSpec
from tuner.storage import filesystem
from tuner.storage import meta as meta_file
from tuner.storage.checkpoint_retention import RetireCheckpoints, retire_after_fit
from tuner.storage.decisions import DecisionFile
from tuner.storage.ended_trials import EndedTrialsLeaveTheSync
from tuner.storage.meta import ExperimentMeta
from tuner.storage.trial_logs import KeepResultRows
from tuner.storage.trial_names import TrialNamer
from tuner.storage.whole_files import ray_storage
from tuner.training.config_reads import RESULT_KEY, given_keys, reads_of, unread_warning
from tuner.training.trial import Parts

log = logging.getLogger(__name__)
# Per RunOptions.verbose: Ray Tune's own reporter only when asked for (tuner.execution.console says why), and
# Ray's INFO logs from every process (a checkpoint saved, a worker group started) only then too.
TUNE_VERBOSITY = {0: 0, 1: 0, 2: 1}
RAY_LOG_LEVELS = {0: "WARNING", 1: "WARNING", 2: "INFO"}


def _check_dp(resources: Resources, cluster: Mapping[str, float]) -> None:
    if resources.parallel == "dp" and not cluster.get("GPU"):
        raise TunerError(
            "parallel = 'dp' runs nn.DataParallel over GPUs, and the Ray cluster has none; use "
            "--parallel ddp --workers N to train one trial over several CPU processes"
        )


def gpu_plan(resources: Resources, measured: packing.Measured | None, unmeasured: str) -> packing.GpuPlan:
    """gpus_per_worker as the trials will run with it (`auto` resolved by tuner/execution/packing.py
    from the cluster's GPUs and CPUs and the smoke step's measurement), and why."""
    cluster = ray.cluster_resources()
    _check_dp(resources, cluster)
    per_node = [node["Resources"].get("GPU", 0.0) for node in ray.nodes() if node.get("Alive")]
    return packing.plan(
        resources.gpus_per_worker,
        workers=resources.workers,
        parallel=resources.parallel,
        cpus_per_worker=resources.cpus_per_worker,
        cluster=packing.ClusterGpus(cluster.get("GPU", 0.0), cluster.get("CPU", 0.0), max(per_node, default=0.0)),
        measured=measured,
        unmeasured=unmeasured,
    )


def gpu_sharing(resources: Resources) -> str | None:
    """How trials share the GPUs, as the live view's status line says it; None when they don't."""
    gpus = resources.gpus_per_worker
    if isinstance(gpus, str) or not 0 < gpus < 1:
        return None
    return f"{packing.how_many_fit(1, gpus)} trials per GPU"


def trials_that_fit(resources: Resources, cluster: Mapping[str, float] | None = None) -> int:
    """Fail before any trial starts if one trial cannot fit; returns how many trials fit at once in
    `cluster` (its resources, by default the connected Ray cluster's)."""
    cluster = ray.cluster_resources() if cluster is None else cluster
    _check_dp(resources, cluster)
    fits = math.inf
    for resource, per_worker, flag in (
        ("CPU", resources.cpus_per_worker, "--cpus-per-worker"),
        ("GPU", resources.gpus, "--gpus-per-worker"),
    ):
        if per_worker <= 0:
            continue
        need, have = resources.workers * per_worker, cluster.get(resource, 0.0)
        if need > have:
            raise TunerError(
                f"a trial needs {resources.workers} workers x {per_worker:g} {resource} = {need:g} {resource}, "
                f"but the Ray cluster has {have:g}; lower --workers or {flag}"
            )
        fits = min(fits, packing.how_many_fit(have, need))
    return int(fits)


def trial_setup(
    parts: Parts, data: Splits | None, meta: ExperimentMeta, experiment_path: str, verbose: int
) -> TrialSetup:
    return TrialSetup(
        parts=parts,
        data=ray.put(data) if data is not None else None,
        epochs=meta.budget.epochs,
        seed=meta.seed,
        resources=meta.resources,
        experiment_path=experiment_path,
        ray_logs=RAY_LOG_LEVELS[verbose],
    )


def new_tuner(
    spec: ExperimentSpec,
    plan: SearchPlan,
    options: RunOptions,
    setup: TrialSetup,
    name: str,
    storage_path: str,
    max_concurrent: int,
    phases: Phases | None = None,
    earlier_trials: EarlierTrials | None = None,
) -> tune.Tuner:
    """The Ray Tune run of `spec`'s trials; `earlier_trials`: those of the experiment's earlier runs, for
    an `extend` (the live view counts the whole experiment)."""
    live_study = LiveStudy(
        name, list(spec.objective.objectives), spec.objective.constraint_list, spec.param_space, spec.budget.epochs
    )
    ray_metrics = RayMetrics(name, list(spec.objective.objectives), spec.budget.epochs)
    callbacks: list[tune.Callback] = [
        EndedTrialsLeaveTheSync(),
        KeepResultRows(),
        TrialsForTensorBoard(flat_keys(spec.param_space)),
        live_study,
        ray_metrics,
    ]
    if phases is not None and phases.shown:
        callbacks.append(TrialPhases(phases))
    if options.verbose == 1:
        callbacks.append(
            LiveProgress(
                spec.objective.metric,
                spec.objective.mode,
                flat_keys(spec.param_space),
                spec.budget.epochs,
                time_budget=spec.budget.time_budget,
                stop=spec.budget.stop,
                gpu_sharing=gpu_sharing(spec.resources),
                earlier_trials=earlier_trials,
                constraints=spec.objective.constraint_list,
            )
        )
    if options.mlflow:
        callbacks.append(tracking.mlflow_callback(options.mlflow, name))
        uri = tracking.tracking_uri(options.mlflow)
        log.info("mlflow: every trial is a run of experiment %s in %s (%s)", name, uri, tracking.ui_command(uri))
    if not schedulers.scheduler(plan.tuning.scheduler).shares_checkpoints:
        # First: its look at storage at each snapshot fails on a store that went away and ends the run,
        # before KeepResultRows waits out its own upload's retries (~6 s) to the same end.
        callbacks.insert(0, RetireCheckpoints())
    if isinstance(plan.scheduler, decisions.Recording):
        # Why each trial stopped: decisions.jsonl, the study, Ray's metrics.
        plan.scheduler.record_to(ray_metrics.also(live_study.also(DecisionFile())))
    stop = spec.budget.stop_condition
    storage_path, storage_filesystem = ray_storage(storage_path)
    return tune.Tuner(
        trainable(setup),
        param_space=plan.param_space,
        tune_config=tune.TuneConfig(
            metric=spec.objective.metric,
            mode=spec.objective.mode,
            num_samples=plan.num_samples,
            search_alg=plan.search_algorithm(max_concurrent),
            scheduler=plan.scheduler,
            time_budget_s=spec.budget.time_budget_s,
            trial_name_creator=TrialNamer(spec.name),
            trial_dirname_creator=TrialNamer(spec.name),
            # A trial's process is the next trial's: no process start, and torch's one-off cost of
            # its first optimizer (importing torch._dynamo) is paid once per actor.
            # Not for multi-worker trials: Tune keeps a paused trial's actor for reuse with its
            # training thread parked in tune.report, and that thread's Train run would keep its
            # worker group, so under synchronous PBT the trial that should run next never gets one.
            reuse_actors=spec.resources.in_process,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=storage_path,
            storage_filesystem=storage_filesystem,
            stop=MetricThreshold(stop) if stop is not None else None,
            verbose=TUNE_VERBOSITY[options.verbose],
            callbacks=callbacks,
            failure_config=tune.FailureConfig(max_failures=options.max_failures),
            # No num_to_keep: Ray would delete a checkpoint the saved state may still point at.
            checkpoint_config=tune.CheckpointConfig(
                checkpoint_score_attribute=spec.objective.metric,
                checkpoint_score_order=spec.objective.mode,
            ),
        ),
    )


def restored_tuner(experiment_path: str, setup: TrialSetup) -> tune.Tuner:
    if not tune.Tuner.can_restore(experiment_path):
        raise TunerError(
            f"{experiment_path} has no Ray Tune state to resume from (it stopped before the "
            f"first trial was recorded); start it again with `{tuner_command()} run --name <a new name>`"
        )
    try:
        path, storage_filesystem = ray_storage(experiment_path)
        with logs.quiet_analysis_warnings():  # Ray reads the trials' results as it restores
            return tune.Tuner.restore(
                path,
                trainable=trainable(setup),
                resume_unfinished=True,
                resume_errored=True,
                storage_filesystem=storage_filesystem,
            )
    except (ModuleNotFoundError, AttributeError) as error:
        if "tuner" not in str(error):
            raise _unrestorable(experiment_path, error) from None
        raise TunerError(
            f"cannot resume {experiment_path}: its saved state names tuner code this version "
            f"of tuner does not have ({error}); the results so far are kept: "
            f"{tuner_hint('report', experiment_path)}; resume it with the tuner that started it, or start "
            f"again with `{tuner_command()} run --name <a new name>`"
        ) from None
    except Exception as error:  # tuner.pkl or a searcher's state damaged past what the checks before saw
        raise _unrestorable(experiment_path, error) from None


def _unrestorable(experiment_path: str, error: Exception) -> TunerError:
    reason = str(error).splitlines()[0][:120] if str(error) else ""
    return TunerError(
        f"cannot resume {experiment_path}: Ray cannot restore its saved state ({type(error).__name__}"
        f"{': ' + reason if reason else ''}: damaged, or written by another version of Ray); the results so far "
        f"are kept: {tuner_hint('report', experiment_path)}"
    )


def fit(tuner: tune.Tuner, experiment_path: str, meta: ExperimentMeta, verbose: int) -> str | None:
    """Run the trials; returns the warning about param_space keys no trial read (None if every key was
    read), also kept in tuner.json."""
    storage_problem = filesystem.recent_write_problem(experiment_path)
    try:
        with (
            env.quiet_tune_reporter(verbose),
            env.frequent_snapshots(),
            logs.quiet_analysis_warnings(),
            logs.quiet_pbt_reuse_advice(),
            logs.quiet_unwritten_progress_file(),
            logs.storage_failures_in_one_line(verbose < 2, experiment_path, storage_problem),
            logs.quiet_interrupt_advice(verbose < 2),
            private.callback_usage_untagged(),
        ):
            started = time.monotonic()
            try:
                results = tuner.fit()
            except Exception:
                # The storage first: each further call to an object store that went away waits out its
                # retries (~6 s with pyarrow's defaults) only to fail as the run did.
                check_storage(experiment_path, storage_problem)
                _record_end(experiment_path)
                raise
            except BaseException:  # Ctrl-C: the run has ended all the same
                _record_end(experiment_path)
                raise
            if results.num_errors:
                # Ray may also end normally, its trials failed on the storage: the same error, and nothing
                # deleted or rewritten (retiring checkpoints would free space and hide the cause).
                check_storage(experiment_path, storage_problem)
            _record_end(experiment_path)
            if stopped_by := _stopped_by(results, meta, time.monotonic() - started):
                meta_file.update(experiment_path, stopped_by=stopped_by)
        if not schedulers.scheduler(meta.tuning.scheduler).shares_checkpoints:
            retire_after_fit(results)
        return _unread(results, meta, experiment_path)
    except TunerError:
        raise
    except Exception as error:
        # A full or read-only storage makes Ray fail in many places (checkpoints, state files, even
        # its own error files); what the user must know is that the storage is the cause.
        check_storage(experiment_path, storage_problem)
        if errors.is_missing_metric(error):
            raise TunerError(
                f"a trial reported without metric {meta.objective.metric!r}, which the search ranks by; "
                "report it in every ctx.report, or set metric to a name the loop reports (the "
                f"smoke step checks this, unless --no-smoke); results so far: {experiment_path}"
            ) from None
        raise


def _record_end(experiment_path: str) -> None:
    """When this run of the experiment ended, for `tuner list` (tuner/results/experiments.py)."""
    try:
        meta_file.update(experiment_path, ended_at=time.time())
    except OSError:
        pass  # a full disk: check_storage says so; the status is only a listing's nicety


def _stopped_by(results: tune.ResultGrid, meta: ExperimentMeta, elapsed: float) -> str | None:
    """What ended the run, in words, when --stop or the time budget did: the summary, `tuner list` and
    `tuner report` say it, and count the trials it cut short as stopped early (results/report.py).
    The live view tells the same from the results it sees (execution/console.py, _stopped_by)."""
    # Once a trial meets --stop, the stopper ends every trial (MetricThreshold.stop_all), and Tune ends
    # the run once the time budget is spent.
    budget = meta.budget
    # Every trial there and run to its end by itself: nothing was stopped. (Tune has marked them all
    # TERMINATED by now, cut short or not.)
    epochs = [int(result.metrics.get("epoch", 0) or 0) for result in results]  # type: ignore[attr-defined]
    if len(epochs) >= (meta.total_trials or 0) and all(epoch >= budget.epochs for epoch in epochs):
        return None
    if (condition := budget.stop_condition) is not None and budget.stop is not None:
        first: tuple[float, str] | None = None
        for result in results:  # type: ignore[attr-defined]
            rows = result.metrics_dataframe
            if rows is None or condition.metric not in rows or "reported_at" not in rows:
                continue
            met = rows[
                rows[condition.metric].map(lambda score: isinstance(score, (int, float)) and condition.reached(score))
            ]
            if len(met) and (first is None or met["reported_at"].min() < first[0]):
                first = float(met["reported_at"].min()), str(result.metrics.get("trial_id", ""))
        if first is not None:
            return stop_reached(budget.stop, first[1])
    if budget.time_budget is not None and budget.time_budget_s is not None and elapsed >= budget.time_budget_s:
        return time_budget_reached(budget.time_budget)
    return None


def _unread(results: tune.ResultGrid, meta: ExperimentMeta, experiment_path: str) -> str | None:
    # ResultGrid iterates by __getitem__ and __len__, which mypy does not count as iterable.
    reported = [result.metrics.get(RESULT_KEY) for result in results if result.metrics]  # type: ignore[attr-defined]
    if not any(reported):
        return None  # no trial got as far as reporting
    keys = given_keys(meta.params, [result.config or {} for result in results])  # type: ignore[attr-defined]
    warning = unread_warning(keys, reads_of(reported), known=hyperparameters.KNOWN)
    meta_file.update(experiment_path, unread_params_warning=warning)
    return warning


def check_storage(experiment_path: str, storage_problem: Callable[[], str | None]) -> None:
    if problem := storage_problem():
        remedy = "once it answers again" if filesystem.is_remote(experiment_path) else "free space or make it writable"
        raise TunerError(
            f"cannot write to {experiment_path}: {problem}; what was written is kept: {remedy}, "
            f"then: {tuner_hint('resume', experiment_path)}"
        ) from None


@contextmanager
def interruptible(experiment_path: str) -> Iterator[None]:
    """A first Ctrl-C makes Ray Tune save its state and return; a second one (while Ray saves, the
    report is written or Ray shuts down) ends here, resumable all the same once the experiment exists."""
    try:
        with logs.ctrl_c_outside_finalizers():
            yield
    except KeyboardInterrupt:
        if filesystem.exists(filesystem.join(experiment_path, filesystem.META_FILE)):
            raise Interrupted(experiment_path) from None
        raise


def pickle_by_value(module_names: tuple[str, ...]) -> None:
    """The space module's neighbours travel to workers by value (ExperimentSpec.local_modules)."""
    for name in module_names:
        if name in sys.modules:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])
