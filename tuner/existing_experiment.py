"""An experiment that `tuner resume` or `tuner extend` goes on with, checked before Ray starts: its
record, its space module, and Ray's saved state with every trial directory it names. Whatever is
missing or damaged is said in one line with what can still be done, and nothing is changed."""

import dataclasses
import time
from pathlib import Path

import pandas as pd

from tuner.command import tuner_command, tuner_hint
from tuner.errors import TunerError
from tuner.execution.console import EarlierTrials
from tuner.results import report
from tuner.results.columns import best_column, is_blank
from tuner.results.objectives import FEASIBLE
from tuner.search.extension import ExtensionPlan
from tuner.spec import space as space_modules
from tuner.spec.space import ExperimentSpec
from tuner.storage import meta as meta_file
from tuner.storage import saved_state
from tuner.storage.meta import ExperimentMeta, Extension
from tuner.trial_status import UNFINISHED, TrialStatus


def meta_of(experiment_path: str, verb: str) -> ExperimentMeta:
    """The experiment's tuner.json; a damaged one is said with what can still be done, and left as it is."""
    try:
        return report.load_meta(experiment_path)
    except meta_file.Damaged as damaged:
        raise TunerError(
            f"cannot {verb} {experiment_path}: {damaged}, and it holds the space and settings the trials run "
            f"with; restore it from a copy, or see the table its last run saved: "
            f"{tuner_hint('report', experiment_path)}"
        ) from None


def spec_of(meta: ExperimentMeta, experiment_path: str, verb: str) -> ExperimentSpec:
    """The experiment's space module, loaded again: its code is what the trials run."""
    if not Path(meta.source).is_file():
        raise TunerError(
            f"cannot {verb} {experiment_path}: its space module {meta.source or '(unknown)'} is gone; put "
            "it back where it was (trials run its code), or start again with `tuner run`"
        )
    return space_modules.load(meta.source)


def as_it_ran(spec: ExperimentSpec, meta: ExperimentMeta) -> ExperimentSpec:
    """The space module with the settings from tuner.json, its fixed keys pinned as they were."""
    return dataclasses.replace(
        spec.with_overrides(fixed=meta.fixed),
        objective=meta.objective,
        budget=meta.budget,
        resources=meta.resources,
        tuning=meta.tuning,
    )


def checked_whole(experiment_path: str, verb: str) -> pd.DataFrame | None:
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


def in_view(trials: pd.DataFrame, meta: ExperimentMeta) -> EarlierTrials:
    """The experiment's trials so far, for the live view of its extension."""
    metric = meta.objective.metric
    scored = report.scored(trials, metric)
    best, feasible = None, True
    if not scored.empty:
        row = scored.iloc[0]
        config = {key: row[key] for key in meta.params if not is_blank(row[key])}
        best = (float(row[best_column(metric)]), str(row["trial_id"]), config)
        feasible = bool(row.get(FEASIBLE, True))  # the report ranks trials that meet the constraints first
    return EarlierTrials.of(report.tally(trials, meta), best, feasible)


def left_to_resume(experiment_path: str, meta: ExperimentMeta) -> tuple[pd.DataFrame | None, str | None]:
    """The trials as checked, and why there is nothing to resume when every trial has ended (Ray would
    run nothing), else None."""
    # A run that ended and whose tables still hold the experiment (tuner/results/report.py) tells what is
    # left to run in two files; the checks of Ray's state read every trial of it.
    trials = report.saved_tables(experiment_path, meta)
    if trials is None or set(report.tally(trials, meta)) & {*UNFINISHED, TrialStatus.ERROR}:
        trials = checked_whole(experiment_path, "resume")
    counts = report.tally(trials, meta) if trials is not None else {}
    if trials is None or set(counts) & {*UNFINISHED, TrialStatus.ERROR}:
        return trials, None
    return trials, (
        f"nothing to resume: all {report.total_trials(trials, meta)} trials of {experiment_path} ended "
        f"({report.describe(counts) or 'none recorded'}); see them with `{tuner_hint('report', experiment_path)}`"
        f", or add trials with `{tuner_hint('extend', experiment_path, '--num-samples', 'N')}`"
    )


def extendable(experiment_path: str, meta: ExperimentMeta) -> pd.DataFrame:
    """The trials, checked whole and all ended: an extension adds to a finished experiment."""
    trials = checked_whole(experiment_path, "extend")
    if trials is None:  # nothing recorded by Ray yet: what the trial directories hold
        trials, _ = report.read_tables(experiment_path)
    if set(report.tally(trials, meta)) & set(UNFINISHED):
        raise TunerError(
            f"{experiment_path} has trials still to run ({report.describe(report.tally(trials, meta))}); "
            f"finish them first with `{tuner_hint('resume', experiment_path)}`, then extend it"
        )
    return trials


def with_extension(
    experiment_path: str, meta: ExperimentMeta, extension: ExtensionPlan, trials_so_far: int
) -> ExperimentMeta:
    """The record as the extension starts: its trials added to the total, the extension listed, no end."""
    added = Extension(
        num_samples=extension.spec.budget.num_samples,
        trials=extension.plan.total_trials,
        search=extension.plan.tuning.search,
        seed=extension.seed,
        started_at=time.time(),
        previous_state=saved_state.newest_state(experiment_path),
    )
    return dataclasses.replace(
        meta,
        total_trials=trials_so_far + added.trials,
        extensions=[*meta.extensions, added],
        ended_at=None,
        stopped_by=None,
    )
