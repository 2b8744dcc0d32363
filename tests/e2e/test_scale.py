"""tuner's cost per trial does not grow with the experiment: the cheapest trial (one report), run 1,000
times, and the time each of the last 200 trials takes held against each of the first 200 (what a
200-trial run costs). A driver that does per-trial work over every trial so far (the live view, the
snapshots' uploads, checkpoint retention, the report) makes the last trials several times slower. The
targets themselves (tuner against Ray Tune at 1,000 to 10,000 trials) are bench/scale.py's."""

import textwrap

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
CHUNK = 50  # trials: a window's cost is its least disturbed chunk's (the machine's own daemons)


def _seconds_per_trial(reported: list[float]) -> float:
    """The time between reports in a window of MEASURED reports, as its quickest CHUNK of them took it:
    a passing load only ever adds time, while a per-trial cost that grows with the trials so far slows
    every chunk of the later window. No other test runs beside this one (`alone`): the other xdist
    worker's Ray runs load both cores for minutes, longer than any window."""
    chunks = [reported[start : start + CHUNK] for start in range(0, len(reported) - CHUNK + 1, CHUNK)]
    return min((chunk[-1] - chunk[0]) / (len(chunk) - 1) for chunk in chunks)


@pytest.mark.alone
def test_the_cost_of_a_trial_stays_flat_from_200_to_1000_trials(tmp_path, tuner_here):
    (tmp_path / "cheapest.py").write_text(textwrap.dedent(CHEAPEST))
    args = ("run", "cheapest.py", "--num-samples", "1000", "--no-smoke", "-q", "--name", "n1000")
    result = tuner_here(*args, "--storage-path", "results", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    trials_frame, history = report.read_tables(str(tmp_path / "results" / "n1000"))
    assert (trials_frame["status"] == "finished").sum() == 1000
    reported = history["reported_at"].sort_values().tolist()
    costs = {"first 200": _seconds_per_trial(reported[:MEASURED]), "last 200": _seconds_per_trial(reported[-MEASURED:])}
    ratio = costs["last 200"] / costs["first 200"]
    assert ratio < 1.5, f"a trial costs {ratio:.2f}x as much after 800 trials as in the first 200: {costs}"


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
