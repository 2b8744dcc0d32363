"""A Ray instance kept between runs (`tuner run --keep-ray`, tuner/execution/kept_ray.py): it serves the
next runs from the same folder, says itself in one line, stops on its own once idle or at `tuner down`,
and nothing else is ever left behind. Processes are told by their GCS: every Ray instance has one
gcs_server process, and a run's own instance ends with the run."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import TINY_GRID, free_port, run_tuner
from tests.e2e.test_faults import wait_until
from tuner.execution import kept_ray

pytestmark = pytest.mark.slow
SMALL = TINY_GRID.replace("epochs = 2", "epochs = 1")


def gcs_servers() -> set[int]:
    """The pids of every Ray GCS this test session's runs started: those that inherited its
    TUNER_RUNTIME_DIR (tests/conftest.py, own_runtime_dir), not those of tests running beside it."""
    ours, found = os.environ["TUNER_RUNTIME_DIR"], set()
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if (
                "gcs_server" in (process.info["name"] or "")
                or any("gcs_server" in part for part in process.info["cmdline"] or [])
            ) and process.environ().get("TUNER_RUNTIME_DIR") == ours:
                found.add(process.pid)
        except psutil.Error:
            continue
    return found


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE  # a reaper may be slow to collect it
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(autouse=True)
def nothing_kept_afterwards() -> Iterator[None]:
    """A test that fails half-way leaves no instance for the next tests' runs to find."""
    yield
    kept_ray.stop()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "space.py").write_text(SMALL)
    return tmp_path


def test_a_run_not_asked_to_keep_ray_leaves_no_ray_process(folder: Path) -> None:
    before = gcs_servers()
    done = run_tuner("run", "space.py", "-q", "--no-smoke", cwd=folder)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: not gcs_servers() - before, "end of the run's own Ray instance", timeout=10)
    assert kept_ray.find() is None


def test_a_kept_instance_serves_the_next_run_then_stops_on_its_own(folder: Path) -> None:
    before = gcs_servers()
    # 30 s: more than `tuner list` and the second run's start-up take to reach it on two busy cores (10 s
    # was not, once: the keeper stopped the instance as the second run started).
    first = run_tuner("run", "space.py", "--keep-ray", "30s", "--name", "first", "--no-smoke", cwd=folder)
    assert first.returncode == 0, first.stderr
    kept = kept_ray.find()
    assert kept is not None and psutil.pid_exists(kept.pid)
    assert f"keeping this Ray instance ({kept.address})" in first.stdout
    assert len(gcs_servers() - before) == 1, "exactly one instance stays up"
    listed = run_tuner("list", cwd=folder)
    assert f"ray: a Ray instance kept by tuner is up at {kept.address}" in listed.stdout

    second = run_tuner("run", "space.py", "--name", "second", "--no-smoke", cwd=folder)
    assert second.returncode == 0, second.stderr
    assert f"on the Ray instance kept at {kept.address}" in second.stdout
    assert "differs from the kept instance's" not in second.stdout  # the same shell: nothing to pass on
    assert len(gcs_servers() - before) == 1, "the second run started no instance of its own"
    assert "best trial:" in second.stdout
    trial_rows = [
        json.loads(line)
        for path in (folder / "tuner_results" / "second").glob("*/result.json")
        for line in path.read_text().splitlines()
    ]
    assert len(trial_rows) == 4  # every trial reported its epoch on the kept instance

    # Idle for 30 s after the second run's end: the keeper shuts its instance down and leaves nothing.
    wait_until(lambda: not gcs_servers() - before, "idle stop of the kept instance", timeout=90)
    wait_until(lambda: not _running(kept.pid), "exit of the keeper with its instance", timeout=10)
    assert kept_ray.find() is None
    assert "ray:" not in run_tuner("list", cwd=folder).stdout


def test_tuner_down_stops_the_kept_instance_and_another_folder_runs_its_own(folder: Path, tmp_path_factory) -> None:
    before = gcs_servers()
    with kept_ray.locked():  # as a run with --keep-ray starts it, from the folder the test runs in
        kept = kept_ray.start("10m", 600)
    assert len(gcs_servers() - before) == 1

    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "space.py").write_text(SMALL)
    other = run_tuner("run", "space.py", "--no-smoke", cwd=elsewhere)
    assert other.returncode == 0, other.stderr
    assert f"not on the Ray instance tuner keeps at {kept.address} (its trials run in {os.getcwd()}" in other.stdout
    still = kept_ray.find()
    assert still is not None and (still.pid, still.address) == (kept.pid, kept.address), "it is left alone"

    down = run_tuner("down", cwd=elsewhere)
    assert down.returncode == 0, down.stderr
    assert down.stdout.strip() == (
        f"stopped the Ray instance tuner kept at {kept.address} for runs from {os.getcwd()}; no other Ray was touched"
    )
    wait_until(lambda: not gcs_servers() - before, "end of the stopped instance", timeout=30)
    again = run_tuner("down", cwd=elsewhere)
    assert again.returncode == 0 and again.stdout.strip() == "no Ray instance kept by tuner is up"


@pytest.fixture
def ray_tmpdir() -> Iterator[Path]:
    """Where Ray keeps its sessions and its discovery file (`ray_current_cluster`, written by `ray start`),
    this test's own (RAY_TMPDIR, which a run's processes and its keeper inherit), so that the user's Ray
    it plays leaves nothing behind for the rest of the machine. Short: Ray's socket paths must fit 107
    characters."""
    folder = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _discovery_file(ray_tmpdir: Path) -> Path:
    return ray_tmpdir / "ray" / "ray_current_cluster"


def test_a_users_own_ray_beside_is_never_kept_nor_stopped(folder: Path, ray_tmpdir: Path) -> None:
    """README's `ray start --head`, then `tuner run --keep-ray` and `tuner down`: tuner keeps an instance of
    its own (the keeper's ray.init once joined the user's through the discovery file), and stopping it
    leaves the user's running."""
    port = free_port()
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmpdir)}
    ray_cli = str(Path(sys.executable).parent / "ray")
    users = subprocess.Popen(
        [ray_cli, "start", "--head", "--port", str(port), "--num-cpus", "1", "--include-dashboard=false", "--block"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _discovery_file(ray_tmpdir).is_file(), "the user's `ray start --head`", timeout=60)
        users_address = _discovery_file(ray_tmpdir).read_text().strip()
        assert users_address.endswith(f":{port}")

        run = run_tuner(
            "run", "space.py", "--keep-ray", "1m", "--no-smoke", env={"RAY_TMPDIR": str(ray_tmpdir)}, cwd=folder
        )
        assert run.returncode == 0, run.stderr
        kept = kept_ray.find()
        assert kept is not None and kept.address != users_address
        assert f"keeping this Ray instance ({kept.address})" in run.stdout
        assert f"ray: a Ray instance kept by tuner is up at {kept.address}" in run_tuner("list", cwd=folder).stdout

        down = run_tuner("down", cwd=folder)
        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == (
            f"stopped the Ray instance tuner kept at {kept.address} for runs from {folder}; no other Ray was touched"
        )
        assert not kept_ray.answers(kept.address)
        assert users.poll() is None and kept_ray.answers(users_address), "the user's Ray is still up"
    finally:
        users.terminate()  # `ray start --block` stops what it started at SIGTERM
        users.wait(timeout=60)


def test_a_stale_discovery_file_does_not_delay_a_kept_instance(folder: Path, ray_tmpdir: Path) -> None:
    """What a user's `ray start --head` leaves once stopped by its PID: a discovery file naming a GCS
    that is gone. The keeper once tried to join it and failed after 120 s."""
    _discovery_file(ray_tmpdir).parent.mkdir(parents=True)
    _discovery_file(ray_tmpdir).write_text(f"127.0.0.1:{free_port()}")
    run = run_tuner(
        "run", "space.py", "--keep-ray", "1m", "--no-smoke", env={"RAY_TMPDIR": str(ray_tmpdir)}, cwd=folder
    )
    assert run.returncode == 0, run.stderr
    kept = kept_ray.find()
    assert kept is not None and kept_ray.answers(kept.address)
    assert f"keeping this Ray instance ({kept.address})" in run.stdout


def _record(**changes) -> kept_ray.Kept:
    fields = {
        "address": "127.0.0.1:1",
        "dashboard_url": "",
        "pid": os.getpid(),
        "python": sys.executable,
        "cwd": os.getcwd(),
        "keep": "10m",
        "started_at": time.time(),
        "environment": {},
    }
    return kept_ray.Kept(**{**fields, **changes})


def test_down_refuses_while_runs_use_the_instance(folder: Path) -> None:
    # A process that passes for the keeper, which nothing may stop here.
    stand_in = psutil.Popen([sys.executable, "-c", "import time; time.sleep(120)", kept_ray.KEEPER_MODULE])
    kept_ray.write(_record(pid=stand_in.pid, drivers=1))
    try:
        down = run_tuner("down", cwd=folder)
        assert down.returncode == 2
        said = down.stderr.strip()
        assert said.startswith("tuner: error: the Ray instance tuner keeps at 127.0.0.1:1 has 1 run(s) on it now")
        assert said.endswith("or let it stop on its own once idle for 10m") and "\n" not in said
        assert kept_ray.find() is not None and stand_in.is_running(), "nothing was stopped"
    finally:
        kept_ray.record_path().unlink(missing_ok=True)
        stand_in.kill()
        stand_in.wait()


def test_a_record_whose_keeper_died_or_that_is_torn_is_forgotten() -> None:
    dead = psutil.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    kept_ray.write(_record(pid=dead.pid))
    assert kept_ray.find() is None and not kept_ray.record_path().exists()
    kept_ray.write(_record(pid=os.getpid()))  # alive, but no keeper: its pid was taken by another process
    assert kept_ray.find() is None and not kept_ray.record_path().exists()
    kept_ray.record_path().write_text('{"address": ')
    assert kept_ray.find() is None and not kept_ray.record_path().exists()


def test_the_trials_see_the_variables_this_run_has_otherwise(monkeypatch) -> None:
    from tuner import environment

    monkeypatch.setattr(environment, "AT_IMPORT", {"HOME": "/h", "PWD": "/a", "TOKEN": "new", "EXTRA": "1"})
    monkeypatch.setenv("TUNER_DATA_DIR", "/data")
    monkeypatch.delenv("RAY_LOGGER_LEVEL", raising=False)
    monkeypatch.delenv("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", raising=False)
    kept = _record(environment={"HOME": "/h", "PWD": "/b", "TOKEN": "old", "GONE": "x", "RAY_AUTH_MODE": "token"})
    assert kept_ray.environment_changes(kept) == {"TOKEN": "new", "EXTRA": "1", "GONE": "", "TUNER_DATA_DIR": "/data"}


@pytest.mark.parametrize(
    "args, said",
    [
        (["--keep-ray", "0"], "--keep-ray '0' must be longer than zero"),
        (["--keep-ray", "soon"], "--keep-ray 'soon' is not a duration; write e.g. 90s, 30m, 2h or 1h30m"),
        (
            ["--keep-ray", "--address", "127.0.0.1:1"],
            "--keep-ray keeps a local Ray instance, and this run is on the cluster at 127.0.0.1:1",
        ),
    ],
)
def test_keep_ray_input_is_checked_in_one_line(folder: Path, args: list[str], said: str) -> None:
    done = run_tuner("run", "space.py", *args, cwd=folder)
    assert done.returncode == 2
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert kept_ray.find() is None


def test_keep_ray_alone_keeps_for_ten_minutes() -> None:
    from tuner.cli import _parser

    assert _parser().parse_args(["run", "--keep-ray"]).keep_ray == "10m"
    assert _parser().parse_args(["run", "--keep-ray", "90s"]).keep_ray == "90s"
