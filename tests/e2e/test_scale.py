"""tuner's cost per trial does not grow with the experiment: the cheapest trial (one report), run 200 and
1,000 times, and the time each of the last 200 trials of the long run takes held against the short run's.
A driver that does per-trial work over every trial so far (the live view, the snapshots' uploads,
checkpoint retention, the report) makes the long run's last trials several times slower. The
targets themselves (tuner against Ray Tune at 1,000 to 10,000 trials) are bench/scale.py's."""

import textwrap

import pandas as pd
import pytest

from tuner.results import report

pytestmark = pytest.mark.slow

CHEAPEST = """
from ray import tune

param_space = {"x": tune.uniform(0, 1), "y": tune.uniform(0, 1)}
metric, mode, epochs, search = "score", "max", 1, "random"


def train_loop(config, ctx):
    ctx.report({"score": config["x"] + config["y"]})
"""
MEASURED = 200  # trials


def _seconds_per_trial(history: pd.DataFrame) -> float:
    """Of the last MEASURED trials to report: the time between reports (start-up and the end left out)."""
    reported = history["reported_at"].sort_values().to_numpy()[-MEASURED:]
    return float(reported[-1] - reported[0]) / (len(reported) - 1)


def test_the_cost_of_a_trial_stays_flat_from_200_to_1000_trials(tmp_path, tuner_here):
    (tmp_path / "cheapest.py").write_text(textwrap.dedent(CHEAPEST))
    costs = {}
    for trials in (MEASURED, 1000):
        args = ("run", "cheapest.py", "--num-samples", str(trials), "--no-smoke", "-q", "--name", f"n{trials}")
        result = tuner_here(*args, "--storage-path", "results", cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        trials_frame, history = report.read_tables(str(tmp_path / "results" / f"n{trials}"))
        assert (trials_frame["status"] == "finished").sum() == trials
        costs[trials] = _seconds_per_trial(history)
    ratio = costs[1000] / costs[MEASURED]
    assert ratio < 1.5, f"a trial costs {ratio:.2f}x as much after 800 trials as in a 200-trial run: {costs}"


def test_runs_that_start_in_the_same_second_each_get_their_own_experiment(tmp_path, tuner_here, monkeypatch):
    """Three experiments started together under default names (bench/scale.py --together): the default
    name is claimed with a suffix, and Ray is given the claimed one, so each run's trials land in its own."""
    from tuner.storage import filesystem

    (tmp_path / "cheapest.py").write_text(textwrap.dedent(CHEAPEST))
    monkeypatch.setattr(filesystem, "default_experiment_name", lambda space: f"{space}-20261206-101010")
    for _ in range(2):
        args = ("run", "cheapest.py", "--num-samples", "3", "--no-smoke", "-q", "--storage-path", "results")
        assert tuner_here(*args, cwd=tmp_path).returncode == 0
    for name in ("cheapest-20261206-101010", "cheapest-20261206-101010-2"):
        trials, _ = report.read_tables(str(tmp_path / "results" / name))
        assert len(trials) == 3 and (trials["status"] == "finished").all(), name
