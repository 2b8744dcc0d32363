"""`tuner run --address` on a real multi-node Ray cluster on this machine: `ray.cluster_utils.Cluster` runs a
head without CPUs and two worker nodes, each its own raylet (so the nodes differ by node id, not by IP).
Trials spread over the nodes; a node removed mid-trial (its raylet and every process on it killed) sends the
trial, one-process or DDP, to the surviving node, from its latest checkpoint.

The cluster has no token authentication while the client has a token (RAY_AUTH_TOKEN, as a user with
~/.ray/auth_token has): a driver that sent it had every trial cancelled before it ran
(tuner/execution/cluster_token.py). One cluster start-up serves the module; a removed node is replaced
before the next test, and each test waits for the cluster to be idle first, so a trial left over cannot
take the next test's CPUs unnoticed.
"""

import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import psutil
import pytest
from ray.cluster_utils import Cluster

from tests.conftest import epochs_checkpointed_by_trial, free_port, run_tuner, tuner_process
from tests.e2e.test_faults import SPACE, finish, kill_group, wait_until

pytestmark = pytest.mark.slow

CPUS_PER_NODE = 2
# A user's token for other clusters, and no RAY_AUTH_MODE: what made tuner turn token mode on.
AUTH_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")
CLIENT_ENV = {"RAY_AUTH_TOKEN": "a" * 32, "RAY_ADDRESS": ""}


@contextmanager
def _no_authentication() -> Iterator[None]:
    """Nodes inherit this process's environment, where a local Ray started by an earlier test may have left
    RAY_AUTH_MODE=token: a worker node added with it refused the no-auth GCS's bundle requests ("Missing
    authorization header"), and a trial waiting for that node waited for good."""
    saved = {
        key: os.environ.pop(key) for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ADDRESS") if key in os.environ
    }
    try:
        yield
    finally:
        os.environ.update(saved)


def _worker_node(cluster: Cluster):
    with _no_authentication():
        return cluster.add_node(num_cpus=CPUS_PER_NODE)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with _no_authentication():
        # The head's dashboard serves the State API Ray Train's cleaner asks whether a Train controller
        # died (tuner/execution/cluster.py, connect): without it a dead controller's bundles stay reserved.
        # A node killed outright is declared dead after GCS's missed health checks: 1.5 s here, not ~15 s.
        started = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": True,
                "dashboard_port": free_port(),  # not 8265, which another test's Ray may hold
                "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3},
            },
        )
    for _ in range(2):
        _worker_node(started)
    started.wait_for_nodes()
    try:
        yield started
    finally:
        started.shutdown()


def _raylets(cluster: Cluster) -> dict[int, str]:
    """Each live worker node's raylet pid -> the node's id."""
    return {node.all_processes["raylet"][0].process.pid: node.node_id for node in cluster.worker_nodes}


def _node_of(pid: int, raylets: dict[int, str]) -> str | None:
    """The node whose raylet started process `pid` (Ray's worker processes are its children)."""
    try:
        for parent in psutil.Process(pid).parents():
            if parent.pid in raylets:
                return raylets[parent.pid]
    except psutil.Error:
        pass
    return None


def _running(cluster: Cluster, title: str) -> dict[int, str]:
    """pid -> node id of the cluster's processes whose title (command line) contains `title`."""
    raylets, found = _raylets(cluster), {}
    for raylet in raylets:
        try:
            children = psutil.Process(raylet).children(recursive=True)
        except psutil.Error:
            continue  # a node going down
        for child in children:
            try:
                if title in " ".join(child.cmdline()):
                    found[child.pid] = raylets[raylet]
            except psutil.Error:
                continue
    return found


def _idle(cluster: Cluster) -> None:
    """Every worker node's CPUs free (GCS's view): nothing of an earlier test is still holding them."""
    deadline = time.monotonic() + 60
    while cluster.global_state.available_resources().get("CPU", 0) < CPUS_PER_NODE * len(cluster.worker_nodes):
        assert time.monotonic() < deadline, f"cluster not idle: {cluster.global_state.available_resources()}"
        time.sleep(0.5)


def _holding(cluster: Cluster) -> str:
    """The cluster's placement groups and live actors, with their nodes, as Ray's State API sees them."""
    from ray.util.state import list_actors, list_nodes, list_placement_groups

    address = f"http://{cluster.webui_url}"
    try:
        nodes = list_nodes(address=address, detail=True)
        groups = list_placement_groups(address=address, detail=True)
        actors = list_actors(address=address, filters=[("state", "!=", "DEAD")], detail=True)
    except Exception as err:  # only a diagnostic
        return f"(no State API answer: {err})"
    lines = [f"node {n.node_id[:8]} {n.state} {n.resources_total}" for n in nodes]
    lines += [f"group {g.placement_group_id[:8]} {g.state} {g.bundles}" for g in groups if g.state != "REMOVED"]
    lines += [f"actor {a.class_name} {a.state} node {a.node_id[:8]} pg {a.placement_group_id}" for a in actors]
    lines.append(f"available: {cluster.global_state.available_resources()}")
    return "\n".join(lines)


def _rows(experiment: Path) -> dict[str, list[dict]]:
    return {
        path.parent.name: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in experiment.glob("*/result.json")
    }


def _run_and_remove_a_node(
    cluster: Cluster, workdir: Path, name: str, title: str, args: list[str], trials: int, epochs_before: int
) -> tuple[str, dict[int, str], int, str]:
    """Starts `tuner run ... --address`, records on which node each process titled `title` runs, and removes
    the node of the first trial process once each of the `trials` has checkpointed `epochs_before` epochs.
    Returns the node removed, pid -> node of every such process seen, and the run's exit code and stderr."""
    _idle(cluster)
    experiment = workdir / "results" / name
    command, env = tuner_process(
        *args,
        "--address",
        cluster.address,
        "--storage-path",
        "results",
        "--name",
        name,
        "--no-smoke",
        "-q",
        env=CLIENT_ENV,
    )
    env.pop("RAY_AUTH_MODE", None)
    driver = subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    seen: dict[int, str] = {}
    try:

        def progressed() -> bool:
            # Every trial past `epochs_before`, so that the node removed is one a trial has reported from
            # (the sum over trials once let a node go whose trial had not reported its first epoch).
            seen.update(_running(cluster, title))
            done = epochs_checkpointed_by_trial(experiment)
            return len(done) == trials and min(done) >= epochs_before and bool(seen)

        try:
            wait_until(progressed, f"{epochs_before} epochs on the cluster", timeout=240, driver=driver)
        except AssertionError as failure:  # with why the run ended, if it did
            ended = driver.communicate(timeout=60)[1][-3000:] if driver.poll() is not None else ""
            raise AssertionError(f"{failure}\n{ended}") from None
        victim_node = next(node for node in cluster.worker_nodes if node.node_id == next(iter(seen.values())))
        cluster.remove_node(victim_node, allow_graceful=False)
        # Where the trial goes on: the processes are gone with their node, the trial's next ones appear.
        deadline = time.monotonic() + 180
        while driver.poll() is None and time.monotonic() < deadline:
            seen.update(_running(cluster, title))
            time.sleep(0.2)
        if driver.poll() is None:  # what holds the cluster, and what the run said, for the failure below
            holding = _holding(cluster)
            os.killpg(driver.pid, signal.SIGKILL)
            said = driver.communicate(timeout=60)[1][-4000:]
            raise AssertionError(f"the run did not end within 180 s of the node's removal\n{holding}\n{said}")
        code, _, err = finish(driver, timeout=60)
    finally:
        if driver.poll() is None:
            kill_group(driver)
        _worker_node(cluster)  # the next test has two worker nodes again
    return victim_node.node_id, seen, code, err


def _assert_complete(workdir: Path, experiment: Path, trials_expected: int, epochs: int) -> pd.DataFrame:
    """`tuner report` rewrites the report from storage: every trial finished, every epoch exactly once."""
    report = run_tuner("report", str(experiment), cwd=workdir)
    assert report.returncode == 0, report.stderr[-3000:]
    trials = pd.read_csv(experiment / "trials.csv")
    assert len(trials) == trials_expected and (trials["status"] == "finished").all(), trials
    assert (trials["epochs"] == epochs).all()
    history = pd.read_parquet(experiment / "history.parquet")
    for _, rows in history.groupby("trial_id"):
        assert sorted(rows["epoch"]) == list(range(1, epochs + 1))  # resumed, not restarted, nothing twice
    return history


def test_ddp_trial_goes_on_after_its_node_is_removed(cluster, tmp_path):
    """A 2-worker DDP trial fills one node; that node is removed after its 2nd epoch: Train's worker group
    is lost, Tune retries the trial, and a new worker group on the other node resumes from the checkpoint."""
    epochs = 12
    (tmp_path / "ddp.py").write_text(textwrap.dedent(SPACE.format(epochs=epochs, lr="0.01")))
    args = ["run", "ddp.py", "--workers", "2"]
    removed, seen, code, err = _run_and_remove_a_node(cluster, tmp_path, "ddp", "RayTrainWorker", args, 1, 2)
    assert code == 0, err[-3000:]
    experiment = tmp_path / "results" / "ddp"
    history = _assert_complete(tmp_path, experiment, 1, epochs)
    assert (history["world_size"] == 2).all()
    assert history["restored_from"].notna().sum() == 1  # the retry resumed from a checkpoint
    assert removed in set(seen.values()) and len(set(seen.values())) == 2, seen  # workers on both nodes


def test_trials_spread_over_nodes_and_one_goes_on_after_its_node_is_removed(cluster, tmp_path):
    """Two trials of 2 CPUs: one per worker node. The node of one is removed after its 3rd epoch: the trial
    waits for the other node, then goes on there from its latest checkpoint."""
    epochs = 40
    (tmp_path / "spread.py").write_text(
        textwrap.dedent(SPACE.format(epochs=epochs, lr="tune.grid_search([0.01, 0.02])"))
    )
    args = ["run", "spread.py", "--cpus-per-worker", str(CPUS_PER_NODE)]
    removed, seen, code, err = _run_and_remove_a_node(cluster, tmp_path, "spread", "ray::InProcessTrial", args, 2, 3)
    assert code == 0, err[-3000:]
    assert "never ran" not in err
    experiment = tmp_path / "results" / "spread"
    history = _assert_complete(tmp_path, experiment, 2, epochs)
    # Which node reported each epoch: Ray's own result rows name the reporting process.
    rows = [row for trial in _rows(experiment).values() for row in trial]
    nodes: dict[str, list[str | None]] = {}
    for row in sorted(rows, key=lambda row: row["epoch"]):
        nodes.setdefault(row["trial_id"], []).append(seen.get(row["pid"]))
    assert all(None not in on for on in nodes.values()), (nodes, seen)
    assert len({on[0] for on in nodes.values()}) == 2, nodes  # spread: each trial started on its own node
    moved = [trial for trial, on in nodes.items() if removed in on]
    assert len(moved) == 1 and len(set(nodes[moved[0]])) == 2, nodes  # the removed node's trial went on elsewhere
    restored = history[history["restored_from"].notna()]
    assert list(restored["trial_id"]) == moved


def test_token_mode_set_for_a_cluster_without_authentication_is_one_line(cluster, tmp_path):
    (tmp_path / "tiny.py").write_text(textwrap.dedent(SPACE.format(epochs=1, lr="0.01")))
    result = run_tuner(
        "run",
        "tiny.py",
        "--address",
        cluster.address,
        "--storage-path",
        "results",
        cwd=tmp_path,
        env={**CLIENT_ENV, "RAY_AUTH_MODE": "token"},
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"tuner: error: the Ray cluster at {cluster.address} runs without token authentication, and "
        "RAY_AUTH_MODE=token here would make Ray cancel every trial before it starts (the cluster's processes "
        "send this driver no token); unset RAY_AUTH_MODE, or start the cluster with RAY_AUTH_MODE=token"
    ]
    assert not (tmp_path / "results").exists()
