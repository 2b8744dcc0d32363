import shutil
from pathlib import Path

import pytest
import ray
import torch
from ray import tune

from tuner import data
from tuner.data.dataset import Dataset
from tuner.models.build import build as build_model
from tuner.train import CHECKPOINT_FILE, Runtime, TrialSetup, train


class Recorder:
    """Collects what the loop reports, keeping a copy of each checkpoint directory."""

    def __init__(self, root: Path):
        self.root, self.metrics, self.checkpoints = root, [], []

    def __call__(self, metrics, ckpt_dir):
        self.metrics.append(metrics)
        kept = self.root / f"epoch_{metrics['epoch']}"
        shutil.copytree(ckpt_dir, kept)
        self.checkpoints.append(kept)


def runtime(report, restored=None, trial_id="t0") -> Runtime:
    return Runtime(trial_id=trial_id, rank=0, world_size=1, device=torch.device("cpu"), report=report, restored=restored,
                   wrap_model=lambda m: m, all_reduce=lambda t: t)


@pytest.fixture(scope="module")
def digits_ref(local_ray):
    return ray.put(data.load("digits"))


def setup_for(ref, model="mlp", epochs=4, seed=0) -> TrialSetup:
    return TrialSetup(model=model, data=ref, epochs=epochs, seed=seed, workers=1, cpus_per_worker=1,
                      gpus_per_worker=0, experiment_path="unused")


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_loop_learns_digits_well_above_chance(tmp_path, digits_ref, model):
    recorder = Recorder(tmp_path)
    train({"lr": 3e-3, "batch_size": 32}, setup_for(digits_ref, model=model, epochs=5), runtime(recorder))
    assert [m["epoch"] for m in recorder.metrics] == [1, 2, 3, 4, 5]
    assert recorder.metrics[-1]["val_acc"] > 0.85  # chance is 0.10
    assert recorder.metrics[-1]["train_loss"] < recorder.metrics[0]["train_loss"]
    state = torch.load(recorder.checkpoints[-1] / CHECKPOINT_FILE)
    assert state["epoch"] == 5 and {"model", "optimizer"} <= set(state)


def test_same_seed_same_run_different_seed_different_run(tmp_path, digits_ref):
    runs = []
    for i, seed in enumerate([7, 7, 8]):
        recorder = Recorder(tmp_path / str(i))
        train({"lr": 1e-2}, setup_for(digits_ref, epochs=2, seed=seed), runtime(recorder))
        runs.append([m["val_loss"] for m in recorder.metrics])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_resume_from_checkpoint_matches_uninterrupted_run(tmp_path, digits_ref):
    config = {"lr": 1e-2, "optimizer": "sgd"}
    full = Recorder(tmp_path / "full")
    train(config, setup_for(digits_ref, epochs=4), runtime(full))
    resumed = Recorder(tmp_path / "resumed")
    from_epoch_2 = tune.Checkpoint.from_directory(str(full.checkpoints[1]))
    train(config, setup_for(digits_ref, epochs=4), runtime(resumed, restored=from_epoch_2))
    assert [m["epoch"] for m in resumed.metrics] == [3, 4]
    assert [m["val_loss"] for m in resumed.metrics] == [m["val_loss"] for m in full.metrics[2:]]
    assert (resumed.metrics[0]["restored_from"], resumed.metrics[0]["restored_epoch"]) == ("t0", 2)
    assert "restored_from" not in resumed.metrics[1]


def test_restored_trial_trains_with_its_own_lr_not_the_checkpoints(tmp_path, digits_ref):
    """PBT hands a trial another's checkpoint with a new lr; the optimizer state must not bring the old one back."""
    full = Recorder(tmp_path / "full")
    train({"lr": 1e-2, "optimizer": "sgd"}, setup_for(digits_ref, epochs=2), runtime(full))
    frozen = Recorder(tmp_path / "frozen")
    donor = tune.Checkpoint.from_directory(str(full.checkpoints[0]))
    train({"lr": 1e-12, "optimizer": "sgd"}, setup_for(digits_ref, epochs=2), runtime(frozen, restored=donor))
    assert frozen.metrics[0]["val_loss"] == pytest.approx(full.metrics[0]["val_loss"], abs=1e-6)
    assert full.metrics[1]["val_loss"] < full.metrics[0]["val_loss"] - 1e-3


def test_divergence_stops_the_trial(tmp_path, digits_ref):
    recorder = Recorder(tmp_path)
    train({"lr": 1e12, "optimizer": "sgd", "momentum": 0.0}, setup_for(digits_ref, epochs=5), runtime(recorder))
    assert recorder.metrics[-1]["diverged"] is True
    assert len(recorder.metrics) < 5


@pytest.mark.parametrize("shape,channels", [((1, 28, 28), 1), ((3, 32, 32), 3)])
def test_resnet18_adapts_to_small_images(shape, channels):
    dataset = Dataset("fake", torch.zeros((2, *shape), dtype=torch.uint8), torch.zeros(2, dtype=torch.long),
                           torch.zeros((2, *shape), dtype=torch.uint8), torch.zeros(2, dtype=torch.long),
                           num_classes=10, mean=(0.5,) * channels, std=(0.25,) * channels)
    model = build_model("resnet18", dataset, {"hidden": 8, "channels": 8, "dropout": 0.0})
    assert model(torch.randint(0, 255, (2, *shape), dtype=torch.uint8)).shape == (2, 10)
