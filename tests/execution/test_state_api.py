"""The State API as the processes of a run's local Ray instance ask it: with no address, as Ray Train's
PlacementGroupCleaner asks whether a Train controller died (ray.util.state.get_actor). They must reach
their own instance's, with another local instance on the machine (another run's, a notebook's), where
Ray's own lookup raises, and with RAY_API_SERVER_ADDRESS naming a cluster elsewhere (for `tuner submit`),
where the controller is not found and so taken for dead."""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import ray

from tests.conftest import shutdown_ray
from tuner.execution import kept_ray
from tuner.execution.cluster import connect
from tuner.settings.run import Cluster

pytestmark = pytest.mark.slow
# Its GCS process is what Ray's lookup finds a second time; no dashboard, whose search from 8265 could meet
# the port a run on the other test worker chose a second before.
ANOTHER_INSTANCE = (
    "import ray, time; ray.init(address='local', num_cpus=1, include_dashboard=False, logging_level='ERROR'); "
    "print('up', flush=True); time.sleep(600)"
)


@pytest.fixture(scope="module")
def another_instance() -> Iterator[None]:
    other = subprocess.Popen(
        [sys.executable, "-c", ANOTHER_INSTANCE], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "up"
        yield
    finally:
        os.killpg(other.pid, signal.SIGKILL)  # the process and the instance it started
        other.wait(timeout=30)


@ray.remote(num_cpus=0)
class Probe:
    def state_of(self, actor_id: str) -> str | None:
        from ray.util.state import get_actor

        found = get_actor(actor_id, timeout=10)  # no address, as the cleaner asks
        return None if found is None else found.state


def _own_state(probe: ray.actor.ActorHandle) -> str | None:
    return ray.get(probe.state_of.remote(probe._actor_id.hex()))


def test_a_runs_instance_answers_its_own_processes(another_instance, own_ray, monkeypatch) -> None:
    monkeypatch.setenv("RAY_API_SERVER_ADDRESS", "http://127.0.0.1:9")  # a cluster elsewhere (nothing here)
    with connect(Cluster(), state_api=True, ray_logs="ERROR", verbose=0):
        assert _own_state(Probe.remote()) == "ALIVE"
    assert os.environ["RAY_API_SERVER_ADDRESS"] == "http://127.0.0.1:9"  # this process's own is put back


def test_a_kept_instance_answers_its_own_processes(another_instance, own_ray) -> None:
    with kept_ray.locked():
        kept = kept_ray.start("10m", 600)
    try:
        ray.init(address=kept.address, logging_level="ERROR")
        assert _own_state(Probe.remote()) == "ALIVE"
    finally:
        shutdown_ray()
        kept_ray.stop()


def test_a_runs_ray_job_names_its_experiment(own_ray, tmp_path, caplog) -> None:
    """What Ray's dashboard shows of the run's job (its detail page, `ray list jobs --detail`): the
    experiment's name and path in the job's metadata, asked at the dashboard the run announced."""
    import logging
    import re

    from ray.util.state import list_jobs

    path = str(tmp_path / "results" / "named")
    with caplog.at_level(logging.INFO, logger="tuner"):
        with connect(Cluster(), path, state_api=True, ray_logs="ERROR", verbose=0):
            ours = ray.get_runtime_context().get_job_id()
            announced = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("Ray dashboard: "))
            dashboard = re.search(r"http://\S+", announced).group(0)  # type: ignore[union-attr]
            jobs = [job for job in list_jobs(address=dashboard, detail=True) if job.job_id == ours]
    assert len(jobs) == 1 and jobs[0].metadata == {"tuner_experiment": "named", "tuner_experiment_path": path}
