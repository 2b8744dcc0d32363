"""`tuner ui`: the studies of several experiments (a storage path), each in its own journal with ids
from 0, read through one Optuna storage as optuna-dashboard reads it; and where the page listens."""

import subprocess
import threading

import optuna
import pytest
from bottle import HTTPError

from tests.conftest import free_port, tuner_process
from tuner.errors import TunerError
from tuner.results import live_page
from tuner.results.studies_view import StudiesView
from tuner.settings.experiment import Objective
from tuner.storage import filesystem
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta
from tuner.storage.study_journal import JOURNAL_FILE, journal_storage


def _experiment(folder, name: str, values: list[float]):
    """An experiment directory with its study, as a run leaves it (tuner.json is only looked for)."""
    folder.mkdir(parents=True)
    (folder / filesystem.META_FILE).write_text("{}")
    storage = journal_storage(folder / JOURNAL_FILE)
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
    for value in values:
        x = optuna.distributions.FloatDistribution(0, 10)
        study.add_trial(optuna.trial.create_trial(params={"x": value}, distributions={"x": x}, value=value))
    return storage


def test_each_experiment_is_a_study_and_every_trial_keeps_its_own(tmp_path):
    first = _experiment(tmp_path / "results" / "first", "first", [1.0, 2.0])
    second = _experiment(tmp_path / "results" / "second", "second", [5.0, 3.0, 4.0])
    view = StudiesView([first, second], writable=True)
    assert [(study._study_id, study.study_name) for study in view.get_all_studies()] == [(0, "first"), (1, "second")]
    loaded = optuna.load_study(study_name="second", storage=view)
    assert [trial.value for trial in loaded.trials] == [5.0, 3.0, 4.0] and loaded.best_value == 5.0
    ids = [trial._trial_id for study_id in (0, 1) for trial in view.get_all_trials(study_id)]
    assert len(set(ids)) == 5
    for study_id in (0, 1):
        for trial in view.get_all_trials(study_id):
            assert view.get_trial(trial._trial_id).value == trial.value  # each id leads back to its own trial
    # A note on the page (optuna-dashboard keeps notes in the study's system attributes) lands in that
    # experiment's own journal, and nowhere else.
    view.set_study_system_attr(1, "dashboard:note", "looked at")
    assert second.get_study_system_attrs(0)["dashboard:note"] == "looked at"
    assert "dashboard:note" not in first.get_study_system_attrs(0)
    assert optuna.importance.get_param_importances(loaded)  # Optuna's own readers work through it


def test_a_view_of_a_bucket_refuses_writes_and_no_view_deletes_an_experiment(tmp_path):
    view = StudiesView([_experiment(tmp_path / "only", "only", [1.0])], writable=False)
    with pytest.raises(HTTPError, match="object store"):
        view.set_study_user_attr(0, "note", "x")
    with pytest.raises(HTTPError, match="object store"):
        view.set_trial_user_attr(view.get_all_trials(0)[0]._trial_id, "note", "x")
    with pytest.raises(HTTPError, match="neither makes nor deletes"):
        view.delete_study(0)


def test_a_storage_path_shows_the_experiments_with_a_study_and_an_experiment_itself(tmp_path):
    _experiment(tmp_path / "results" / "first", "first", [1.0])
    _experiment(tmp_path / "results" / "second", "second", [1.0])
    (tmp_path / "results" / "older").mkdir()
    (tmp_path / "results" / "older" / filesystem.META_FILE).write_text("{}")  # from before the study
    results = str(tmp_path / "results")
    assert sorted(live_page.experiments_at(results)) == [f"{results}/first", f"{results}/second"]
    assert live_page.experiments_at(f"{results}/first") == [f"{results}/first"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(TunerError, match="no experiment under .* has a study"):
        live_page.experiments_at(str(tmp_path / "empty"))


def test_the_page_listens_on_loopback_unless_told_and_then_says_so(tmp_path):
    _experiment(tmp_path / "results" / "seen", "seen", [1.0])
    page = live_page.server(str(tmp_path / "results" / "seen"), port=free_port())
    try:
        assert page.server_address[0] == "127.0.0.1"
    finally:
        page.server_close()
    port = free_port()
    command, env = tuner_process("ui", str(tmp_path / "results"), "--host", "0.0.0.0", "--port", str(port))
    shown = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert shown.stdout is not None and shown.stdout.readline().startswith(f"tuner ui: http://0.0.0.0:{port}/")
    finally:
        shown.terminate()
        _, err = shown.communicate(timeout=30)
    assert err.startswith("tuner: warning: serving on 0.0.0.0: anyone who reaches this machine there can read")


def test_the_page_of_a_run_whose_first_trial_has_not_started_waits_for_its_study(tmp_path):
    """The `live page:` line is printed before the first trial, which makes the study: pasted at once,
    `tuner ui` waits for it; an experiment that ended without one is refused at once, as before."""
    running = tmp_path / "results" / "starting"
    running.mkdir(parents=True)
    meta_file.write(str(running), ExperimentMeta(space="s", params=["x"], objective=Objective("score", "max")))
    said, waited = (
        [],
        threading.Thread(
            target=live_page.wait_for_study, args=(str(running), lambda: said.append("waiting")), daemon=True
        ),
    )
    waited.start()
    waited.join(timeout=3 * live_page.JOURNAL_POLL_S)
    assert waited.is_alive() and said == ["waiting"]  # no study yet: it waits, and said so once
    _ = journal_storage(running / JOURNAL_FILE)  # the first trial starts: the run makes its study
    waited.join(timeout=10 * live_page.JOURNAL_POLL_S)
    assert not waited.is_alive() and said == ["waiting"]

    ended = tmp_path / "results" / "ended"
    ended.mkdir()
    meta = ExperimentMeta(space="s", params=["x"], objective=Objective("score", "max"), ended_at=1.0)
    meta_file.write(str(ended), meta)
    live_page.wait_for_study(str(ended), lambda: said.append("waiting"))  # returns at once, says nothing
    assert said == ["waiting"]
    with pytest.raises(TunerError, match="has no optuna.journal"):
        live_page.server(str(ended), port=free_port())
