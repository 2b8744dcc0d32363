"""tuner's own loop over a space's parts, run through `run_trial_loop` as a trial runs it, without Ray."""

import shutil
from pathlib import Path

import pytest
import torch
from torch import nn

from tuner import data
from tuner.models import resnet18
from tuner.training.context import LoopSetup, load_checkpoint
from tuner.training.trial import Parts, cpu_threads, run_trial_loop

CPU = torch.device("cpu")


class Recorder:
    """Collects what the loop reports, keeping a copy of each checkpoint directory."""

    def __init__(self, root: Path):
        self.root, self.metrics, self.checkpoints = root, [], []

    def __call__(self, metrics, ckpt_dir):
        self.metrics.append(metrics)
        kept = self.root / f"epoch_{metrics['epoch']}"
        shutil.copytree(ckpt_dir, kept)
        self.checkpoints.append(kept)


@pytest.fixture(scope="module")
def digits():
    return data.digits()


def train(config, digits, recorder, model="mlp", epochs=4, seed=0, restored=None, trial_id="t0", **parts):
    run_trial_loop(
        Parts.of(model=model, dataset="digits", **parts),
        config,
        LoopSetup(epochs=epochs, seed=seed, device=CPU, parallel="ddp"),
        data=digits,
        trial_id=trial_id,
        report=recorder,
        restored=restored,
    )


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_loop_learns_digits_well_above_chance(tmp_path, digits, model):
    recorder = Recorder(tmp_path)
    train({"lr": 3e-3, "batch_size": 32}, digits, recorder, model=model, epochs=5)
    assert [m["epoch"] for m in recorder.metrics] == [1, 2, 3, 4, 5]
    assert recorder.metrics[-1]["val_acc"] > 0.85  # chance is 0.10
    assert recorder.metrics[-1]["train_loss"] < recorder.metrics[0]["train_loss"]
    saved = load_checkpoint(str(recorder.checkpoints[-1]), CPU)
    assert saved["epoch"] == 5 and {"model", "optimizer"} <= set(saved["state"])


def test_validation_accuracy_is_exact_over_the_whole_set(tmp_path, digits):
    recorder = Recorder(tmp_path)
    train({"lr": 3e-3}, digits, recorder, epochs=1)
    val_size = len(digits.val[1])
    assert recorder.metrics[0]["val_acc"] * val_size == pytest.approx(
        round(recorder.metrics[0]["val_acc"] * val_size), abs=1e-9
    )


def test_same_seed_same_run_different_seed_different_run(tmp_path, digits):
    runs = []
    for i, seed in enumerate([7, 7, 8]):
        recorder = Recorder(tmp_path / str(i))
        train({"lr": 1e-2}, digits, recorder, epochs=2, seed=seed)
        runs.append([m["val_loss"] for m in recorder.metrics])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_resume_from_checkpoint_matches_uninterrupted_run(tmp_path, digits):
    config = {"lr": 1e-2, "optimizer": "sgd"}
    full = Recorder(tmp_path / "full")
    train(config, digits, full)
    resumed = Recorder(tmp_path / "resumed")
    train(config, digits, resumed, restored=load_checkpoint(str(full.checkpoints[1]), CPU))
    assert [m["epoch"] for m in resumed.metrics] == [3, 4]
    assert [m["val_loss"] for m in resumed.metrics] == [m["val_loss"] for m in full.metrics[2:]]
    assert (resumed.metrics[0]["restored_from"], resumed.metrics[0]["restored_epoch"]) == ("t0", 2)
    assert "restored_from" not in resumed.metrics[1]


def test_restored_trial_trains_with_its_own_lr_not_the_checkpoints(tmp_path, digits):
    """PBT hands a trial another's checkpoint with a new lr; the optimizer state must not bring the old one back."""
    full = Recorder(tmp_path / "full")
    train({"lr": 1e-2, "optimizer": "sgd"}, digits, full, epochs=2)
    frozen = Recorder(tmp_path / "frozen")
    donor = load_checkpoint(str(full.checkpoints[0]), CPU)
    train({"lr": 1e-12, "optimizer": "sgd"}, digits, frozen, epochs=2, restored=donor)
    assert frozen.metrics[0]["val_loss"] == pytest.approx(full.metrics[0]["val_loss"], abs=1e-6)
    assert full.metrics[1]["val_loss"] < full.metrics[0]["val_loss"] - 1e-3


def test_divergence_stops_the_trial(tmp_path, digits):
    recorder = Recorder(tmp_path)
    train({"lr": 1e12, "optimizer": "sgd", "momentum": 0.0}, digits, recorder, epochs=5)
    assert recorder.metrics[-1]["diverged"] is True
    assert len(recorder.metrics) < 5
    # Every metric is still reported, as NaN, so the search's ranking metric is never missing.
    assert {"val_acc", "val_loss", "params", "latency_ms"} <= set(recorder.metrics[-1])


def test_the_trial_reports_which_config_keys_it_read(tmp_path, digits):
    recorder = Recorder(tmp_path)
    train({"lr": 1e-2, "optimizer": "adam", "momentum": 0.5, "hidden": 16, "colour": "red"}, digits, recorder, epochs=1)
    read = set(recorder.metrics[0]["config_keys_read"].split(","))
    assert {"lr", "optimizer", "hidden", "batch_size"} <= read
    assert "momentum" not in read and "colour" not in read  # adam has no momentum; nothing reads colour


@pytest.mark.parametrize("shape,channels", [((1, 28, 28), 1), ((3, 32, 32), 3)])
def test_resnet18_adapts_to_small_images(shape, channels):
    images = torch.randint(0, 255, (4, *shape), dtype=torch.uint8)
    labels = torch.arange(4) % 2
    model = resnet18({}, data.Splits((images, labels), (images, labels)))
    assert model(images).shape == (4, 2)


def test_own_model_loss_metrics_and_optimizer_are_used(tmp_path):
    """A regression: float targets, an own model, loss, optimizer and both kinds of metric."""
    torch.manual_seed(0)
    x = torch.randn(256, 3)
    y = (x @ torch.tensor([1.0, -2.0, 0.5])).unsqueeze(1)
    splits = data.Splits((x[:200], y[:200]), (x[200:], y[200:]))
    calls = {"loss": 0, "optimizer": 0}

    def loss(outputs, targets):
        calls["loss"] += 1
        return nn.functional.l1_loss(outputs, targets)

    def optimizer(config, params):
        calls["optimizer"] += 1
        return torch.optim.SGD(params, lr=config["step"])

    from torchmetrics import MeanSquaredError

    recorder = Recorder(tmp_path)
    run_trial_loop(
        Parts.of(
            model=lambda config: nn.Linear(3, 1),
            dataset=lambda: splits,
            loss=loss,
            optimizer=optimizer,
            metrics={"val_mse": MeanSquaredError(), "val_mae": lambda o, t: (o - t).abs().mean()},
        ),
        {"step": 0.05, "batch_size": 20},
        LoopSetup(epochs=3, seed=0, device=CPU, parallel="ddp"),
        data=splits,
        trial_id="t",
        report=recorder,
    )
    last = recorder.metrics[-1]
    assert calls["optimizer"] == 1 and calls["loss"] > 3 * 10
    assert "val_acc" not in last  # float targets: no accuracy
    assert last["val_mae"] == pytest.approx(last["val_loss"], rel=1e-5)  # the loss is the MAE here
    with torch.no_grad():
        model = nn.Linear(3, 1)
        model.load_state_dict(load_checkpoint(str(recorder.checkpoints[-1]), CPU)["state"]["model"])
        expected = float(((model(x[200:]) - y[200:]) ** 2).mean())
    assert last["val_mse"] == pytest.approx(expected, rel=1e-5)  # torchmetrics over the whole split
    assert last["val_mse"] < recorder.metrics[0]["val_mse"]


def test_default_loss_handles_binary_and_multi_output_targets(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(200, 4)
    cases = {
        "binary, one logit": ((x[:, 0] > 0).long(), nn.Linear(4, 1)),
        "binary as bools": (x[:, 0] > 0, nn.Linear(4, 1)),
        "multi-output regression": (x[:, :2] * 3, nn.Linear(4, 2)),
        "one value per sample, (N,) targets": (x[:, 0] * 2, nn.Linear(4, 1)),
    }
    for name, (y, net) in cases.items():
        splits = data.Splits((x, y), (x, y))
        recorder = Recorder(tmp_path / name.replace(" ", "_"))
        run_trial_loop(
            Parts.of(model=(lambda net: lambda config: net)(net), dataset=(lambda splits: lambda: splits)(splits)),  # noqa: B023 (bound by the call)
            {"lr": 0.05, "batch_size": 50},
            LoopSetup(epochs=4, seed=0, device=CPU, parallel="ddp"),
            data=splits,
            trial_id="t",
            report=recorder,
        )
        first, last = recorder.metrics[0], recorder.metrics[-1]
        assert last["val_loss"] < first["val_loss"], name
        if name.startswith("binary"):
            assert last["val_acc"] > 0.9, name


def test_a_shape_mismatch_in_the_default_loss_names_both_shapes():
    splits = data.Splits((torch.randn(8, 3), torch.randn(8, 2)), (torch.randn(8, 3), torch.randn(8, 2)))
    with pytest.raises(ValueError, match=r"outputs have shape \(8, 3\) but the targets \(8, 2\)"):
        run_trial_loop(
            Parts.of(model=lambda config: nn.Linear(3, 3), dataset=lambda: splits),
            {"batch_size": 8},
            LoopSetup(epochs=1, seed=0, device=CPU, parallel="ddp"),
            data=splits,
            trial_id="t",
            report=lambda m, c: None,
        )


def test_a_trial_uses_the_cpu_threads_it_was_given():
    assert [cpu_threads(cpus) for cpus in (0.25, 0.5, 1, 1.9, 2, 6.5)] == [1, 1, 1, 1, 2, 6]
    seen = []

    def loop(config, ctx):
        seen.append(torch.get_num_threads())
        ctx.report({"val": 1.0})

    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            run_trial_loop(
                Parts(train_loop=loop),
                {},
                LoopSetup(epochs=1, seed=0, device=CPU, parallel="ddp", cpu_threads=threads),
                data=None,
                trial_id="t",
                report=lambda metrics, checkpoint: None,
            )
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 2]
