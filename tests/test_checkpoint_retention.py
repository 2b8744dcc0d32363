"""Old checkpoints go only after SNAPSHOTS experiment-state snapshots; once fit has returned, each trial keeps
the checkpoint Ray's final state points at."""

import json
import tempfile
import time
from pathlib import Path

import pytest
from ray import tune

from tuner.checkpoint_retention import KEEP, RetireCheckpoints, retire_after_fit

EPOCHS = 6


def _checkpoints(trial_dir: str | Path) -> list[str]:
    return sorted(p.name for p in Path(trial_dir).glob("checkpoint_*"))


def _trainable(config):
    for epoch in range(1, EPOCHS + 1):
        with tempfile.TemporaryDirectory() as checkpoint_dir:
            Path(checkpoint_dir, "epoch.json").write_text(json.dumps(epoch))
            tune.report({"epoch": epoch}, checkpoint=tune.Checkpoint.from_directory(checkpoint_dir))
        time.sleep(0.5)  # the driver registers the checkpoint (and retires older ones) meanwhile
    # What is on storage while the trial still runs, for the test to read.
    trial_dir = Path(config["experiment_dir"], Path(tune.get_context().get_trial_dir()).name)
    (trial_dir / "seen.json").write_text(json.dumps(_checkpoints(trial_dir)))


def _run(tmp_path: Path, name: str) -> tuple[tune.ResultGrid, list[str], list[str]]:
    tuner = tune.Tuner(_trainable, param_space={"experiment_dir": str(tmp_path / name)}, run_config=tune.RunConfig(
        name=name, storage_path=str(tmp_path), callbacks=[RetireCheckpoints()], verbose=0))
    results = tuner.fit()
    assert results[0].error is None
    trial_dir = Path(results[0].path)
    return results, json.loads((trial_dir / "seen.json").read_text()), _checkpoints(trial_dir)


@pytest.mark.slow
def test_checkpoints_retire_after_state_snapshots_and_after_fit_only_the_last_stays(local_ray, tmp_path, monkeypatch):
    newest = [f"checkpoint_{i:06d}" for i in range(EPOCHS - KEEP, EPOCHS)]
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "0")  # a snapshot at every step of Tune's loop
    _, during, after = _run(tmp_path, "often")
    assert during == after == newest

    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "3600")  # no snapshot after the first
    results, during, after = _run(tmp_path, "never")
    assert during == after == [f"checkpoint_{i:06d}" for i in range(EPOCHS)]

    retire_after_fit(results)
    assert _checkpoints(results[0].path) == [Path(results[0].checkpoint.path).name] == newest[-1:]
