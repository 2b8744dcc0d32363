import faulthandler
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import ray

from tuner.ray_compat import env, private

REPO = Path(__file__).resolve().parent.parent
# 4 trials x 2 epochs of an MLP on digits: the smallest real grid experiment.
TINY_GRID = """
from ray import tune
model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 2
param_space = {
    "lr": tune.grid_search([0.001, 0.01]),
    "batch_size": tune.grid_search([32, 64]),
    "hidden": tune.choice([16, 32]),
}
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """tests/e2e/ runs `tuner` as a user does (a process, or main() and run() in this one): the slow tier."""
    for item in items:
        if "e2e" in item.path.parts:
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Ray down before the interpreter's teardown: no_ray_left_running does it after each module, this is
    for one started outside a module's tests."""
    if ray.is_initialized():
        shutdown_ray()


# A file both xdist workers see, and any other suite run on this machine: the lock beside it is only ever
# held while a test runs, so a file left over from an earlier run holds nothing.
TEST_LOCK = Path(tempfile.gettempdir()) / "tuner-tests.lock"


@contextmanager
def test_lock(alone: bool) -> Iterator[None]:
    """Every test holds the lock shared; one marked `alone` holds it alone, so nothing else loads the
    cores while it measures time (tests/e2e/test_scale.py: on 2 cores the other worker's Ray runs once
    made its later trials 1.55x slower). The turnstile is taken first by both kinds: a test waiting to
    run alone holds it, so the other worker cannot start test after test ahead of it."""
    with open(TEST_LOCK.with_suffix(".turnstile"), "a") as turnstile, open(TEST_LOCK, "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Around setup, call and teardown, so a module's Ray starting or stopping counts as its test's."""
    with test_lock(alone=item.get_closest_marker("alone") is not None):
        return (yield)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The interpreter's teardown runs in full and a crash in it fails the run: in CI it once segfaulted
    after printing the summary (exit 139), with Ray's and torch's native threads from the in-process tests
    still there. Should it happen again, the stacks of every thread go to stderr (pytest's own
    faulthandler has stopped by now) and the exit status is the signal's, never a success."""
    faulthandler.enable(file=sys.__stderr__, all_threads=True)


def shutdown_ray() -> None:
    """ray.shutdown() as tuner's own runs end (tuner/execution/cluster.py, _shutdown): the autoscaler
    monitor stopped first, or Ray's shutdown waits out its 1 s grace period at every instance's end."""
    private.stop_local_monitor()
    ray.shutdown()


def start_shared_ray() -> None:
    """A local Ray instance shared by a module's in-process tests (`tuner.run` uses a Ray the process has
    started): started by the first test that needs it, and again after a test that needed its own."""
    if not ray.is_initialized():
        start_test_ray(num_cpus=2, include_dashboard=False, logging_level="ERROR")


def start_test_ray(**options: Any) -> Any:
    """ray.init of a local instance the suite starts for its in-process runs, without the idle worker
    processes Ray prestarts for a driver, as tuner starts its own (tuner/ray_compat/env.py): no trial's
    process is ever one of them, and each is one more Python start on the two cores."""
    with env.no_prestarted_idle_workers():
        return ray.init(address="local", **options)


@pytest.fixture(scope="session", autouse=True)
def own_runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where tuner records a kept Ray instance, the session's own: a run in a test never attaches to an
    instance the developer kept (`tuner run --keep-ray`), and a test's kept instance is nobody else's."""
    os.environ["TUNER_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("runtime"))
    yield
    os.environ.pop("TUNER_RUNTIME_DIR", None)


@pytest.fixture
def local_ray() -> None:
    start_shared_ray()


@pytest.fixture(scope="module", autouse=True)
def no_ray_left_running() -> Iterator[None]:
    """No module leaves a Ray instance up: an idle one slows the next module's `tuner` processes on two
    cores, and its native threads would still be running as the interpreter tears down (pytest_unconfigure)."""
    yield
    if ray.is_initialized():
        shutdown_ray()


@pytest.fixture
def own_ray(capsys) -> None:
    """For an in-process run that starts its own Ray, as `tuner run` does: the data load and the smoke
    step run while it starts, and multi-worker trials get the State API that a Ray started by tuner has
    (tuner/execution/cluster.py, connect(state_api=...)). The shared instance stops for it."""
    if ray.is_initialized():
        shutdown_ray()
        capsys.readouterr()  # the log lines Ray flushes as it shuts down are the earlier tests'


@pytest.fixture
def tuner_here(capsys, monkeypatch) -> Callable[..., subprocess.CompletedProcess]:
    """`tuner ...` as main() in this process on the shared local Ray, for a run that only makes an
    experiment (and its summary) for the test's assertions, not one whose process is the point: ~6 s
    against ~16 s for `run_tuner`, whose exit code, stdout and stderr it returns alike. The shared Ray
    starts at the first call, so a test's earlier `tuner` processes have the two cores to themselves."""
    from tuner.cli import main

    monkeypatch.delenv("TUNER_DATA_DIR", raising=False)  # as tuner_process leaves it out

    def here(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        start_shared_ray()
        capsys.readouterr()
        with monkeypatch.context() as inside:
            inside.chdir(cwd)
            code = main(list(args))
        out = capsys.readouterr()
        return subprocess.CompletedProcess(["tuner", *args], code, out.out, out.err)

    return here


def tuner_process(*args: str, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env.pop("TUNER_DATA_DIR", None)
    return [sys.executable, "-m", "tuner", *args], full_env


def run_tuner(
    *args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m tuner ...` in a fresh process, as a user runs it; `env` adds variables."""
    command, full_env = tuner_process(*args, env=env)
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def tuner_without(modules: tuple[str, ...], calls: str, cwd: Path) -> subprocess.CompletedProcess:
    """`calls` of `main` (tuner.cli's, imported for them) in a fresh interpreter where `modules` cannot be
    found, as without the extra that brings them, whether or not this machine has them: a None entry in
    sys.modules makes importlib.util.find_spec answer None and an import raise ImportError."""
    code = f"import sys\nsys.modules.update(dict.fromkeys({modules!r}))\nfrom tuner.cli import main\n{calls}\n"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def run_killed_when(ready: Callable[[], bool], *args: str, cwd: Path, timeout: float = 180) -> None:
    """`python -m tuner ...` started as a user would, SIGKILLed with every Ray process it started as soon
    as `ready()`; fails if the run ends or stalls before that, with what the run printed."""
    command, env = tuner_process(*args)
    with tempfile.TemporaryFile(mode="w+") as printed:
        driver = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=printed, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + timeout
            while not ready():
                if driver.poll() is not None or time.monotonic() >= deadline:
                    printed.seek(0)
                    raise AssertionError(f"the run ended or stalled before the kill:\n{printed.read()[-3000:]}")
                time.sleep(0.3)
        finally:
            try:
                os.killpg(driver.pid, signal.SIGKILL)  # the driver and the Ray processes it started
            except ProcessLookupError:
                pass  # it ended by itself: the assertion above says so
            driver.wait(timeout=30)


def epochs_checkpointed_by_trial(experiment: Path) -> list[int]:
    """Epochs each trial that has a checkpoint has checkpointed so far, by checkpoint index (tuner's
    retention keeps only a few on disk). Each epoch writes checkpoint_<index> straight to storage, where
    result rows only arrive with Ray's next state snapshot (every 10 s or more)."""
    return [
        1 + max(int(c.name.split("_")[1]) for c in checkpoints)
        for trial in experiment.glob("*/")
        if (checkpoints := list(trial.glob("checkpoint_*")))
    ]


def epochs_checkpointed(experiment: Path) -> int:
    """Epochs all trials have checkpointed so far (see epochs_checkpointed_by_trial)."""
    return sum(epochs_checkpointed_by_trial(experiment))


def saved_with_checkpoints(experiment: Path, epochs: int) -> Callable[[], bool]:
    """A `run_killed_when` condition: `epochs` epochs checkpointed and an experiment state written a second
    after that, so the state a resume reads points at checkpoints (one written just before would restart
    the trials from scratch)."""
    reached: list[float] = []

    def ready() -> bool:
        if not reached:
            if epochs_checkpointed(experiment) < epochs:
                return False
            reached.append(time.time())
        for state in experiment.glob("experiment_state-*.json"):
            try:
                if state.stat().st_mtime > reached[0] + 1:
                    return True
            except FileNotFoundError:  # replaced by a newer one as we looked
                pass
        return False

    return ready


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs: real ENOSPC and EROFS from the kernel. Needs mount(2), i.e. root. Room for a
    whole run of the fault tests' space once freed: Ray's experiment state reaches ~1 MB in it, and
    replacing a file whole takes its size again while the new copy is written."""
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mountpoint)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield mountpoint
    subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill(disk: Path, name: str) -> None:
    """Take the rest of the disk, as another process would."""
    with open(disk / name, "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
        except OSError:
            pass
