"""`tuner.run`, `tuner.resume` and `tuner.extend`, top to bottom: the spec, the search plan, the trials on
Ray, the record in storage, the report. Each of the three prepares what differs (a `_Launch`) and hands
it to `_execute`, the one path its trials run by; this module is the only one that knows the stages'
order, and no stage calls a stage above it."""

import dataclasses
import gc
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ray import tune

from tuner import existing_experiment, new_experiment
from tuner.execution import preparation, tracking, tune_run
from tuner.execution.cluster import connect
from tuner.execution.console import EarlierTrials
from tuner.execution.phases import Phases
from tuner.results import earlier as earlier_trials
from tuner.results import report
from tuner.results.outcome import Outcome
from tuner.search.extension import ExtensionPlan, plan_extension
from tuner.search.plan import SearchPlan
from tuner.search.plan import plan as search_plan
from tuner.settings import RunOptions
from tuner.spec.space import ExperimentSpec
from tuner.storage import filesystem
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Launch:
    """What a run, a resume and an extension each bring to `_execute`."""

    experiment_path: str
    in_process: bool  # the trials run in the driver's process, and Ray's state API is not needed
    options: RunOptions
    data_dir: str | None
    load: Callable[[], preparation.Prepared]  # while Ray starts: the space's parts and data
    # Once Ray is up and the parts loaded: the Tuner, and the record its run is judged by (an extension's
    # run has only its own trials).
    start: Callable[[preparation.Prepared], tuple[tune.Tuner, ExperimentMeta]]
    phases: Phases
    loaded: str = "data (beyond ray start)"  # the phase `load` is shown as


def _execute(launch: _Launch) -> Outcome:
    path, options, phases = launch.experiment_path, launch.options, launch.phases
    with preparation.data_dir(launch.data_dir), tune_run.interruptible(path):
        loading = preparation.while_ray_starts(launch.load)
        phases.mark("checks")
        level = tune_run.RAY_LOG_LEVELS[options.verbose]
        with connect(options.cluster, path, state_api=not launch.in_process, ray_logs=level, verbose=options.verbose):
            phases.mark("ray start")
            ready = loading()
            phases.mark(launch.loaded)
            tuner, judged_by = launch.start(ready)
            phases.mark("trial setup")
            report.forget_reads()
            unread = tune_run.fit(tuner, path, judged_by, options.verbose)
            del tuner  # Ray's analysis of every trial, freed before the report reads them anew
            phases.mark("trials")
        phases.mark("ray shutdown")
        gc.collect()  # the run's objects of Ray hold every trial in reference cycles
        trials = report.write(path)
        phases.mark("report")
    ended = meta_file.read(path)
    return Outcome(path, trials, ended.objective.metric, ended.params, ended, unread)


def run(spec: ExperimentSpec, options: RunOptions = RunOptions()) -> Outcome:
    """Run an experiment: every check that can be made before Ray starts, then its trials on Ray Tune."""
    phases = Phases(options.verbose >= 2)
    phases.mark("imports")
    storage_path = filesystem.normalize(options.storage_path)
    with new_experiment.claimed(storage_path, options.name, spec.name) as experiment_path:
        return _execute(_new_run(experiment_path, storage_path, spec, options, phases))


def _new_run(path: str, storage_path: str, spec: ExperimentSpec, options: RunOptions, phases: Phases) -> _Launch:
    if options.mlflow:
        tracking.check_installed()
        options = dataclasses.replace(options, mlflow=tracking.store(options.mlflow, storage_path))
    earlier = None
    if options.warm_start:
        _, earlier = earlier_trials.read(filesystem.normalize(options.warm_start), list(spec.objective.objectives))
    plan = search_plan(spec, options.seed, earlier)
    preparation.check_data(spec, options.data_dir)
    for notice in plan.notices:
        log.info("tuner: %s", notice)
    load = partial(preparation.load_and_smoke, spec, options.seed, options.smoke)
    start = partial(_start_new, path, spec, plan, options, phases)
    loaded = "data and smoke step (beyond ray start)"
    return _Launch(path, spec.resources.in_process, options, options.data_dir, load, start, phases, loaded)


def _start_new(
    path: str, spec: ExperimentSpec, plan: SearchPlan, options: RunOptions, phases: Phases, ready: preparation.Prepared
) -> tuple[tune.Tuner, ExperimentMeta]:
    gpus = tune_run.gpu_plan(spec.resources, ready.measured, ready.unmeasured)
    # The resolved number, checked again as a spec (dp, fractional GPUs over several workers).
    spec = dataclasses.replace(
        spec, resources=dataclasses.replace(spec.resources, gpus_per_worker=gpus.gpus_per_worker)
    )
    log.info("tuner: %s", gpus.line)
    fits = tune_run.trials_that_fit(spec.resources)  # also: one trial must fit at all
    tune_run.pickle_by_value(spec.local_modules)
    meta = dataclasses.replace(new_experiment.meta(spec, plan, options), gpus=gpus.record())
    meta_file.write(path, meta)
    setup = tune_run.trial_setup(ready.parts, ready.data, meta, path, options.verbose)
    storage_path, name = filesystem.normalize(options.storage_path), filesystem.base_name(path)
    max_concurrent = spec.resources.max_concurrent or fits
    return tune_run.new_tuner(spec, plan, options, setup, name, storage_path, max_concurrent, phases), meta


def resume(experiment_path: str, options: RunOptions = RunOptions()) -> Outcome:
    """Continue an interrupted experiment: unfinished and errored trials go on from their latest
    checkpoints; finished trials are kept as they are and not run again. Of `options`, the cluster, the
    output and `data_dir` (if the data moved since the run) apply; the rest is the experiment's own."""
    phases = Phases(options.verbose >= 2)
    phases.mark("imports")
    experiment_path = filesystem.normalize(experiment_path)
    meta = existing_experiment.meta_of(experiment_path, "resume")
    trials, nothing_left = existing_experiment.left_to_resume(experiment_path, meta)
    if trials is not None and nothing_left:
        return Outcome(
            experiment_path, trials, meta.objective.metric, meta.params, meta, nothing_to_resume=nothing_left
        )
    spec = existing_experiment.spec_of(meta, experiment_path, "resume")
    data_dir = options.data_dir or meta.data_dir
    preparation.check_data(spec, data_dir)
    start = partial(_start_restored, experiment_path, spec, meta, options)
    load = partial(preparation.load, spec)
    return _execute(_Launch(experiment_path, meta.resources.in_process, options, data_dir, load, start, phases))


def _start_restored(
    path: str, spec: ExperimentSpec, meta: ExperimentMeta, options: RunOptions, ready: preparation.Prepared
) -> tuple[tune.Tuner, ExperimentMeta]:
    tune_run.pickle_by_value(spec.local_modules)
    setup = tune_run.trial_setup(ready.parts, ready.data, meta, path, options.verbose)
    tuner = tune_run.restored_tuner(path, setup)
    # Running again: `tuner list` tells a live run by the end it has not recorded yet.
    meta_file.write(path, dataclasses.replace(meta, ended_at=None, stopped_by=None))
    return tuner, meta.latest_run()


def extend(experiment_path: str, num_samples: int, options: RunOptions = RunOptions()) -> Outcome:
    """Add `num_samples` trials to a finished experiment; its finished trials are not run again.

    The extension is a Ray Tune run of its own in the same directory (its trials beside the others,
    its own `experiment_state-*.json`), searched as tuner/search/extension.py says. tuner.json records
    it (`extensions`, `total_trials`), and the report reads the trials of every run
    (tuner/results/report.py); `tuner resume` continues an interrupted extension. Of `options`, the
    cluster, the output and `data_dir` apply; the rest is the experiment's own."""
    phases = Phases(options.verbose >= 2)
    phases.mark("imports")
    experiment_path = filesystem.normalize(experiment_path)
    meta = existing_experiment.meta_of(experiment_path, "extend")
    spec = existing_experiment.spec_of(meta, experiment_path, "extend")
    trials = existing_experiment.extendable(experiment_path, meta)
    ran = existing_experiment.as_it_ran(spec, meta)
    _, earlier = earlier_trials.read(experiment_path, list(meta.objective.objectives))
    extension = plan_extension(ran, meta.seed, len(meta.extensions), num_samples, earlier)
    for notice in extension.notices:
        log.info("tuner: %s", notice)
    data_dir = options.data_dir or meta.data_dir
    preparation.check_data(extension.spec, data_dir)
    view = existing_experiment.in_view(trials, meta)
    start = partial(
        _start_extension, experiment_path, extension, meta, report.total_trials(trials, meta), view, options
    )
    load = partial(preparation.load, extension.spec)
    return _execute(_Launch(experiment_path, meta.resources.in_process, options, data_dir, load, start, phases))


def _start_extension(
    path: str,
    extension: ExtensionPlan,
    meta: ExperimentMeta,
    trials_so_far: int,
    view: EarlierTrials,
    options: RunOptions,
    ready: preparation.Prepared,
) -> tuple[tune.Tuner, ExperimentMeta]:
    spec, plan = extension.spec, extension.plan
    max_concurrent = spec.resources.max_concurrent or tune_run.trials_that_fit(spec.resources)
    tune_run.pickle_by_value(spec.local_modules)
    meta = existing_experiment.with_extension(path, meta, extension, trials_so_far)
    meta_file.write(path, meta)
    setup = tune_run.trial_setup(ready.parts, ready.data, meta, path, options.verbose)
    storage_path, name = filesystem.split(path)
    run_options = dataclasses.replace(options, seed=meta.seed)
    tuner = tune_run.new_tuner(spec, plan, run_options, setup, name, storage_path, max_concurrent, earlier_trials=view)
    return tuner, meta.latest_run()
