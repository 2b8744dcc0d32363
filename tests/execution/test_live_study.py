"""The study a run writes as it goes (tuner/execution/live_study.py) says what the experiment's own
tables say: every trial with its parameters, each epoch's value, its best value per objective, its
constraints, PRUNED for exactly the trials the scheduler stopped (with the scheduler's reason), FAIL for
one that errored; and `tuner ui` serves it."""

import math
import textwrap
import threading
import urllib.request

import optuna
import pytest

from tests.conftest import free_port
from tuner.results import live_page, report
from tuner.storage.study_journal import STATUS_ATTR, STOPPED_ATTR, TRIAL_ID_ATTR, load_study

pytestmark = pytest.mark.slow

# Grid order and two trials at once make an ASHA stop certain: 0.9 and 0.5 reach the first rung before
# 0.1, which is then below the rung's median and stopped. -1 raises in its first epoch.
SPACE = """
from ray import tune

param_space = {"x": tune.grid_search([0.9, 0.5, 0.1, -1.0]), "opt": tune.choice([["sgd", 1], ["adam", 2]])}
metric, mode, epochs = "score", "max", 4
constraints = ["cost<=0.6"]
scheduler = "asha"


def train_loop(config, ctx):
    if config["x"] < 0:
        raise ValueError("a bad config")
    for epoch in range(1, ctx.epochs + 1):
        ctx.report({"score": config["x"] * epoch - 0.1 * epoch**2, "cost": config["x"]})
"""


def test_the_study_says_what_the_tables_say_and_the_page_serves_it(tmp_path, tuner_here):
    (tmp_path / "graded.py").write_text(textwrap.dedent(SPACE))
    args = ("run", "graded.py", "--no-smoke", "-q", "--max-failures", "0", "--max-concurrent", "2", "--name", "graded")
    asha = ("--asha-grace-period", "1", "--asha-reduction-factor", "2")
    result = tuner_here(*args, *asha, "--storage-path", "results", cwd=tmp_path)
    experiment = str(tmp_path / "results" / "graded")
    trials, history = report.read_tables(experiment)
    assert result.returncode != 0 or (trials["status"] == "error").any(), result.stderr[-2000:]

    study = load_study(experiment)
    assert study.study_name == "graded" and study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert study.metric_names == ["score"]
    by_id = {trial.user_attrs[TRIAL_ID_ATTR]: trial for trial in study.trials}
    assert sorted(by_id) == sorted(trials["trial_id"])
    states = {"finished": "COMPLETE", "stopped early": "PRUNED", "error": "FAIL"}
    for row in trials.itertuples():
        trial = by_id[row.trial_id]
        assert trial.state.name == states[row.status], (row.status, trial)
        assert trial.user_attrs[STATUS_ATTR] == row.status
        assert trial.params["x"] == row.x and trial.distributions["x"].choices == (0.9, 0.5, 0.1, -1.0)
        if row.status == "error":
            assert trial.params.get("opt") in (None, '["sgd", 1]', '["adam", 2]')
            continue
        assert trial.params["opt"] == row.opt  # lists as their JSON text: Optuna stores only plain values
        epochs = history[history["trial_id"] == row.trial_id].set_index("epoch")["score"]
        assert trial.intermediate_values == pytest.approx(epochs.to_dict())
        feasible = row.cost <= 0.6
        assert (trial.system_attrs["constraints"][0] <= 0) == feasible
        if row.status == "finished":
            assert trial.value == pytest.approx(row.best_score)
        else:
            assert trial.user_attrs[STOPPED_ATTR] == row.stopped_because and "asha" in row.stopped_because
    assert (trials["status"] == "stopped early").sum() >= 1 and not math.isnan(trials["best_score"].max())
    # Optuna ranks by the constraints too: its best is the best feasible complete trial, as tuner's is.
    feasible = [t for t in study.trials if t.state.name == "COMPLETE" and t.system_attrs["constraints"][0] <= 0]
    if feasible:
        assert study.best_trial.number == max(feasible, key=lambda t: t.value).number
    else:
        with pytest.raises(ValueError, match="feasible"):
            _ = study.best_trial

    port = free_port()
    page = live_page.server(experiment, port=port)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=30) as answer:
            assert b'"study_name": "graded"' in answer.read()
    finally:
        page.shutdown()
        page.server_close()
