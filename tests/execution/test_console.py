"""What a user sees while the default experiment runs, on a terminal (a pseudo-terminal here) and on a
pipe: a compact view within ~40 lines, a line per ended trial, the best trial, and what to do next."""

import os
import pty
import re
import subprocess
import time

import pandas as pd
import pytest

from tests import pages
from tests.conftest import run_tuner, tuner_process
from tuner.command import tuner_command

pytestmark = pytest.mark.slow

MAX_LINES = 40
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _on_a_terminal(*args: str, cwd, timeout: float = 300) -> tuple[int, str]:
    """`python -m tuner ...` with a pseudo-terminal as stdin, stdout and stderr; returns (code, output)."""
    command, env = tuner_process(*args, env={"COLUMNS": "160"})
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    output, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the process closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    return process.wait(timeout=30), output.decode(errors="replace")


def _best_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("best trial: "))


def test_the_default_experiment_on_a_pipe_is_a_few_plain_lines(tmp_path):
    result = run_tuner("run", "--storage-path", "results", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    lines = (out + result.stderr).splitlines()
    assert len(lines) <= MAX_LINES, "\n".join(lines)
    assert "\x1b[" not in out and "\r" not in out  # no redraws on a pipe
    ended = [line for line in out.splitlines() if re.match(r"\[\d/9\] \S+ finished  best val_acc=", line)]
    assert [line.split("]")[0] for line in ended] == [f"[{n}/9" for n in range(1, 10)]
    assert "9/9 trials done" in out
    assert "Checkpoint successfully created" not in out + result.stderr  # Ray's per-epoch log lines
    assert "Trial status:" not in out and "╭" not in out  # Ray's own tables and boxes
    experiment = next((tmp_path / "results").iterdir())
    trials = pd.read_csv(experiment / "trials.csv")
    best = trials.iloc[0]
    assert f"best trial: {best['trial_id']}" in _best_line(out)
    # What to do next: the best config to paste, and the report and notebook commands.
    flags = " ".join(f"--set {key}={best[key]}" for key in ("batch_size", "hidden", "lr", "weight_decay"))
    assert f"  as flags:   {flags}" in out
    assert f"{tuner_command()} report {experiment} --html" in out
    # README's sample of this output (tests/test_docs.py checks the sample against the same shape).
    assert pages.output_shape_problems(out) == [], out


def test_on_a_terminal_the_status_is_redrawn_in_place_and_quiet_prints_the_summary_only(tmp_path):
    # 2 epochs: the 9 trials' status lines and redraws are what is checked, not the default's 10 epochs.
    code, output = _on_a_terminal("run", "--storage-path", "results", "--name", "tty", "--epochs", "2", cwd=tmp_path)
    assert code == 0, output[-3000:]
    assert "\r\x1b[2K" in output  # redrawn, not scrolled
    shown = [ANSI.sub("", line.split("\r")[-1]) for line in output.replace("\r\n", "\n").split("\n")]
    assert len([line for line in shown if line.strip()]) <= MAX_LINES, "\n".join(shown)
    assert any(line.startswith("[9/9] ") for line in shown)
    assert _best_line(output)

    quiet = run_tuner("run", "--storage-path", "results", "--name", "quiet", "-q", "--epochs", "2", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert not re.search(r"^\[\d/9\]|trials done|smoke step", quiet.stdout, re.MULTILINE)
    assert quiet.stdout.lstrip().startswith("experiment: ") and "best trial: " in quiet.stdout
