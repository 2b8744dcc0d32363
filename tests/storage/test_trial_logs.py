"""A trial that fails after a checkpoint Ray has not synced yet restarts with all its result rows.

The trial reports epochs 1-3 with a checkpoint each. Ray syncs the driver's staging files to storage
after every second checkpoint (num_to_keep=2) and, with TUNE_GLOBAL_CHECKPOINT_S this large, at no
other time, so storage holds rows 1-2 when the trial fails after epoch 3. The restart resumes from the
epoch-3 checkpoint; Ray's loggers then restore result.json from storage, dropping row 3 unless
KeepResultRows uploaded it first. The control run, without the callback, shows the loss is real.
"""

import json
import logging
import tempfile
import time
from pathlib import Path

import pytest
from ray import tune

from tuner.storage.trial_logs import KeepResultRows
from tuner.storage.whole_files import ray_storage

EPOCHS = 5


def _rows(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.exists() else 0


def _wait_for_rows(path: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while _rows(path) < count:
        assert time.monotonic() < deadline, f"no {count} rows in {path}"
        time.sleep(0.1)
    time.sleep(1)  # and for the driver to finish what it does after writing them


def _trainable(config):
    start = 1
    if (restored := tune.get_checkpoint()) is not None:
        with restored.as_directory() as path:
            start = json.loads(Path(path, "epoch.json").read_text()) + 1
    for epoch in range(start, EPOCHS + 1):
        with tempfile.TemporaryDirectory() as checkpoint_dir:
            Path(checkpoint_dir, "epoch.json").write_text(json.dumps(epoch))
            tune.report({"epoch": epoch}, checkpoint=tune.Checkpoint.from_directory(checkpoint_dir))
        # On one node the trial's own directory is the driver's staging copy of it.
        staged = Path(tune.get_context().get_trial_dir())
        if restored is None and epoch == 2:
            # The sync forced by the second checkpoint has landed: storage holds rows 1-2.
            _wait_for_rows(Path(config["experiment_dir"], staged.name, "result.json"), 2)
        if restored is None and epoch == 3:
            # The driver has written row 3 to its staging copy and registered the epoch-3 checkpoint.
            _wait_for_rows(staged / "result.json", 3)
            raise RuntimeError("injected failure after epoch 3")


def _epochs_recorded(tmp_path: Path, name: str, callbacks: list) -> list[int]:
    tuner = tune.Tuner(
        _trainable,
        param_space={"experiment_dir": str(tmp_path / name)},
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(tmp_path),
            callbacks=callbacks,
            verbose=0,
            failure_config=tune.FailureConfig(max_failures=1),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
        ),
    )
    result = tuner.fit()[0]
    assert result.error is None
    (result_json,) = (tmp_path / name).glob("*/result.json")
    return [json.loads(line)["epoch"] for line in result_json.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_rows_written_after_the_last_sync_survive_a_restart(local_ray, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "3600")
    assert _epochs_recorded(tmp_path, "kept", [KeepResultRows()]) == list(range(1, EPOCHS + 1))
    # Without the callback the same run loses the row: the test above can fail.
    assert _epochs_recorded(tmp_path, "control", []) == [1, 2, 4, 5]


class _RowsBehindAtSnapshots(tune.Callback):
    """Counts, at each state snapshot just before Ray uploads the state, the trials whose result.json in
    storage has fewer rows than the driver has written: a state uploaded then, with the rows cut off on
    their way (a store gone mid-upload), resumes those trials past rows storage never got."""

    def __init__(self) -> None:
        self.trials: list = []
        self.behind = self.snapshots = 0

    def on_step_begin(self, iteration, trials, **info):
        self.trials = trials

    def get_state(self):
        for trial in self.trials:
            if trial.local_path is not None and trial.storage is not None:  # local storage: a plain path
                staged, stored = Path(trial.local_path, "result.json"), Path(trial.storage.trial_fs_path, "result.json")
                self.behind += _rows(staged) > _rows(stored)
        self.snapshots += 1


def _reporting(config):
    for epoch in range(1, 9):
        tune.report({"epoch": epoch})
        time.sleep(0.1)


@pytest.mark.slow
def test_every_snapshot_finds_the_rows_it_counts_on_already_in_storage(local_ray, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "0")  # a snapshot at every step of Tune's loop
    counts = {}
    for name, callbacks in (("kept", [KeepResultRows()]), ("control", [])):
        checked = _RowsBehindAtSnapshots()
        # Storage as tuner hands it to Ray (each file replaced whole): Ray's in-place rewrite would let the
        # count read a file cut short mid-upload.
        path, storage_filesystem = ray_storage(str(tmp_path))
        tune.Tuner(
            _reporting,
            param_space={"x": tune.grid_search([1, 2])},
            run_config=tune.RunConfig(
                name=name,
                storage_path=path,
                storage_filesystem=storage_filesystem,
                callbacks=[*callbacks, checked],
                verbose=0,
            ),
        ).fit()
        counts[name] = (checked.behind, checked.snapshots)
    assert counts["kept"][0] == 0 and counts["kept"][1] > 8, counts
    assert counts["control"][0] > 0, counts  # without it, Ray uploads rows and state together: the test can fail


def test_a_trial_restarted_before_its_first_csv_row_is_no_warning(tmp_path):
    """Ray's own CSV logger, asked to restore a progress.csv nobody wrote (PBT exploiting a trial at its
    first result, before the logger saw it), warns; during a fit tuner drops that line, and only it."""
    from types import SimpleNamespace

    import pyarrow.fs
    from ray.tune.logger import CSVLoggerCallback

    from tuner.ray_compat import logs

    storage = SimpleNamespace(trial_fs_path=str(tmp_path / "stored"), storage_filesystem=pyarrow.fs.LocalFileSystem())
    trial = SimpleNamespace(checkpoint=object(), local_path=str(tmp_path / "staged"), storage=storage)
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    ray_logger = logging.getLogger(logs.TUNE_LOGGERS_LOGGER)
    # At WARNING, as in a `tuner run`: an earlier module's ray.init(logging_level="ERROR") may have left
    # the "ray" logger above it.
    level = ray_logger.level
    ray_logger.setLevel(logging.WARNING)
    ray_logger.addHandler(handler)
    try:
        CSVLoggerCallback()._restore_from_remote("progress.csv", trial)  # Ray's own call, as on a restart
        assert len(seen) == 1 and seen[0].startswith(logs.UNWRITTEN_PROGRESS_FILE), seen  # Ray's warning
        with logs.quiet_unwritten_progress_file():
            CSVLoggerCallback()._restore_from_remote("progress.csv", trial)
            ray_logger.warning("another warning")
        assert seen[1:] == ["another warning"]
    finally:
        ray_logger.removeHandler(handler)
        ray_logger.setLevel(level)
