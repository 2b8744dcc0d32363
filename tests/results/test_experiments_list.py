"""`tuner list` over real experiments, finished, failed, running and interrupted, and `tuner report`
without a directory taking the newest."""

import signal
import textwrap

import pytest

from tests.conftest import TINY_GRID, epochs_checkpointed, run_tuner, shutdown_ray
from tests.e2e.test_faults import finish, kill_group, start, wait_until

pytestmark = pytest.mark.slow

BROKEN = """
from ray import tune
from torch import nn

def model(config, data):
    raise ValueError("this model cannot be built")

dataset = "digits"
metric, mode = "val_acc", "max"
epochs = 1
param_space = {"lr": tune.grid_search([0.01, 0.1])}
"""


def _rows(tmp_path) -> dict[str, list[str]]:
    result = run_tuner("list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")[1:-1]] == [
        "experiment",
        "space",
        "status",
        "trials",
        "best",
        "started",
        "ran",
    ]
    return {cells[0]: cells[1:] for cells in ([cell.strip() for cell in line.split("|")[1:-1]] for line in lines[2:])}


def test_list_shows_each_experiment_with_its_status_and_report_takes_the_newest(tmp_path, tuner_here):
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY_GRID))
    (tmp_path / "broken.py").write_text(textwrap.dedent(BROKEN))
    (tmp_path / "long.py").write_text(textwrap.dedent(TINY_GRID).replace("epochs = 2", "epochs = 3000"))
    # The finished and the failed experiment are made in this process (on the shared local Ray); the
    # interrupted one by a process, which Ctrl-C ends.
    assert tuner_here("run", "tiny.py", "--name", "done", "-q", cwd=tmp_path).returncode == 0
    failed = tuner_here("run", "broken.py", "--name", "broken", "--no-smoke", "--max-failures", "0", "-q", cwd=tmp_path)
    assert failed.returncode == 1, failed.stderr[-3000:]
    shutdown_ray()  # the process below starts its own, on the same two cores

    driver = start(
        tmp_path, "run", "long.py", "--name", "stopped", "--storage-path", "tuner_results", "-q", "--no-smoke"
    )
    try:
        wait_until(lambda: epochs_checkpointed(tmp_path / "tuner_results" / "stopped") >= 4, "4 epochs", driver=driver)
        # No trial has ended, and the report ranks the running ones by their scores so far: so does list,
        # once Ray's next snapshot (every 2 s) has stored the epochs' results beside their checkpoints.
        wait_until(lambda: _rows(tmp_path)["stopped"][3].endswith(" so far"), "a best so far", 60, driver, every=1.0)
        rows = _rows(tmp_path)
        assert rows["stopped"][1] == "running", rows
        assert rows["stopped"][3].startswith("val_acc=") and rows["stopped"][3].endswith(" so far"), rows
        driver.send_signal(signal.SIGINT)  # Ctrl-C: Ray saves the state and the run ends, resumable
        code, _, err = finish(driver)
        assert code == 130, err[-3000:]
    finally:
        if driver.poll() is None:
            kill_group(driver)

    rows = _rows(tmp_path)
    assert list(rows) == ["stopped", "broken", "done"]  # newest first
    assert rows["done"][:3] == ["tiny", "finished", "4 finished"] and rows["done"][3].startswith("val_acc=")
    assert rows["broken"][1:3] == ["failed", "2 error"] and rows["broken"][3] == ""
    assert rows["stopped"][1] == "interrupted" and "incomplete" in rows["stopped"][2]
    # Every trial of the grid, the ones Ray had not created yet counted as not started, as the summary
    # and `tuner report` count them.
    assert sum(int(part.split()[0]) for part in rows["stopped"][2].split(", ")) == 4, rows["stopped"]

    newest = run_tuner("report", cwd=tmp_path)
    assert newest.returncode == 0, newest.stderr[-3000:]
    assert f"tuner: the newest experiment: {tmp_path / 'tuner_results' / 'stopped'}" in newest.stderr
    assert newest.stdout.startswith(f"# long: 4 trials ({rows['stopped'][2]}), "), newest.stdout[:300]
