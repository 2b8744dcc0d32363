"""The experiment written as an Optuna study while it runs, so that `tuner ui` (optuna-dashboard) shows
every trial, its curve and the best so far as they happen, and a notebook gets `optuna.visualization`
(tuner/storage/study_journal.py reads it back).

A Tune callback on the driver: a trial that starts is an Optuna trial with its parameters and their
distributions, each epoch an intermediate value of the primary objective, and its end the values of
every objective (each its best epoch's, as trials.csv ranks them), its constraints, and a state:
COMPLETE, PRUNED where the scheduler stopped it (with its reason), FAIL where it errored or diverged.
Each is one line appended to the journal with its fsync: about a millisecond per trial in all, flat to
10,000 trials (bench/study_journal.py).

In a local experiment the journal is written in place, so the page is as fresh as the last epoch. In an
object store it is written in the driver's staging directory, which Ray uploads at each snapshot; a
resumed or extended run first downloads what is stored. Anything that goes wrong here says so once and
stops the study, never the run.
"""

import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any, Protocol

import pyarrow.fs
from ray.tune.experiment import Trial

from tuner.execution.guarded_hooks import GuardedTrialHooks
from tuner.execution.loop_metrics import is_real
from tuner.search.conditional import as_domain
from tuner.search.decision import STOP, Decision
from tuner.search.decision_words import describe
from tuner.search.decisions import Sink
from tuner.settings.objectives import Constraint
from tuner.spec.param_space import cell, flatten, is_constant
from tuner.storage import study_journal as study_file
from tuner.storage.whole_files import is_whole_file
from tuner.trial_status import TrialStatus


def distributions(param_space: dict[str, Any]) -> dict[str, Any]:
    """Each searched key's Optuna distribution (a grid axis as the choice of its values), by its flat
    name. A choice among values Optuna cannot store (lists, say) is the choice of their JSON texts, as
    trials.csv shows them."""
    import optuna
    from ray.tune.search.optuna import OptunaSearch
    from ray.tune.search.sample import Categorical

    found: dict[str, Any] = {}
    for key, value in flatten(param_space).items():
        if is_constant(value):
            continue
        domain = as_domain(value)
        if isinstance(domain, Categorical) and not _storable(domain.categories):
            found[key] = optuna.distributions.CategoricalDistribution([cell(choice) for choice in domain.categories])
            continue
        try:
            found[key] = OptunaSearch.convert_search_space({key: domain})[key]
        except Exception:  # a domain Optuna has no distribution for (tune.sample_from): left out
            continue
    return found


def _storable(choices: Any) -> bool:
    return all(choice is None or isinstance(choice, (bool, int, float, str)) for choice in choices)


class LiveStudy(GuardedTrialHooks):
    """Ray pickles its callbacks with the experiment's state: the storage is opened again by a resumed
    driver, at its first trial, from that trial's storage."""

    what = f"the live study ({study_file.JOURNAL_FILE})"

    def __init__(
        self,
        name: str,
        objectives: list[tuple[str, str]],
        constraints: tuple[Constraint, ...],
        param_space: dict[str, Any],
        epochs: int,
    ) -> None:
        self.name = name
        self.epochs = epochs
        self.objectives = objectives
        self.constraints = constraints
        self.distributions = distributions(param_space)
        self._reset()
        # Each running trial's scheduler STOP, if it had one: that trial is PRUNED, with the reason.
        self._stops: dict[str, Decision] = {}

    def _reset(self) -> None:
        self._storage: Any = None
        self._study_id: int | None = None
        self._trials: dict[str, int] = {}  # tuner's trial id -> the Optuna trial's storage id
        self._broken = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in ("_storage", "_study_id", "_trials", "_broken"):
            state.pop(key)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def _prepare(self, trial: Trial | None) -> None:
        if self._storage is None:
            if trial is None:
                raise RuntimeError("the study is opened at a trial's first event")
            self._open(trial)

    def _open(self, trial: Trial) -> None:
        import optuna

        path = _journal_path(trial)
        study_file.without_torn_line(path)
        # A staged journal's lock file lives outside the folder Ray uploads at each snapshot.
        lock_at = None if _in_place(trial) else Path(tempfile.gettempdir()) / f"tuner-{uuid.uuid4().hex}.journal"
        self._storage = study_file.journal_storage(path, lock_at)
        directions = [
            optuna.study.StudyDirection.MAXIMIZE if mode == "max" else optuna.study.StudyDirection.MINIMIZE
            for _, mode in self.objectives
        ]
        # Resumed or extended (under its first name, if the folder was renamed since): its trials so far.
        if existing := self._storage.get_all_studies():
            self._study_id = existing[0]._study_id
            for frozen in self._storage.get_all_trials(self._study_id, deepcopy=False):
                if (trial_id := frozen.user_attrs.get(study_file.TRIAL_ID_ATTR)) is not None:
                    self._trials[trial_id] = frozen._trial_id
        else:
            said = optuna.logging.get_verbosity()
            optuna.logging.set_verbosity(optuna.logging.WARNING)  # not "A new study created in Journal ..."
            try:
                self._study_id = self._storage.create_new_study(directions, self.name)
            finally:
                optuna.logging.set_verbosity(said)
        if not self._trials:
            name = self._storage.get_study_name_from_id(self._study_id)
            study = optuna.load_study(study_name=name, storage=self._storage)
            with warnings.catch_warnings():  # experimental since Optuna 3.2, and what the page names axes by
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.set_metric_names([metric for metric, _ in self.objectives])

    def _start(self, trial: Trial) -> None:
        import optuna

        known = self._trials.get(trial.trial_id)
        if known is not None and not self._storage.get_trial(known).state.is_finished():
            return  # a restart from a checkpoint (a retry, a resume, PBT): the same Optuna trial goes on
        params, used = {}, {}
        for key, value in flatten(trial.config).items():
            if (distribution := self.distributions.get(key)) is None:
                continue
            if isinstance(distribution, optuna.distributions.CategoricalDistribution):
                value = cell(value)
            try:
                if distribution._contains(distribution.to_internal_repr(value)):
                    params[key], used[key] = value, distribution
            except (ValueError, TypeError):  # outside what the space declared (PBT's perturbations)
                continue
        template = study_file.running_trial(trial.trial_id, params, used)
        self._trials[trial.trial_id] = self._storage.create_new_trial(self._study_id, template_trial=template)

    def _result(self, trial: Trial, result: dict) -> None:
        optuna_id = self._trials.get(trial.trial_id)
        value = result.get(self.objectives[0][0])
        if optuna_id is None or not is_real(value):
            return
        step = result.get("epoch", result.get("training_iteration"))
        if isinstance(step, int):
            self._storage.set_trial_intermediate_value(optuna_id, step, float(value))

    def _end(self, trial: Trial, status: TrialStatus | None) -> None:
        import optuna

        optuna_id = self._trials.get(trial.trial_id)
        stop = self._stops.pop(trial.trial_id, None)
        if optuna_id is None or self._storage.get_trial(optuna_id).state.is_finished():
            return
        last = trial.last_result or {}
        values = [trial.metric_analysis.get(metric, {}).get(mode) for metric, mode in self.objectives]
        if status is None:
            status = TrialStatus.DIVERGED if last.get("diverged") else TrialStatus.FINISHED
        state = optuna.trial.TrialState.COMPLETE
        attrs: dict[str, Any] = {}
        if status is not TrialStatus.FINISHED or not all(is_real(value) for value in values):
            state = optuna.trial.TrialState.FAIL
        elif stop is not None:
            state, status = optuna.trial.TrialState.PRUNED, TrialStatus.STOPPED_EARLY
            attrs[study_file.STOPPED_ATTR] = describe(stop)
        elif last.get("epoch", self.epochs) < self.epochs:  # ended with the run (--stop, the time budget)
            status = TrialStatus.STOPPED_EARLY
        attrs[study_file.STATUS_ATTR] = status.value
        for key, attr in attrs.items():
            self._storage.set_trial_user_attr(optuna_id, key, attr)
        if self.constraints:
            violations = [constraint.violation(last.get(constraint.metric)) for constraint in self.constraints]
            self._storage.set_trial_system_attr(optuna_id, "constraints", violations)
        complete = state is optuna.trial.TrialState.COMPLETE
        self._storage.set_trial_state_values(optuna_id, state, [float(value) for value in values] if complete else None)

    def also(self, sink: Sink) -> "Sink":
        """A recording scheduler's sink that also tells this study each STOP (tune_run.new_tuner)."""
        return AlsoToStudy(sink, self)

    def decided(self, trial: Trial, decided: Decision) -> None:
        if decided.decision == STOP:
            self._stops[trial.trial_id] = decided


class Told(Protocol):
    """What a recording scheduler's sink also tells of each decision: the live study, Ray's metrics."""

    def decided(self, trial: Trial, decided: Decision) -> None: ...


class AlsoToStudy:
    """A sink that also tells `live` (the study, or Ray's metrics: tuner/execution/ray_metrics.py). A
    class, not a closure: Ray pickles it with the scheduler, and `live` with the callbacks, in one pickle
    (tuner.pkl), so a resumed run's scheduler tells the resumed run's callbacks."""

    def __init__(self, sink: Sink, live: Told) -> None:
        self.sink, self.live = sink, live

    def __call__(self, trial: Trial, decided: Decision) -> None:
        self.sink(trial, decided)
        self.live.decided(trial, decided)


def _in_place(trial: Trial) -> bool:
    """Whether the experiment is on this machine's disk (tuner gives Ray a local one as whole-file
    storage), where the journal is written in place."""
    fs = trial.storage.storage_filesystem if trial.storage is not None else None
    return isinstance(fs, pyarrow.fs.LocalFileSystem) or (fs is not None and is_whole_file(fs))


def _journal_path(trial: Trial) -> Path:
    """In place in a local experiment; in the driver's staging directory (uploaded at each snapshot) for
    an object store, starting from the stored copy of an earlier run of the experiment."""
    storage = trial.storage
    if storage is None:
        raise RuntimeError(f"trial {trial.trial_id} has no storage yet")
    if _in_place(trial):
        return Path(storage.experiment_fs_path) / study_file.JOURNAL_FILE
    staged = Path(storage.experiment_driver_staging_path) / study_file.JOURNAL_FILE
    if not staged.exists():
        study_file.download(
            storage.storage_filesystem, f"{storage.experiment_fs_path}/{study_file.JOURNAL_FILE}", staged
        )
    return staged
