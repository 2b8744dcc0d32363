import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def local_ray():
    """A real local Ray instance, shared by the in-process tests of one session."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def tuner_command(*args: str) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TUNER_DATA_DIR", None)
    return [sys.executable, "-m", "tuner", *args], env


def run_tuner(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m tuner ...` in a fresh process, as a user runs it."""
    command, env = tuner_command(*args)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
