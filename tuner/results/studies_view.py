"""Several experiments' studies as one Optuna storage, for `tuner ui STORAGE_PATH`: optuna-dashboard
serves one storage, and each experiment writes its own journal (storage/study_journal.py), whose study
and trial ids start at 0 in every one.

Built on Optuna's documented extension point (`optuna.storages.BaseStorage`): every read goes to the
experiment's own storage, read as it grows. Study k is the k-th experiment; a trial's id carries its
experiment in its high bits. Read-only where asked (an object store's experiment, read from a copy that
each refresh replaces, would lose a note written into the copy), else notes and attributes the page
writes go into that experiment's journal beside the run's own lines, as Optuna's journal allows.
"""

import copy
from collections.abc import Container, Sequence
from typing import Any

from bottle import HTTPError
from optuna.distributions import BaseDistribution
from optuna.storages import BaseStorage
from optuna.study import StudyDirection
from optuna.study._frozen import FrozenStudy  # as BaseStorage itself annotates it: Optuna exports it nowhere else
from optuna.trial import FrozenTrial, TrialState

TRIAL_BITS = 32  # a journal's own trial ids stay far below 2**32; the page's ids within 2**53


class StudiesView(BaseStorage):
    """`storages[k]` holds experiment k's one study (its study id 0 there)."""

    def __init__(self, storages: Sequence[BaseStorage], writable: bool) -> None:
        self._storages = list(storages)
        self._writable = writable

    # Studies: the k-th experiment's is study k.
    def _study(self, study_id: int) -> tuple[BaseStorage, int]:
        if not 0 <= study_id < len(self._storages):
            raise KeyError(f"no study {study_id}")
        storage = self._storages[study_id]
        return storage, storage.get_all_studies()[0]._study_id

    def get_all_studies(self) -> list[FrozenStudy]:
        found = []
        for index, storage in enumerate(self._storages):
            for study in storage.get_all_studies()[:1]:
                shown = copy.copy(study)
                shown._study_id = index
                found.append(shown)
        return found

    def get_study_id_from_name(self, study_name: str) -> int:
        for study in self.get_all_studies():
            if study.study_name == study_name:
                return study._study_id
        raise KeyError(f"no study named {study_name}")

    def get_study_name_from_id(self, study_id: int) -> str:
        storage, own = self._study(study_id)
        return storage.get_study_name_from_id(own)

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        storage, own = self._study(study_id)
        return storage.get_study_directions(own)

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        storage, own = self._study(study_id)
        return storage.get_study_user_attrs(own)

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        storage, own = self._study(study_id)
        return storage.get_study_system_attrs(own)

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._written(study_id)
        storage, own = self._study(study_id)
        storage.set_study_user_attr(own, key, value)

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._written(study_id)
        storage, own = self._study(study_id)
        storage.set_study_system_attr(own, key, value)

    # Trials: the experiment's own id, its experiment in the high bits.
    def _trial(self, trial_id: int) -> tuple[BaseStorage, int, int]:
        study_id, own = trial_id >> TRIAL_BITS, trial_id & ((1 << TRIAL_BITS) - 1)
        storage, _ = self._study(study_id)
        return storage, own, study_id

    @staticmethod
    def _shown(trial: FrozenTrial, study_id: int) -> FrozenTrial:
        shown = copy.copy(trial)
        shown._trial_id = (study_id << TRIAL_BITS) | trial._trial_id
        return shown

    def get_trial(self, trial_id: int) -> FrozenTrial:
        storage, own, study_id = self._trial(trial_id)
        return self._shown(storage.get_trial(own), study_id)

    def get_all_trials(
        self, study_id: int, deepcopy: bool = True, states: Container[TrialState] | None = None
    ) -> list[FrozenTrial]:
        storage, own = self._study(study_id)
        return [self._shown(trial, study_id) for trial in storage.get_all_trials(own, deepcopy, states)]

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        storage, own, study_id = self._trial(trial_id)
        self._written(study_id)
        storage.set_trial_user_attr(own, key, value)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        storage, own, study_id = self._trial(trial_id)
        self._written(study_id)
        storage.set_trial_system_attr(own, key, value)

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Sequence[float] | None = None) -> bool:
        raise _refused(RESULTS_ARE_THE_RUNS)

    def set_trial_param(
        self, trial_id: int, param_name: str, param_value_internal: float, distribution: BaseDistribution
    ) -> None:
        raise _refused(RESULTS_ARE_THE_RUNS)

    def set_trial_intermediate_value(self, trial_id: int, step: int, intermediate_value: float) -> None:
        raise _refused(RESULTS_ARE_THE_RUNS)

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        raise _refused(RESULTS_ARE_THE_RUNS)

    def create_new_study(self, directions: Sequence[StudyDirection], study_name: str | None = None) -> int:
        raise _refused(EXPERIMENTS_ARE_FOLDERS)

    def delete_study(self, study_id: int) -> None:
        raise _refused(EXPERIMENTS_ARE_FOLDERS)

    def _written(self, study_id: int) -> None:
        if not self._writable:
            raise _refused(
                "this page reads its experiments from an object store, from a copy it downloads again and "
                "again, and writes nothing there: no note, no attribute"
            )


RESULTS_ARE_THE_RUNS = "a trial's parameters and results are its run's to write; the page adds notes only"
EXPERIMENTS_ARE_FOLDERS = (
    "tuner ui shows experiments and neither makes nor deletes one: `tuner run` makes one, and deleting its "
    "folder deletes it"
)


def _refused(why: str) -> HTTPError:
    """What the page shows for a change it may not make: bottle's HTTPError is optuna-dashboard's way
    of answering with a reason, where any other error is a 500 and a traceback in the terminal."""
    return HTTPError(403, why)
