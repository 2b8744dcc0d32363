"""A finished experiment is read from the tables its run saved (trials.parquet, history.parquet), and
those are the tables a whole read of Ray's files gives; any change to the experiment after they were
saved, a resumed run or a trial directory gone, sends the read back to Ray's files; a move does not."""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from tests.conftest import TINY_GRID
from tuner.results import report
from tuner.storage import saved_state

pytestmark = pytest.mark.slow


def _whole_read(experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    saved = report._saved_tables
    try:
        report._saved_tables = lambda path, meta: None  # type: ignore[assignment]
        return report.read_tables(experiment)
    finally:
        report._saved_tables = saved  # type: ignore[assignment]


def test_a_finished_experiment_reads_its_saved_tables_until_something_changes(tmp_path, tuner_here):
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY_GRID))
    assert (
        tuner_here("run", "tiny.py", "--name", "done", "-q", "--storage-path", "results", cwd=tmp_path).returncode == 0
    )
    experiment = str(tmp_path / "results" / "done")
    meta = report.load_meta(experiment)

    saved = report._saved_tables(experiment, meta)
    assert saved is not None, "a finished run's tables are read as saved"
    trials, history = saved
    whole_trials, whole_history = _whole_read(experiment)
    pd.testing.assert_frame_equal(trials, whole_trials)
    pd.testing.assert_frame_equal(history, whole_history)
    assert len(trials) == 4 and len(history) == 8

    # Read without loading Ray: what keeps `tuner list` and `tuner report` of a finished experiment quick.
    probe = "import sys; from tuner.results import report; report.read_tables(sys.argv[1]); print('ray' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe, experiment], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False", loaded.stdout + loaded.stderr

    # Ray's state rewritten after the tables (a resumed or extended run, an edit): read whole again.
    state = tmp_path / "results" / "done" / saved_state.newest_state(experiment)
    later = time.time() + 5
    os.utime(state, (later, later))
    assert report._saved_tables(experiment, meta) is None
    os.utime(state, (time.time() - 60, time.time() - 60))
    assert report._saved_tables(experiment, meta) is not None

    # Moved as a whole (mtimes kept): still read as saved, its trial directories named where they are now.
    moved = str(tmp_path / "elsewhere" / "done")
    shutil.copytree(experiment, moved)  # copy2 keeps each file's mtime, as mv and cp -a do
    moved_tables = report._saved_tables(moved, report.load_meta(moved))
    assert moved_tables is not None, "a moved experiment keeps its fast read"
    pd.testing.assert_frame_equal(moved_tables[0], _whole_read(moved)[0])
    assert all(trial_dir.startswith(moved) for trial_dir in moved_tables[0]["trial_dir"])

    # A trial directory deleted by hand: the whole read names it as damage.
    shutil.rmtree(trials["trial_dir"].iloc[0])
    assert report._saved_tables(experiment, meta) is None
    assert "are missing" in report.damage(report.read_tables(experiment)[0])
