"""Ended trials leave the driver's staging directory at the next snapshot that can take them out, with
every file of theirs in storage: the staging directory then holds only trials still running, and the
experiment in storage is as complete as Ray's own copy of everything would have made it."""

import time
from pathlib import Path

from ray import tune

from tuner.storage.ended_trials import EndedTrialsLeaveTheSync
from tuner.storage.trial_logs import KeepResultRows
from tuner.storage.whole_files import ray_storage

TRIALS, EPOCHS = 6, 3


def _trainable(config):
    for epoch in range(1, EPOCHS + 1):
        time.sleep(0.2)
        tune.report({"epoch": epoch, "score": config["x"] * epoch})
    if config["x"] == 5:
        raise RuntimeError("an errored trial is taken out too")


class StagedTrials(tune.Callback):
    """What the driver's staging directory holds at each step: the trial directories in it."""

    def __init__(self) -> None:
        self.most = 0
        self.staging: Path | None = None

    def on_step_end(self, iteration, trials, **info):
        if trials and trials[0].storage is not None:
            self.staging = Path(trials[0].storage.experiment_driver_staging_path)
            if self.staging.is_dir():
                staged = [p for p in self.staging.iterdir() if p.is_dir()]
                self.most = max(self.most, len(staged))


def test_ended_trials_leave_the_staging_directory_with_their_files_in_storage(tmp_path, monkeypatch, local_ray):
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "0")  # a snapshot at every step of Tune's loop
    watched = StagedTrials()
    storage_path, storage_filesystem = ray_storage(str(tmp_path))
    results = tune.Tuner(
        _trainable,
        param_space={"x": tune.grid_search(list(range(TRIALS)))},
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(
            name="ended",
            storage_path=storage_path,
            storage_filesystem=storage_filesystem,
            callbacks=[EndedTrialsLeaveTheSync(), KeepResultRows(), watched],
            verbose=0,
        ),
    ).fit()
    assert len(results) == TRIALS and sum(result.error is not None for result in results) == 1
    assert watched.staging is not None
    left = [p.name for p in watched.staging.iterdir() if p.is_dir()] if watched.staging.is_dir() else []
    assert left == [], f"ended trials still staged: {left}"
    assert watched.most <= 3, "the staging directory held trials that had ended"  # 2 running, 1 just ended
    for result in results:
        trial_dir = Path(result.path)
        rows = [line for line in (trial_dir / "result.json").read_text().splitlines() if line.strip()]
        assert len(rows) == EPOCHS, trial_dir
        assert (trial_dir / "params.json").is_file() and (trial_dir / "progress.csv").is_file()
        assert list(trial_dir.glob("events.out.tfevents.*")), f"no TensorBoard events in {trial_dir}"
        if result.error is not None:
            assert "an errored trial is taken out too" in (trial_dir / "error.txt").read_text()
