"""A local Ray instance whose start times out is started again (tuner/execution/cluster.py, _init): Ray
gives its raylet a fixed 30 s to register, and on a busy machine the raylet's dashboard agent can take
longer to start. Here the first agent is stopped (SIGSTOP) for longer than that, as two busy cores once
kept it, and the retry must leave none of the first attempt's processes that this process started."""

import logging
import os
import signal
import threading
import time
from typing import Any

import psutil
import pytest
import ray

from tuner.execution.cluster import connect
from tuner.settings.run import Cluster

pytestmark = pytest.mark.slow
STALL_S = 40  # past Ray's 30 s


def _raylet_children() -> list[psutil.Process]:
    """The processes of the raylets this process started (their agents and workers)."""
    children = []
    for raylet in psutil.Process().children():
        try:
            if raylet.name() == "raylet":
                children += raylet.children()
        except psutil.Error:
            pass
    return children


def _command_line_has(process: psutil.Process, *words: str) -> bool:
    try:
        return any(word in part for part in process.cmdline() for word in words)
    except psutil.Error:
        return False


def _agent_of_this_process() -> psutil.Process | None:
    """The dashboard agent of a raylet this process started (the raylet's own command line names the
    agent's script too)."""
    return next(
        (child for child in _raylet_children() if _command_line_has(child, "dashboard/agent.py", "DashboardAgent")),
        None,
    )


def _ray_children() -> list[psutil.Process]:
    """The processes of a local start, as this process started them (GCS, raylet, dashboard, monitors)."""
    ray_dir = os.path.dirname(ray.__file__)
    return [child for child in psutil.Process().children() if any(ray_dir in part for part in child.cmdline())]


def _stall_the_first_agent(stalled: dict[str, Any]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (agent := _agent_of_this_process()) is None:
        time.sleep(0.01)
    if agent is None:
        return
    agent.send_signal(signal.SIGSTOP)
    stalled.update(agent=agent, started=_ray_children())
    time.sleep(STALL_S)
    try:
        agent.send_signal(signal.SIGCONT)
    except psutil.Error:
        pass


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_local_start_that_times_out_is_started_again_and_leaves_nothing_behind(own_ray, caplog) -> None:
    stalled: dict[str, Any] = {}
    staller = threading.Thread(target=_stall_the_first_agent, args=(stalled,), daemon=True)
    staller.start()
    try:
        with caplog.at_level(logging.WARNING, logger="tuner"), connect(Cluster(), ray_logs="ERROR", verbose=0):
            assert ray.get(ray.remote(lambda: "up").remote()) == "up"
            assert stalled, "no dashboard agent was stalled: the test did not test the retry"
            first_attempt = stalled["started"]
            assert {process.name() for process in first_attempt if not _gone(process)} == set()
            assert len(first_attempt) >= 4  # the GCS, the raylet, the dashboard and the monitors were there
    finally:
        # Orphaned when its raylet gave up, the stopped agent would end itself only after Ray's GCS
        # reconnection timeout once it runs again (about a minute and a half here): not this test's to wait.
        if "agent" in stalled:
            stalled["agent"].kill()
    assert "did not start within Ray's 30 s (is the machine busy?); starting it again (2 of 2)" in caplog.text


def _idle_workers() -> list[psutil.Process]:
    """Ray's idle workers under a raylet this process started."""
    return [child for child in _raylet_children() if _command_line_has(child, "ray::IDLE")]


def test_a_local_instance_prestarts_no_idle_workers(own_ray) -> None:
    """Ray prestarts an idle worker per CPU as a driver connects. Every process a run needs has a
    runtime_env of its own (Tune's trial actors, Ray Train's controller), so none is ever one of those:
    they would idle through the run (tuner/ray_compat/env.py, no_prestarted_idle_workers)."""
    with connect(Cluster(), ray_logs="ERROR", verbose=0):
        deadline = time.monotonic() + 5  # Ray prestarts them within a second or two of the connection
        while time.monotonic() < deadline:
            assert _idle_workers() == [], "Ray prestarted idle workers for this instance"
            time.sleep(0.1)
        assert ray.get(ray.remote(lambda: "up").remote()) == "up"  # a task still gets a worker, started for it
