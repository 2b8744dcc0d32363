"""The live study's journal after a write cut short: the next run's writer cuts the torn line off, and
every line before and after it reads back through Optuna's own storage."""

import optuna
import pytest

from tuner.storage.study_journal import journal_storage, without_torn_line


def _add_trial(path, value: float) -> None:
    study = optuna.load_study(study_name="torn", storage=journal_storage(path))
    study.add_trial(optuna.trial.create_trial(params={}, distributions={}, value=value))


def test_a_torn_last_line_is_cut_off_before_the_next_write(tmp_path):
    path = tmp_path / "optuna.journal"
    optuna.create_study(study_name="torn", storage=journal_storage(path))
    _add_trial(path, 1.0)
    whole = path.read_bytes()
    with open(path, "ab") as journal:
        journal.write(b'{"op_code": 4, "study_id": 0, "sta')  # a full disk took the rest
    without_torn_line(path)
    assert path.read_bytes() == whole
    _add_trial(path, 2.0)
    study = optuna.load_study(study_name="torn", storage=journal_storage(path))
    assert [trial.value for trial in study.trials] == [1.0, 2.0]
    without_torn_line(path)  # a whole journal is left as it is
    assert len(optuna.load_study(study_name="torn", storage=journal_storage(path)).trials) == 2


def test_without_the_cut_no_trial_is_written_past_a_torn_line(tmp_path):
    """Why the cut exists: Optuna's writer reads back what it wrote, and cannot past the torn line."""
    path = tmp_path / "optuna.journal"
    optuna.create_study(study_name="torn", storage=journal_storage(path))
    with open(path, "ab") as journal:
        journal.write(b'{"op_code": 4, "study_id": 0, "sta')
    with pytest.raises(Exception):  # noqa: B017 (Optuna's own error for it is an internal AttributeError)
        _add_trial(path, 2.0)
