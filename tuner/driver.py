"""`tuner.run` and `tuner.resume`, top to bottom: the spec, the search plan, the trials on Ray, the
record in storage, the report. Each step is one call into its stage; this module is the only one that
knows their order, and no stage calls a stage above it."""

import dataclasses
import gc
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tuner.command import tuner_command, tuner_hint
from tuner.errors import TunerError
from tuner.execution import preparation, tracking, tune_run
from tuner.execution.cluster import connect
from tuner.execution.console import EarlierTrials
from tuner.execution.phases import Phases
from tuner.results import earlier as earlier_trials
from tuner.results import report
from tuner.results.columns import best_column, is_blank
from tuner.results.objectives import FEASIBLE
from tuner.results.status import UNFINISHED, TrialStatus
from tuner.search import search as search_named
from tuner.search.plan import SearchPlan
from tuner.search.plan import plan as search_plan
from tuner.settings import RunOptions
from tuner.spec import space as space_modules
from tuner.spec.param_space import flat_keys, is_constant
from tuner.spec.space import ExperimentSpec
from tuner.storage import filesystem, saved_state
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    experiment_path: str
    trials: pd.DataFrame
    metric: str
    params: list[str]
    meta: ExperimentMeta  # as the run left it: its total of trials, and what stopped it
    unread: str | None = None  # the warning naming param_space keys no trial read
    nothing_to_resume: str | None = None  # why `resume` ran nothing: every trial had ended


def run(spec: ExperimentSpec, options: RunOptions = RunOptions()) -> Outcome:
    """Run an experiment: every check that can be made before Ray starts, then its trials on Ray Tune."""
    phases = Phases(options.verbose >= 2)
    phases.mark("imports")
    storage_path = filesystem.normalize(options.storage_path)
    name = options.name or filesystem.default_experiment_name(spec.name)
    # Whether a failed start may remove the storage path the claim made (a local one only: a store's
    # answer to a wrong key is _new_experiment_path's to give).
    storage_existed = options.name is not None or filesystem.is_remote(storage_path) or filesystem.exists(storage_path)
    experiment_path = _new_experiment_path(storage_path, name, claim=options.name is None)
    try:
        return _run_in(experiment_path, spec, options, phases)
    except BaseException:
        if options.name is None:  # a refused or failed start leaves nothing behind, as before the claim
            filesystem.release_default_name(experiment_path, storage_path if not storage_existed else None)
        raise


def _run_in(experiment_path: str, spec: ExperimentSpec, options: RunOptions, phases: Phases) -> Outcome:
    """`run` once its experiment directory's name is settled."""
    storage_path = filesystem.normalize(options.storage_path)
    name = filesystem.base_name(experiment_path)  # the default one as claimed: `-2` where it was taken
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
    ray_logs = tune_run.RAY_LOG_LEVELS[options.verbose]
    with preparation.data_dir(options.data_dir), tune_run.interruptible(experiment_path):
        prepared = preparation.while_ray_starts(lambda: preparation.load_and_smoke(spec, options.seed, options.smoke))
        phases.mark("checks and search plan")
        with connect(
            options.cluster, state_api=not spec.resources.in_process, ray_logs=ray_logs, verbose=options.verbose
        ):
            phases.mark("ray start")
            ready = prepared()
            phases.mark("data and smoke step (beyond ray start)")
            gpus = tune_run.gpu_plan(spec.resources, ready.measured, ready.unmeasured)
            # The resolved number, checked again as a spec (dp, fractional GPUs over several workers).
            resolved = dataclasses.replace(spec.resources, gpus_per_worker=gpus.gpus_per_worker)
            spec = dataclasses.replace(spec, resources=resolved)
            log.info("tuner: %s", gpus.line)
            fits = tune_run.trials_that_fit(spec.resources)  # also: one trial must fit at all
            max_concurrent = spec.resources.max_concurrent or fits
            tune_run.pickle_by_value(spec.local_modules)
            meta = dataclasses.replace(_meta(spec, plan, options), gpus=gpus.record())
            meta_file.write(experiment_path, meta)
            setup = tune_run.trial_setup(ready.parts, ready.data, meta, experiment_path, options.verbose)
            tuner = tune_run.new_tuner(spec, plan, options, setup, name, storage_path, max_concurrent, phases)
            phases.mark("trial setup")
            report.forget_reads()
            unread = tune_run.fit(tuner, experiment_path, meta, options.verbose)
            del tuner  # Ray's analysis of every trial, freed before the report reads them anew
            phases.mark("trials")
        phases.mark("ray shutdown")
        trials = _report_of_run(experiment_path)
        phases.mark("report")
    ended = meta_file.read(experiment_path)
    return Outcome(experiment_path, trials, spec.objective.metric, meta.params, ended, unread)


def resume(experiment_path: str, options: RunOptions = RunOptions()) -> Outcome:
    """Continue an interrupted experiment: unfinished and errored trials go on from their latest
    checkpoints; finished trials are kept as they are and not run again. Of `options`, the cluster, the
    output and `data_dir` (if the data moved since the run) apply; the rest is the experiment's own."""
    phases = Phases(options.verbose >= 2)
    phases.mark("imports")
    experiment_path = filesystem.normalize(experiment_path)
    meta = _meta_of(experiment_path, "resume")
    # A run that ended and whose tables still hold the experiment (tuner/results/report.py) tells what is
    # left to run in two files; the checks of Ray's state read every trial of it.
    trials = report.saved_tables(experiment_path, meta)
    if trials is None or set(report.tally(trials, meta)) & {*UNFINISHED, TrialStatus.ERROR}:
        trials = _check_whole(experiment_path, "resume")
    counts = report.tally(trials, meta) if trials is not None else {}
    if trials is not None and not set(counts) & {*UNFINISHED, TrialStatus.ERROR}:  # Ray would run nothing
        said = (
            f"nothing to resume: all {report.total_trials(trials, meta)} trials of {experiment_path} ended "
            f"({report.describe(counts) or 'none recorded'}); see them with `{tuner_hint('report', experiment_path)}`"
            f", or add trials with `{tuner_hint('extend', experiment_path, '--num-samples', 'N')}`"
        )
        return Outcome(experiment_path, trials, meta.objective.metric, meta.params, meta, nothing_to_resume=said)
    spec = _spec_of(meta, experiment_path)
    preparation.check_data(spec, options.data_dir or meta.data_dir)
    ray_logs = tune_run.RAY_LOG_LEVELS[options.verbose]
    with preparation.data_dir(options.data_dir or meta.data_dir), tune_run.interruptible(experiment_path):
        loaded = preparation.while_ray_starts(lambda: preparation.load(spec))
        phases.mark("checks")
        with connect(
            options.cluster, state_api=not meta.resources.in_process, ray_logs=ray_logs, verbose=options.verbose
        ):
            phases.mark("ray start")
            ready = loaded()
            phases.mark("data (beyond ray start)")
            tune_run.pickle_by_value(spec.local_modules)
            setup = tune_run.trial_setup(ready.parts, ready.data, meta, experiment_path, options.verbose)
            tuner = tune_run.restored_tuner(experiment_path, setup)
            # Running again: `tuner list` tells a live run by the end it has not recorded yet.
            meta_file.write(experiment_path, dataclasses.replace(meta, ended_at=None, stopped_by=None))
            phases.mark("trial setup")
            report.forget_reads()
            unread = tune_run.fit(tuner, experiment_path, _latest_run(meta), options.verbose)
            del tuner  # Ray's analysis of every trial, freed before the report reads them anew
            phases.mark("trials")
        phases.mark("ray shutdown")
        trials = _report_of_run(experiment_path)
        phases.mark("report")
    ended = meta_file.read(experiment_path)
    return Outcome(experiment_path, trials, meta.objective.metric, meta.params, ended, unread)


def extend(experiment_path: str, num_samples: int, options: RunOptions = RunOptions()) -> Outcome:
    """Add `num_samples` trials to a finished experiment; its finished trials are not run again.

    The extension is a Ray Tune run of its own in the same directory (its trials beside the others,
    its own `experiment_state-*.json`), its searcher warm-started from every scored trial so far:
    optuna learns from them, random (and grid, which runs as random here: a grid has run whole) skips
    the configs already run over a finite space, else draws new ones with another seed. tuner.json
    records it (`extensions`, `total_trials`), and the report reads the trials of every run
    (tuner/results/report.py); `tuner resume` continues an interrupted extension. Of `options`, the
    cluster, the output and `data_dir` apply; the rest is the experiment's own."""
    experiment_path = filesystem.normalize(experiment_path)
    meta = _meta_of(experiment_path, "extend")
    spec = _spec_of(meta, experiment_path, "extend")
    trials = _check_whole(experiment_path, "extend")
    if trials is None:  # nothing recorded by Ray yet: what the trial directories hold
        trials, _ = report.read_tables(experiment_path)
    if set(report.tally(trials, meta)) & set(UNFINISHED):
        raise TunerError(
            f"{experiment_path} has trials still to run ({report.describe(report.tally(trials, meta))}); "
            f"finish them first with `{tuner_hint('resume', experiment_path)}`, then extend it"
        )
    ran_by = search_named(meta.tuning.search)
    search = ran_by.extends_as or ran_by.name
    # The experiment as it ran: its settings from tuner.json, its fixed keys pinned as they were.
    spec = dataclasses.replace(
        spec.with_overrides(fixed=meta.fixed),
        objective=meta.objective,
        budget=dataclasses.replace(meta.budget, num_samples=num_samples),
        resources=meta.resources,
        tuning=dataclasses.replace(meta.tuning, search=search),
    )
    _, earlier = earlier_trials.read(experiment_path, list(meta.objective.objectives))
    before = _earlier_in_view(trials, meta)
    # Another seed per extension: the same one would draw the configs the first run drew.
    seed = meta.seed + len(meta.extensions) + 1
    plan = search_plan(spec, seed, earlier, extend=True)
    if ran_by.extends_as:
        log.info(
            "tuner: extend: the %s has run whole; the new trials are %s draws of the same space",
            ran_by.name,
            ran_by.extends_as,
        )
    for notice in plan.notices:
        log.info("tuner: %s", notice)
    preparation.check_data(spec, options.data_dir or meta.data_dir)
    storage_path, name = filesystem.split(experiment_path)
    ray_logs = tune_run.RAY_LOG_LEVELS[options.verbose]
    with preparation.data_dir(options.data_dir or meta.data_dir), tune_run.interruptible(experiment_path):
        loaded = preparation.while_ray_starts(lambda: preparation.load(spec))
        with connect(
            options.cluster, state_api=not meta.resources.in_process, ray_logs=ray_logs, verbose=options.verbose
        ):
            ready = loaded()
            max_concurrent = spec.resources.max_concurrent or tune_run.trials_that_fit(spec.resources)
            tune_run.pickle_by_value(spec.local_modules)
            extension = {
                "num_samples": num_samples,
                "trials": plan.total_trials,
                "search": plan.tuning.search,
                "seed": seed,
                "started_at": time.time(),
                "previous_state": saved_state.newest_state(experiment_path),
            }
            meta = dataclasses.replace(
                meta,
                total_trials=report.total_trials(trials, meta) + plan.total_trials,
                extensions=[*meta.extensions, extension],
                ended_at=None,
                stopped_by=None,
            )
            meta_file.write(experiment_path, meta)
            setup = tune_run.trial_setup(ready.parts, ready.data, meta, experiment_path, options.verbose)
            run_options = dataclasses.replace(options, seed=meta.seed)
            tuner = tune_run.new_tuner(
                spec, plan, run_options, setup, name, storage_path, max_concurrent, earlier_trials=before
            )
            report.forget_reads()
            unread = tune_run.fit(tuner, experiment_path, _latest_run(meta), options.verbose)
            del tuner  # Ray's analysis of every trial, freed before the report reads them anew
        trials = _report_of_run(experiment_path)
    ended = meta_file.read(experiment_path)
    return Outcome(experiment_path, trials, meta.objective.metric, meta.params, ended, unread)


def _report_of_run(experiment_path: str) -> pd.DataFrame:
    """The report written at a run's end, once the run's own objects of Ray are collected: they hold
    every trial in reference cycles, and the report reads every trial again."""
    gc.collect()
    return report.write(experiment_path)


def _earlier_in_view(trials: pd.DataFrame, meta: ExperimentMeta) -> EarlierTrials:
    """The experiment's trials so far, for the live view of its extension."""
    metric = meta.objective.metric
    scored = report.scored(trials, metric)
    best, feasible = None, True
    if not scored.empty:
        row = scored.iloc[0]
        config = {key: row[key] for key in meta.params if not is_blank(row[key])}
        best = (float(row[best_column(metric)]), str(row["trial_id"]), config)
        feasible = bool(row.get(FEASIBLE, True))  # the report ranks trials that meet the constraints first
    counts = {str(status): count for status, count in report.tally(trials, meta).items()}
    return EarlierTrials.of(counts, best, feasible)


def _latest_run(meta: ExperimentMeta) -> ExperimentMeta:
    """The meta as the latest Ray run sees it: an extension's run has only its own trials."""
    if not meta.extensions:
        return meta
    return dataclasses.replace(meta, total_trials=meta.extensions[-1]["trials"])


def _new_experiment_path(storage_path: str, name: str, claim: bool = False) -> str:
    """`claim`: the name is tuner's default, taken with a suffix where another run started in the same
    second has it (filesystem.claim_default_name), and its directory made now."""
    # An object store is probed first: a wrong key or endpoint is its answer, not a traceback of `exists`.
    remote = filesystem.is_remote(storage_path) and filesystem.store_problem(storage_path)
    if remote:
        raise TunerError(f"cannot write to --storage-path {storage_path}: {remote}")
    if claim and filesystem.write_problem(storage_path) is None:
        return filesystem.join(storage_path, filesystem.claim_default_name(storage_path, name))
    experiment_path = filesystem.join(storage_path, name)
    if filesystem.exists(experiment_path):
        raise TunerError(
            f"experiment {experiment_path} already exists; pick another --name (results are never overwritten)"
        )
    if problem := filesystem.write_problem(storage_path):
        raise TunerError(f"cannot write to --storage-path {storage_path}: {problem}; pick another --storage-path")
    return experiment_path


def _meta(spec: ExperimentSpec, plan: SearchPlan, options: RunOptions) -> ExperimentMeta:
    """Everything `resume` and the reports need that Ray's own tuner.pkl does not keep: the spec's
    settings as they run (`auto` resolved by the plan)."""
    return ExperimentMeta(
        space=spec.name,
        params=flat_keys(spec.param_space),
        objective=spec.objective,
        budget=plan.budget,
        resources=spec.resources,
        tuning=plan.tuning,
        source=str(Path(spec.source).resolve()) if spec.source else "",
        model=_describe(spec.model),
        dataset=_describe(spec.dataset),
        train_loop=_describe(spec.train_loop),
        data_dir=options.data_dir,
        seed=options.seed,
        started_at=time.time(),
        total_trials=plan.total_trials,
        fixed={key: value for key, value in spec.param_space.items() if is_constant(value)},
        warm_start={"from": plan.warm.source, "trials": len(plan.warm.trials)} if plan.warm is not None else None,
    )


def _describe(part: object) -> str | None:
    """How tuner.json names a space's part: a shipped name as it is, a callable by its name."""
    if part is None or isinstance(part, str):
        return part
    return f"{getattr(part, '__qualname__', type(part).__name__)} (own)"


def _meta_of(experiment_path: str, verb: str) -> ExperimentMeta:
    """The experiment's tuner.json; a damaged one is said with what can still be done, and left as it is."""
    try:
        return report.load_meta(experiment_path)
    except meta_file.Damaged as damaged:
        raise TunerError(
            f"cannot {verb} {experiment_path}: {damaged}, and it holds the space and settings the trials run "
            f"with; restore it from a copy, or see the table its last run saved: "
            f"{tuner_hint('report', experiment_path)}"
        ) from None


def _check_whole(experiment_path: str, verb: str) -> pd.DataFrame | None:
    """Ray's saved state readable and every trial directory it names there: else Ray would fail or start
    trials afresh, and the report rewritten after the run would lose what the missing files held. The
    trials as read for the check; None where nothing is recorded yet."""
    if (found := saved_state.damaged(experiment_path)) is not None:
        name, torn = found
        said = "is cut short (it was being written when the disk filled)"
        if torn != saved_state.CUT_SHORT:
            said = f"is damaged ({torn})"
        raise TunerError(
            f"cannot {verb} {experiment_path}: Ray's saved state {name} {said}; the results so far are kept: "
            f"{tuner_hint('report', experiment_path)}; to search on, start again with "
            f"`{tuner_command()} run --name <a new name>`"
        )
    if saved_state.state_missing(experiment_path):
        raise TunerError(
            f"cannot {verb} {experiment_path}: Ray's saved state ({saved_state.EXPERIMENT_STATE}) is missing, and "
            "without it Ray would start the trials afresh over their results; the results so far are kept: "
            f"{tuner_hint('report', experiment_path)}; put the file back, or start again with "
            f"`{tuner_command()} run --name <a new name>`"
        )
    if saved_state.newest_state(experiment_path) is None:
        return None  # nothing recorded yet: restored_tuner says so
    if problem := report.state_problem(experiment_path):
        raise TunerError(
            f"cannot {verb} {experiment_path}: {problem}, so Ray cannot go on from it (written by another "
            f"version of Ray, or damaged); what its trials recorded is still shown by "
            f"{tuner_hint('report', experiment_path)}"
        )
    trials, _ = report.read_tables(experiment_path)
    if damage := report.damage(trials):
        raise TunerError(
            f"cannot {verb} {experiment_path}: {damage}; put them back where they were, or start again with "
            f"`{tuner_command()} run --name <a new name>`; {tuner_hint('report', experiment_path)} shows "
            "what can still be read"
        )
    return trials


def _spec_of(meta: ExperimentMeta, experiment_path: str, verb: str = "resume") -> ExperimentSpec:
    """The experiment's space module, loaded again: its code is what the trials run."""
    if not Path(meta.source).is_file():
        raise TunerError(
            f"cannot {verb} {experiment_path}: its space module {meta.source or '(unknown)'} is gone; put "
            "it back where it was (trials run its code), or start again with `tuner run`"
        )
    return space_modules.load(meta.source)
