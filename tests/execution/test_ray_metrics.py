"""tuner's Ray metrics as Ray's exporter serves them (the endpoint Prometheus scrapes on each node),
without a Prometheus: a run's last word agrees with its tables, and an ended trial's own series leave the
exporter by themselves, which is what keeps the series bounded at any number of trials
(tuner/execution/ray_metrics.py). tests/e2e/test_prometheus.py scrapes a run with a real Prometheus."""

import re
import textwrap
import time
import urllib.request

import pytest
import ray

from tests.conftest import shutdown_ray, start_test_ray
from tuner.cli import main
from tuner.results import report

pytestmark = pytest.mark.slow

SPACE = """
from ray import tune

param_space = {"x": tune.grid_search([0.9, 0.5, 0.1])}
metric, mode, epochs = "score", "max", 3


def train_loop(config, ctx):
    if config["x"] < 0.2:
        raise ValueError("a bad config")
    for epoch in range(1, ctx.epochs + 1):
        ctx.report({"score": config["x"] * epoch})
"""
SAMPLE = re.compile(r"^(?P<name>ray_tuner_\w+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.MULTILINE)


@pytest.fixture
def ray_exporting_each_second(capsys):
    if ray.is_initialized():
        shutdown_ray()
    start_test_ray(num_cpus=2, include_dashboard=False, _system_config={"metrics_report_interval_ms": 1000})
    capsys.readouterr()
    yield
    shutdown_ray()


def _exported() -> list[tuple[str, dict[str, str], float]]:
    samples = []
    for node in ray.nodes():
        url = f"http://{node['NodeManagerAddress']}:{node['MetricsExportPort']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        for found in SAMPLE.finditer(text):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', found["labels"]))
            samples.append((found["name"], labels, float(found["value"])))
    return samples


def _of(samples, name: str, key: str) -> dict[str, float]:
    return {labels[key]: value for found, labels, value in samples if found == name}


def test_the_exporter_serves_the_runs_last_word_and_lets_ended_trials_series_go(
    tmp_path, ray_exporting_each_second, capsys, monkeypatch
):
    (tmp_path / "three.py").write_text(textwrap.dedent(SPACE))
    monkeypatch.chdir(tmp_path)
    main(["run", "three.py", "--no-smoke", "-q", "--max-failures", "0", "--name", "three"])
    trials, history = report.read_tables(str(tmp_path / "tuner_results" / "three"))
    counts = trials["status"].value_counts().to_dict()
    assert counts == {"finished": 2, "error": 1}

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        samples = _exported()
        states = {state: n for state, n in _of(samples, "ray_tuner_trials", "state").items() if n}
        if states == counts:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"the exporter never served the run's states {counts}: {samples}")
    assert {labels["experiment"] for _, labels, _ in samples} == {"three"}
    assert _of(samples, "ray_tuner_best", "objective") == {"score": trials["score"].max()}
    assert _of(samples, "ray_tuner_trials_planned", "experiment") == {"three": 3}
    top = _of(samples, "ray_tuner_top_trial", "rank")
    assert top == {"1": trials["score"].max(), "2": trials["score"].dropna().min()}
    assert _of(samples, "ray_tuner_epochs_total", "experiment") == {"three": len(history)}

    # Nothing sets the series again once the run is over: Ray's exporter drops them, the trials' first.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not [name for name, _, _ in _exported() if name != "ray_tuner_epochs_total"]:
            break
        time.sleep(1)
    else:
        pytest.fail(f"series still exported a minute after the run: {_exported()}")


SLOW = """
import time
from ray import tune

param_space = {"x": tune.grid_search([0.9, 0.5, 0.1])}
metric, mode, epochs = "score", "max", 60  # 30 s a trial: the first still runs as the budget ends


def train_loop(config, ctx):
    for epoch in range(1, ctx.epochs + 1):
        time.sleep(0.5)
        ctx.report({"score": config["x"] * epoch})
"""


def test_a_run_the_time_budget_ends_says_which_trial_it_stopped_and_why(
    tmp_path, ray_exporting_each_second, monkeypatch
):
    """Tune ends the trials of a run its time budget stops without telling its trial hooks."""
    (tmp_path / "slow.py").write_text(textwrap.dedent(SLOW))
    monkeypatch.chdir(tmp_path)
    # 20 s, so that the first trial has started by then even on loaded cores: with 8 s, and three test
    # files at once on two cores, every trial was once still waiting for its process as the budget ran out.
    args = ["run", "slow.py", "--no-smoke", "-q", "--max-concurrent", "1", "--time-budget", "20s", "--name", "slow"]
    main(args)
    trials, _ = report.read_tables(str(tmp_path / "tuner_results" / "slow"))
    counts = trials["status"].value_counts().to_dict()
    assert counts.get("stopped early") == 1, counts  # the one running when the budget ran out

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        samples = _exported()
        if {state: n for state, n in _of(samples, "ray_tuner_trials", "state").items() if n} == counts:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"the exporter never served the run's states {counts}: {samples}")
    assert _of(samples, "ray_tuner_early_stops", "reason") == {"stop or time budget": 1}
