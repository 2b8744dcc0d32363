"""Old checkpoints go only once the experiment state in storage no longer points at them, and do not pile
up between state snapshots; once fit has returned, each trial keeps the checkpoint Ray's final state points
at."""

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from ray import tune

from tuner.storage.checkpoint_retention import KEEP, RetireCheckpoints, retire_after_fit

EPOCHS = 6


def _checkpoints(trial_dir: str | Path) -> list[str]:
    return sorted(p.name for p in Path(trial_dir).glob("checkpoint_*"))


def _freeze_the_stored_state(experiment_dir: Path) -> None:
    """Storage stops taking the state, as a full disk would: the state file there is kept aside and a
    directory put in its place, so Ray's later syncs of it fail."""
    stored = next(experiment_dir.glob("experiment_state-*.json"))
    while True:
        shutil.copy(stored, experiment_dir.parent / "frozen_state.json")
        stored.unlink()
        try:
            stored.mkdir()
            return
        except FileExistsError:  # Ray's next snapshot wrote it again in between: freeze that one
            continue


def _trainable(config):
    experiment_dir = Path(config["experiment_dir"])
    trial_dir = experiment_dir / Path(tune.get_context().get_trial_dir()).name
    most = 0
    for epoch in range(1, config["epochs"] + 1):
        with tempfile.TemporaryDirectory() as checkpoint_dir:
            Path(checkpoint_dir, "epoch.json").write_text(json.dumps(epoch))
            tune.report({"epoch": epoch}, checkpoint=tune.Checkpoint.from_directory(checkpoint_dir))
        time.sleep(config["sleep"])  # the driver registers the checkpoint (and retires older ones) meanwhile
        most = max(most, len(_checkpoints(trial_dir)))
        if epoch == config.get("freeze_at"):
            _freeze_the_stored_state(experiment_dir)
    # What is on storage while the trial still runs, for the test to read.
    (trial_dir / "seen.json").write_text(json.dumps({"last": _checkpoints(trial_dir), "most": most}))


def _run(
    tmp_path: Path, name: str, epochs: int = EPOCHS, sleep: float = 0.5, freeze_at: int | None = None
) -> tuple[tune.ResultGrid, dict, list[str]]:
    space = {"experiment_dir": str(tmp_path / name), "epochs": epochs, "sleep": sleep, "freeze_at": freeze_at}
    tuner = tune.Tuner(
        _trainable,
        param_space=space,
        run_config=tune.RunConfig(name=name, storage_path=str(tmp_path), callbacks=[RetireCheckpoints()], verbose=0),
    )
    results = tuner.fit()
    assert results[0].error is None
    trial_dir = Path(results[0].path)
    return results, json.loads((trial_dir / "seen.json").read_text()), _checkpoints(trial_dir)


@pytest.mark.slow
def test_checkpoints_go_once_no_stored_state_points_at_them_and_after_fit_only_the_last_stays(
    local_ray, tmp_path, monkeypatch
):
    newest = [f"checkpoint_{i:06d}" for i in range(EPOCHS - KEEP, EPOCHS)]
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "0")  # a snapshot at every step of Tune's loop
    _, during, after = _run(tmp_path, "often")
    assert during["last"] == after == newest

    # Storage keeps the state of the third epoch, whatever later snapshots point at: what it points at
    # stays, and a restore from it finds its checkpoint.
    results, during, after = _run(tmp_path, "frozen", freeze_at=3)
    experiment = tmp_path / "frozen"
    state_file = next(experiment.glob("experiment_state-*.json"))
    state_file.rmdir()
    shutil.copy(tmp_path / "frozen_state.json", state_file)
    stored = tune.Tuner.restore(str(experiment), _trainable).get_results()[0].checkpoint
    assert stored is not None and Path(stored.path).name in during["last"] and Path(stored.path).name in after
    assert Path(stored.path).name not in newest  # else the test shows nothing
    assert (Path(stored.path) / "epoch.json").is_file()

    retire_after_fit(results)
    assert _checkpoints(results[0].path) == [Path(results[0].checkpoint.path).name] == newest[-1:]


@pytest.mark.slow
def test_fast_epochs_do_not_pile_up_checkpoints_between_snapshots(local_ray, tmp_path, monkeypatch):
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "2")
    _, during, _ = _run(tmp_path, "fast", epochs=150, sleep=0.02)  # about 25 epochs between snapshots
    # The newest KEEP, those the last stored and newer snapshots point at, and one being registered.
    assert during["most"] <= KEEP + 4, during
