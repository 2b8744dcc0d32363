"""Against a real Ray head started with `ray start --head` on loopback, with token authentication on:
`tuner run --address`, `tuner submit` (Ray Jobs) and the local dashboard of `tuner run --dashboard`."""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import pytest

from tests.conftest import REPO, free_port, run_tuner, tuner_process
from tuner.command import ray_command, tuner_command

pytestmark = pytest.mark.slow

TINY = """
from ray import tune
model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 2
param_space = {"lr": tune.grid_search([0.001, 0.01]), "hidden": 16}
"""


def _status(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def _wait_for(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _status(url) == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {timeout} s")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster")
    (path / "tiny.py").write_text(textwrap.dedent(TINY))
    return path


def _without_this_installation(path: str) -> str:
    """PATH as a shell has it where tuner's virtualenv is not active."""
    here = Path(sys.executable).parent.resolve()
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if entry and Path(entry).resolve() != here)


@pytest.fixture(scope="module")
def ray_head():
    """A head node of its own: own ports, own temp dir (Ray's socket paths must stay short), own token."""
    token = secrets.token_hex(16)
    gcs_port, dashboard_port, client_port, agent_port = free_port(), free_port(), free_port(), free_port()
    temp_dir = tempfile.mkdtemp(prefix="rayhead", dir="/tmp")
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        # Started as a user does with the `ray` of tuner's virtualenv, not activated: the `python` on the
        # cluster's PATH is not the one that has Ray and tuner, and a submitted job must not need it.
        "PATH": _without_this_installation(os.environ["PATH"]),
    }
    head = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "ray"),
            "start",
            "--head",
            "--block",
            "--port",
            str(gcs_port),
            "--dashboard-host",
            "127.0.0.1",
            "--dashboard-port",
            str(dashboard_port),
            "--ray-client-server-port",
            str(client_port),
            "--num-cpus",
            "2",
            "--disable-usage-stats",
            # The job agent's HTTP port is fixed (52365) by default: another Ray instance on this machine
            # (the suite's own local_ray) would hold it and the Jobs API would find no agent.
            "--dashboard-agent-listen-port",
            str(agent_port),
            "--temp-dir",
            temp_dir,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for(f"http://127.0.0.1:{dashboard_port}/")
        yield {
            "gcs": f"127.0.0.1:{gcs_port}",
            "dashboard": f"http://127.0.0.1:{dashboard_port}",
            "client": f"ray://127.0.0.1:{client_port}",
            "token": token,
            "env": env,
            "temp_dir": temp_dir,
        }
    finally:
        # `ray stop` would stop every Ray instance on the machine; only this head's processes go. SIGKILL:
        # after SIGTERM, `ray start --block` takes about 30 s to stop its processes one by one, and nothing
        # on this throwaway head needs a clean shutdown (its worker processes exit when the raylet dies).
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=30)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _token_env(head) -> dict[str, str]:
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": head["token"], "RAY_ADDRESS": ""}


def test_run_on_an_existing_cluster(ray_head, workdir):
    result = run_tuner(
        "run",
        "tiny.py",
        "--address",
        ray_head["gcs"],
        "--storage-path",
        str(workdir / "results"),
        "--name",
        "on_cluster",
        cwd=workdir,
        env=_token_env(ray_head),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # The cluster's processes keep the head's INFO level; the run's own log at WARNING below -v.
    assert "Checkpoint successfully created" not in result.stdout + result.stderr
    # The cluster's own dashboard is announced: the run joined it rather than starting an instance.
    assert f"Ray dashboard: {ray_head['dashboard']}" in result.stdout
    trials = pd.read_csv(workdir / "results" / "on_cluster" / "trials.csv")
    assert len(trials) == 2 and (trials["status"] == "finished").all()
    request = urllib.request.Request(
        f"{ray_head['dashboard']}/api/jobs/", headers={"Authorization": f"Bearer {ray_head['token']}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        jobs = json.load(response)
    ours = [job for job in jobs if job["type"] == "DRIVER" and "tuner run tiny.py" in (job["entrypoint"] or "")]
    assert len(ours) == 1, jobs
    # The job names its experiment in Ray's dashboard (a job's detail; `ray list jobs --detail`).
    assert ours[0]["metadata"]["tuner_experiment"] == "on_cluster", ours[0]
    assert ours[0]["metadata"]["tuner_experiment_path"] == str(workdir / "results" / "on_cluster"), ours[0]


def _client_server_logs(head) -> str:
    """The head's Ray Client server logs: why a client's own server process failed to start."""
    logs = sorted(Path(head["temp_dir"]).glob("session_*/logs/ray_client_server*.err"))
    return "".join(f"\n--- {log.name}\n" + log.read_text(errors="replace")[-3000:] for log in logs)


def test_run_through_ray_client(ray_head, workdir):
    result = run_tuner(
        "run",
        "tiny.py",
        "--address",
        ray_head["client"],
        "--storage-path",
        str(workdir / "results"),
        "--name",
        "via_client",
        "--epochs",
        "1",
        "-q",
        cwd=workdir,
        env=_token_env(ray_head),
    )
    assert result.returncode == 0, result.stderr[-3000:] + _client_server_logs(ray_head)
    # Tune runs on the cluster here (Ray Client): its configuration box, its INFO lines and the
    # trials' stay there, and -q leaves the summary only.
    assert result.stdout.lstrip().startswith("experiment: "), result.stdout
    # Only tuner's own lines: at most its notice that a busy head failed to start a client server and
    # that it connects again (a real, occasional Ray Client event, not a leak of Ray's output).
    assert all(
        "failed to start a Ray Client server for this run; connecting again" in line
        for line in result.stderr.strip().splitlines()
    ), result.stderr
    trials = pd.read_csv(workdir / "results" / "via_client" / "trials.csv")
    assert len(trials) == 2 and (trials["status"] == "finished").all() and (trials["epochs"] == 1).all()


def test_run_without_the_token_is_refused(ray_head, workdir):
    result = run_tuner(
        "run",
        "tiny.py",
        "--address",
        ray_head["gcs"],
        "--storage-path",
        str(workdir / "results"),
        "--name",
        "no_token",
        cwd=workdir,
        env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "wrong" * 6, "RAY_ADDRESS": ""},
        timeout=120,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    # Refused at once: tuner's line after at most the one warning Ray's GCS client logs as it is refused,
    # not ray.init's 20 s of retries, a warning each.
    assert len(lines) <= 2, result.stderr
    last = lines[-1]
    assert last.startswith("tuner: error: cannot connect to a Ray cluster") and "RAY_AUTH_TOKEN" in last
    assert not (workdir / "results" / "no_token").exists()


def _clean_env(home: Path) -> dict[str, str]:
    """A user's shell: no Ray variables at all, and a home directory of its own."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(REPO)}


def test_the_token_where_ray_keeps_it_is_enough_and_none_is_one_clear_line(ray_head, workdir, tmp_path):
    """As the issue tried it: the token in ~/.ray/auth_token (where `ray get-auth-token --generate` puts
    it for `ray start`), RAY_AUTH_MODE not set, then `tuner run --address` and `tuner submit`."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(ray_head["token"])
    command = [
        sys.executable,
        "-m",
        "tuner",
        "run",
        "tiny.py",
        "--address",
        ray_head["gcs"],
        "--epochs",
        "1",
        "--storage-path",
        str(workdir / "results"),
        "--name",
        "home_token",
        "-q",
    ]
    result = subprocess.run(command, cwd=workdir, env=_clean_env(home), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # Ray's notice that the cluster uses token authentication ends in advice to turn it off: not shown.
    assert "Token authentication is enabled" not in result.stdout + result.stderr
    assert (pd.read_csv(workdir / "results" / "home_token" / "trials.csv")["status"] == "finished").all()
    submitted = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuner",
            "submit",
            "tiny.py",
            "--address",
            ray_head["dashboard"],
            "--epochs",
            "1",
            "--storage-path",
            str(workdir / "submitted_home"),
            "--name",
            "home_token",
        ],
        cwd=workdir,
        env=_clean_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    assert "Token authentication is enabled" not in submitted.stdout + submitted.stderr
    # The printed `ray job logs` works in the same shell: Ray's CLI sends the token from ~/.ray/auth_token
    # only when told RAY_AUTH_MODE=token, and this installation's `ray` is not on that shell's PATH.
    logs = next(line for line in submitted.stdout.splitlines() if line.startswith("logs:"))
    shell = {**_clean_env(home), "PATH": _without_this_installation(os.environ["PATH"])}
    followed = subprocess.run(
        logs.removeprefix("logs:"), shell=True, cwd=tmp_path, env=shell, capture_output=True, text=True, timeout=300
    )
    assert followed.returncode == 0, logs + followed.stderr[-3000:]
    assert "best trial:" in followed.stdout  # the job's own summary: its logs, to the end

    (home / ".ray" / "auth_token").unlink()
    refused = subprocess.run(
        [*command[:-2], "no_token", "-q"],
        cwd=workdir,
        env=_clean_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith(f"tuner: error: cannot connect to a Ray cluster at {ray_head['gcs']}") and (
        "set RAY_AUTH_TOKEN, or put it in ~/.ray/auth_token" in last
    ), last


def _checkout(folder: Path) -> Path:
    """A tuner checkout as a user submits from it: the package travels in the job's working dir, and the
    folder has a .git and a .venv, which Ray leaves out of that copy."""
    shutil.copytree(REPO / "tuner", folder / "tuner", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", folder / "pyproject.toml")
    (folder / ".git").mkdir()
    (folder / ".venv").mkdir()
    (folder / "tiny.py").write_text(textwrap.dedent(TINY))
    return folder


def _job_status(head, submission_id: str) -> str:
    request = urllib.request.Request(
        f"{head['dashboard']}/api/jobs/{submission_id}", headers={"Authorization": f"Bearer {head['token']}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["status"]


def test_submit_as_a_ray_job_and_follow_its_logs(ray_head, tmp_path):
    checkout = _checkout(tmp_path / "checkout")
    storage = tmp_path / "submitted_results"
    result = run_tuner(
        "submit",
        "tiny.py",
        "--address",
        ray_head["dashboard"],
        "--storage-path",
        str(storage),
        "--name",
        "submitted",
        "--epochs",
        "1",
        "--set",
        "hidden=32",
        "--follow",
        cwd=checkout,
        env=_token_env(ray_head),
        timeout=400,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "job:        tuner-submitted" in result.stdout
    assert f"dashboard:  {ray_head['dashboard']}/#/jobs/tuner-submitted" in result.stdout
    stop_line = f"stop:       {ray_command()} job stop --address {ray_head['dashboard']} tuner-submitted"
    assert stop_line in result.stdout, result.stdout
    assert "best trial:" in result.stdout  # the job's own summary, streamed back
    assert "job tuner-submitted: SUCCEEDED" in result.stdout
    trials = pd.read_csv(storage / "submitted" / "trials.csv")
    # The options the user gave reached `tuner run` on the cluster.
    assert len(trials) == 2 and (trials["epochs"] == 1).all() and (trials["hidden"] == 32).all()
    # Only tuner's lines and the job's own: none of Ray's notices about tokens, the folders it leaves out of
    # the working dir, the runtime env and the stream; not the entrypoint Ray runs (11 lines of bootstrap).
    for ray_line in ("Token authentication is enabled", "is now ignored by default", "Runtime env is setting up"):
        assert ray_line not in result.stdout + result.stderr, ray_line
    assert "Running entrypoint" not in result.stdout and "sys.argv[0]" not in result.stdout
    assert "WebSocket closed" not in result.stdout + result.stderr
    # The job ran the checkout's tuner from Ray's copy of it; its hints name the checkout, not that copy.
    notebook = next(line for line in result.stdout.splitlines() if line.startswith("notebook:"))
    assert f"{checkout}/notebooks/quick_look.ipynb" in notebook, notebook
    assert f"install -e '{checkout}[notebook]'" in notebook and ray_head["temp_dir"] not in result.stdout

    # The printed stop line stops a job, pasted as printed.
    started = run_tuner(
        "submit", "tiny.py", "--address", ray_head["dashboard"], "--storage-path", str(storage), "--name", "stopped",
        cwd=checkout, env=_token_env(ray_head),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-3000:]
    stop = next(line for line in started.stdout.splitlines() if line.startswith("stop:")).removeprefix("stop:")
    shell = {**os.environ, **_token_env(ray_head)}
    stopped = subprocess.run(stop, shell=True, cwd=tmp_path, env=shell, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stop + stopped.stderr[-3000:]
    assert _job_status(ray_head, "tuner-stopped") == "STOPPED"

    again = run_tuner(
        "submit",
        "tiny.py",
        "--address",
        ray_head["dashboard"],
        "--storage-path",
        str(storage),
        "--name",
        "submitted",
        cwd=checkout,
        env=_token_env(ray_head),
    )
    assert again.returncode == 2 and "a job named tuner-submitted already exists" in again.stderr


def test_a_cluster_python_that_cannot_run_tuner_is_one_line(ray_head, tmp_path):
    """Where the Python that runs Ray on the cluster lacks what tuner needs, the job says so in one line,
    not a traceback (twice: streamed, then in the job's status message). A torch.py in the job's working
    directory that fails to import stands in for a cluster Python without torch (the submitting side
    imports no torch)."""
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY))
    (tmp_path / "torch.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    result = run_tuner(
        "submit",
        "tiny.py",
        "--address",
        ray_head["dashboard"],
        "--name",
        "lacking",
        "--follow",
        cwd=tmp_path,
        env=_token_env(ray_head),
        timeout=300,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output[-3000:]
    # The Python that runs Ray on the cluster, by its virtualenv's path (not the interpreter it links to).
    ray_python = Path(sys.executable).parent.resolve() / "python3"
    failure = f"the Python of the job on the cluster, {ray_python}, cannot run tuner (No module named 'torch')"
    assert output.count(failure) == 1, output[-3000:]
    assert "job tuner-lacking: FAILED (Job entrypoint command failed with exit code 1)" in result.stdout


def _lan_address() -> str | None:
    """This machine's address on a non-loopback interface, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent; this only picks the outgoing interface
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@contextlib.contextmanager
def _held(port: int) -> Iterator[None]:
    """`port` on loopback taken, as another Ray's dashboard takes it (taken already: just as good)."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Ray binds: a closed one's port too
        try:
            holder.bind(("127.0.0.1", port))
            holder.listen()
        except OSError:
            pass
        yield


def test_a_named_dashboard_port_in_use_is_one_line_before_ray_starts(workdir):
    port = free_port()
    with _held(port):
        refused = run_tuner(
            "run", "tiny.py", "--dashboard", "--dashboard-port", str(port), "--storage-path", "held", cwd=workdir
        )
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert refused.stderr.strip() == (
        f"tuner: error: --dashboard-port {port} cannot be used on 127.0.0.1 (Address already in use; another "
        "Ray's dashboard?); give another port, or leave the option out for the first free one from 8265"
    )
    assert not (workdir / "held").exists()


def test_local_dashboard_answers_on_loopback_only_with_token_auth(workdir):
    """--dashboard with 8265 taken (another run's dashboard): Ray's next free port, announced; the API
    wants Ray's token and nothing answers on the LAN."""
    token = secrets.token_hex(16)
    # RAY_AUTH_MODE unset: token authentication must be on by Ray's default for a local instance.
    command, env = tuner_process(
        "run",
        "tiny.py",
        "--dashboard",
        "--storage-path",
        str(workdir / "results"),
        "--name",
        "dashboard",
        env={"RAY_AUTH_TOKEN": token, "RAY_ADDRESS": ""},
    )
    env.pop("RAY_AUTH_MODE", None)
    with _held(8265):
        driver = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            url = None
            printed = []
            for line in driver.stdout:
                printed.append(line)
                if line.startswith("Ray dashboard:"):
                    url = line.split()[2]
                    assert "token authentication is on" in line, line
                    break
            assert url is not None, "the run ended without printing the dashboard URL:\n" + "".join(printed)[-3000:]
            live_page = next(driver.stdout)  # beside it, the command of the experiment's own live page
            assert live_page.startswith(f"live page: {tuner_command()} ui {workdir / 'results' / 'dashboard'} ("), (
                live_page
            )
            host, port = urlsplit(url).hostname, urlsplit(url).port
            assert host == "127.0.0.1" and port is not None and port != 8265, url
            _wait_for(f"{url}/")
            assert _status(f"{url}/api/jobs/") == 401  # the API wants the token
            assert _status(f"{url}/api/jobs/", token) == 200
            lan = _lan_address()
            if lan is not None:
                with pytest.raises(OSError):
                    socket.create_connection((lan, port), timeout=3).close()
            output = driver.stdout.read()
            assert driver.wait(timeout=300) == 0, output[-3000:]
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(timeout=30)
    assert pd.read_csv(workdir / "results" / "dashboard" / "trials.csv")["status"].eq("finished").all()
