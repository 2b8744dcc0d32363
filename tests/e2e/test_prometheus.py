"""tuner's Ray metrics as an operator meets them: a real Prometheus scrapes a real run through Ray's own
service-discovery file, every query of tuner's Grafana dashboard returns series, and the values agree with
the experiment's own tables (trials.csv and each epoch's rows)."""

import json
import shutil
import subprocess
import textwrap
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import ray

from tests.conftest import free_port, shutdown_ray, start_test_ray
from tuner.cli import main
from tuner.execution.ray_metrics import DASHBOARD, DASHBOARD_NAME
from tuner.ray_compat import private
from tuner.results import report

PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus on the PATH (Debian: apt-get install prometheus)"),
]

# Grid order and two trials at once make an ASHA stop certain (tests/execution/test_live_study.py); the
# sleep keeps each trial running across several of Prometheus' scrapes.
SPACE = """
import time
from ray import tune

param_space = {"x": tune.grid_search([0.9, 0.5, 0.1, 0.7])}
metric, mode, epochs = "score", "max", 4
scheduler = "asha"


def train_loop(config, ctx):
    for epoch in range(1, ctx.epochs + 1):
        time.sleep(0.7)
        ctx.report({"score": config["x"] * epoch - 0.1 * epoch**2, "cost": config["x"]})
"""
SCRAPE_S = 1
GPU_ONLY = "GPU memory per running trial"  # no series on a machine without a GPU, by design


def _start_prometheus(folder: Path, service_discovery: Path, port: int) -> subprocess.Popen:
    config = folder / "prometheus.yml"
    config.write_text(
        json.dumps(  # YAML is a superset of JSON
            {
                "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
                "scrape_configs": [{"job_name": "ray", "file_sd_configs": [{"files": [str(service_discovery)]}]}],
            }
        )
    )
    assert PROMETHEUS is not None
    command = [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}"]
    command.append(f"--web.listen-address=127.0.0.1:{port}")
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _query_range(port: int, expr: str, start: float, end: float) -> list[dict]:
    query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": f"{SCRAPE_S}s"})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query_range?{query}", timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def _last(series: dict) -> float:
    return float(series["values"][-1][1])


def _dashboard_queries(experiment: str) -> dict[str, str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return {
        panel["title"]: target["expr"].replace("$experiment", experiment).replace("$metric", ".*")
        for panel in dashboard["panels"]
        for target in panel["targets"]
    }


@pytest.fixture
def ray_with_metrics(capsys):
    """A Ray that exports each second (Ray's default is every 10 s) and serves its dashboard, which
    writes the service-discovery file Prometheus reads; tuner's run uses it as it uses a notebook's."""
    if ray.is_initialized():
        shutdown_ray()
    start_test_ray(
        num_cpus=2,
        include_dashboard=True,
        logging_level="ERROR",
        _system_config={"metrics_report_interval_ms": 1000},
    )
    capsys.readouterr()
    yield Path(private.session_dir() or "")
    shutdown_ray()


def test_prometheus_scrapes_a_run_and_every_dashboard_query_agrees_with_the_tables(
    tmp_path, ray_with_metrics, capsys, monkeypatch
):
    session = ray_with_metrics
    service_discovery = session / "prom_metrics_service_discovery.json"
    deadline = time.monotonic() + 30
    while not service_discovery.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert service_discovery.exists(), f"Ray wrote no service-discovery file in {session}"
    port = free_port()
    prometheus = _start_prometheus(tmp_path, service_discovery, port)
    try:
        (tmp_path / "graded.py").write_text(textwrap.dedent(SPACE))
        monkeypatch.chdir(tmp_path)
        started = time.time()
        code = main(["run", "graded.py", "--no-smoke", "-q", "--max-concurrent", "2", "--name", "graded"])
        asha = capsys.readouterr()
        assert code == 0, asha.err[-2000:]
        experiment = str(tmp_path / "tuner_results" / "graded")
        trials, history = report.read_tables(experiment)
        counts = trials["status"].value_counts().to_dict()
        assert counts.get("stopped early", 0) >= 1, counts  # the reason label below has a count to agree with

        # The run's last word reaches Prometheus: every trial counted in an end state.
        ended = 'sum(max by (state) (ray_tuner_trials{experiment="graded", state!~"running|pending"}))'
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = _query_range(port, ended, started, time.time())
            if found and _last(found[0]) == len(trials):
                break
            time.sleep(SCRAPE_S)
        else:
            pytest.fail(f"Prometheus never counted {len(trials)} ended trials: {found}")
        end = time.time()

        queries = _dashboard_queries("graded")
        answers = {title: _query_range(port, expr, started, end) for title, expr in queries.items()}
        empty = sorted(title for title, found in answers.items() if not found)
        assert empty == [GPU_ONLY], f"dashboard queries that returned no series: {empty}"

        by_state = {series["metric"]["state"]: _last(series) for series in answers["Trials by state"]}
        assert {state: n for state, n in by_state.items() if n} == counts
        best = {series["metric"]["objective"]: _last(series) for series in answers["Best so far"]}
        assert best == {"score": pytest.approx(trials["score"].max())}
        stops = {series["metric"]["reason"]: _last(series) for series in answers["Early stops by reason"]}
        assert stops == {"asha": counts["stopped early"]}
        # A trial overtaken at a rank leaves its series there until Ray drops it (~20 s unset), so a rank
        # can have two series: its holder now is the one with the better value (a rank's value only improves).
        holders = [series for series in answers["Best trials"] if series["metric"]["rank"] == "1"]
        first = max(holders, key=_last)["metric"]["trial"]
        assert first == trials.sort_values("score", ascending=False)["trial_id"].iloc[0], holders
        epochs = _query_range(port, 'max(ray_tuner_epochs_total{experiment="graded"})', started, end)
        assert _last(epochs[0]) == len(history)

        # Each running trial's value Prometheus saw is one its own epochs reported.
        running = _query_range(
            port, 'max by (trial) (ray_tuner_running_trial_metric{experiment="graded", metric="score"})', started, end
        )
        assert running, "no running trial's score was scraped"
        for series in running:
            reported = set(history[history["trial_id"] == series["metric"]["trial"]]["score"].round(9))
            assert {round(float(value), 9) for _, value in series["values"]} <= reported, series["metric"]
        assert (session / "metrics" / "grafana" / "dashboards" / DASHBOARD_NAME).read_text() == DASHBOARD.read_text()
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
