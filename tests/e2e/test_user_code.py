"""A space module's own code through real runs: own model, data and metrics, own loop, DDP, PBT, resume."""

import textwrap
from pathlib import Path

import pandas as pd
import pytest
import torch

from tests.conftest import run_killed_when, saved_with_checkpoints
from tuner import RunOptions, run
from tuner.execution.preparation import parts_of
from tuner.results.report import RUN_COLUMNS, metric_names
from tuner.spec import space as spaces
from tuner.storage import meta as meta_file
from tuner.storage.study_journal import TRIAL_ID_ATTR, load_study
from tuner.training.context import LoopSetup
from tuner.training.smoke import smoke_test

pytestmark = pytest.mark.slow


def run_here(space: spaces.ExperimentSpec, root: Path, name: str, **options) -> tuple:
    """experiment.run as `tuner run` calls it, on the Ray the test asked for (`local_ray`, the shared
    instance, or `own_ray`, one run() starts); returns the outcome, trials and history."""
    outcome = run(space, RunOptions(storage_path=str(root), name=name, verbose=0, **options))
    experiment = Path(outcome.experiment_path)
    return outcome, pd.read_csv(experiment / "trials.csv"), pd.read_parquet(experiment / "history.parquet")


DDP_SPACE = """
import torch
from ray import tune
from sklearn.datasets import load_wine
from torch import nn
from torchmetrics.classification import MulticlassF1Score

def dataset():
    x, y = load_wine(return_X_y=True)
    x = torch.tensor((x - x.mean(0)) / x.std(0), dtype=torch.float32)
    y = torch.tensor(y)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    return (x[order[:120]], y[order[:120]]), (x[order[120:]], y[order[120:]])

def model(config):
    return nn.Sequential(nn.Linear(13, config["width"]), nn.ReLU(), nn.Linear(config["width"], 3))

metrics = {"val_f1": MulticlassF1Score(num_classes=3, average="macro")}
metric, mode = "val_f1", "max"
epochs = 3
param_space = {"width": 16, "batch_size": 16, "learning_rate": 0.02}
"""


# First in the module: its run starts a Ray of its own (`own_ray`), before the others share one.
def test_a_users_model_trains_with_ddp_and_the_unread_key_is_named(own_ray, tmp_path):
    (tmp_path / "wine_f1.py").write_text(textwrap.dedent(DDP_SPACE))
    space = spaces.load(str(tmp_path / "wine_f1.py"))
    two, two_trials, two_history = run_here(space.with_overrides(workers=2), tmp_path / "results", "two")
    assert two_history["world_size"].tolist() == [2, 2, 2]
    assert two_history["val_f1"].between(0.5, 1.0).all()
    # The same metrics as the loop reports in one process (the smoke step's first report, run again here).
    parts = parts_of(space)
    first = smoke_test(
        parts,
        {"width": 16, "batch_size": 16, "learning_rate": 0.02},
        LoopSetup(epochs=1, seed=0, device=torch.device("cpu"), parallel="ddp"),
        data=parts.load_data(),
        space="wine_f1",
    ).metrics
    two_metrics = [c for c in two_history.columns if c not in {"trial_id", "epoch", *RUN_COLUMNS, *two.params}]
    assert two_metrics == metric_names([pd.DataFrame([first])])
    assert two_metrics == ["train_loss", "val_loss", "val_f1", "params", "latency_ms"]
    assert {"val_f1", "val_loss", "train_loss", "best_val_f1", "params", "latency_ms"} <= set(two_trials.columns)
    # What the model costs, measured by tuner through Ray Train too: the whole model's count, on every row.
    assert two_history["params"].tolist() == [13 * 16 + 16 + 16 * 3 + 3] * 3
    assert (two_history["latency_ms"] > 0).all() and two_history["latency_ms"].nunique() == 1
    # The keys read come through the DDP path too: rank 0's report carries them.
    assert two.unread is not None and "learning_rate (did you mean lr?)" in two.unread
    assert "learning_rate" in meta_file.read(two.experiment_path).unread_params_warning


@pytest.mark.parametrize(
    "name,metric,columns,good",
    [
        ("wine_mlp", "val_loss", ["val_acc", "val_loss"], lambda best: best < 0.5),
        ("diabetes_regression", "val_rmse", ["val_rmse", "val_mae", "val_loss"], lambda best: best < 80),
        ("digits_own_loop", "val_acc", ["val_acc"], lambda best: best > 0.8),
    ],
)
def test_shipped_spaces_with_their_own_code_run_end_to_end(local_ray, tmp_path, name, metric, columns, good):
    space = spaces.load(name).with_overrides(epochs=6, num_samples=1)
    outcome, trials, history = run_here(space, tmp_path, name)
    assert (trials["status"] == "finished").all() and (trials["epochs"] == 6).all()
    assert set(columns) <= set(trials.columns) and set(columns) <= set(history.columns)
    assert good(trials.iloc[0][f"best_{metric}"]), trials.iloc[0]
    assert outcome.unread is None  # every key of the shipped spaces is read


FAILING = """
import torch
from ray import tune

from fragile_helpers import breaks  # a module beside the space's: it reaches the workers with it

def train_loop(config, ctx):
    for epoch in range(ctx.start_epoch, ctx.epochs + 1):
        if config["fragile"] and epoch == 2:
            breaks()
        ctx.report({"score": float(epoch)})

metric, mode = "score", "max"
epochs = 3
param_space = {"fragile": tune.grid_search([False, True])}
"""


def test_a_trial_whose_code_raises_is_an_error_with_its_traceback_and_the_others_go_on(local_ray, tmp_path):
    (tmp_path / "fragile.py").write_text(textwrap.dedent(FAILING))
    (tmp_path / "fragile_helpers.py").write_text(
        'def breaks():\n    raise ArithmeticError("the fragile config breaks in epoch 2")\n'
    )
    outcome, trials, _ = run_here(spaces.load(str(tmp_path / "fragile.py")), tmp_path, "fragile", max_failures=0)
    by_config = trials.set_index("fragile")
    assert by_config.loc[False, "status"] == "finished" and by_config.loc[False, "epochs"] == 3
    assert by_config.loc[True, "status"] == "error" and by_config.loc[True, "epochs"] == 1
    assert by_config.loc[True, "error"] == "ArithmeticError: the fragile config breaks in epoch 2"
    error_text = (Path(by_config.loc[True, "trial_dir"]) / "error.txt").read_text()
    assert 'fragile.py", line' in error_text and 'fragile_helpers.py", line' in error_text  # the user's own frames


PBT_SPACE = """
import torch
import torch.nn.functional as F
from ray import tune
from torch import nn

from tuner.data import digits
from tuner.training.optimizers import load_optimizer_state

dataset = digits

def digest(net):
    return float(sum(p.detach().double().abs().sum() for p in net.parameters()))

def train_loop(config, ctx):
    train, val = ctx.data
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).to(ctx.device)
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=0.5)
    state = ctx.restore()
    loaded = {}
    if state is not None:
        net.load_state_dict(state["net"])
        load_optimizer_state(optimizer, state["optimizer"])
        loaded = {"loaded_digest": digest(net)}
    for epoch in range(ctx.start_epoch, ctx.epochs + 1):
        lr_used = optimizer.param_groups[0]["lr"]
        for x, y in ctx.batches(train, 64):
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            x, y = val
            accuracy = (net(x).argmax(1) == y).double().mean().item()
        ctx.report({"val_acc": accuracy, "digest": digest(net), "optimizer_lr": lr_used,
                    "threads": torch.get_num_threads(), **loaded},
                   checkpoint={"net": net.state_dict(), "optimizer": optimizer.state_dict()})
        loaded = {}

metric, mode = "val_acc", "max"
epochs = 4
scheduler = "pbt"
cpus_per_worker = 0.5
pbt_mutable = ["lr"]
param_space = {"lr": tune.grid_search([1e-5, 2e-5, 0.05, 0.1])}
"""


def checkpoint_digests(experiment: Path, trial_id: str, epoch: int, key: str = "net") -> list[float]:
    """The digests of the weights (`state[key]`) of every checkpoint `trial_id` saved at `epoch` (PBT
    keeps them all)."""
    digests = []
    for path in experiment.glob(f"*_{trial_id}/checkpoint_*/checkpoint.pt"):
        saved = torch.load(path, weights_only=False)
        if saved["epoch"] == epoch and saved["trial_id"] == trial_id:
            digests.append(float(sum(w.double().abs().sum() for w in saved["state"][key].values())))
    return digests


def test_pbt_on_a_users_loop_loads_the_donors_weights_and_the_mutated_lr_reaches_the_optimizer(local_ray, tmp_path):
    (tmp_path / "pbt_loop.py").write_text(textwrap.dedent(PBT_SPACE))
    outcome, trials, history = run_here(spaces.load(str(tmp_path / "pbt_loop.py")), tmp_path, "pbt")
    experiment = Path(outcome.experiment_path)
    exploits = history[history["restored_from"].notna() & (history["restored_from"] != history["trial_id"])]
    assert len(exploits) >= 1, "no trial exploited another"
    for _, row in exploits.iterrows():
        # The weights the loop loaded are the ones the donor saved at that epoch...
        donor_digests = checkpoint_digests(experiment, row["restored_from"], int(row["restored_epoch"]))
        assert any(abs(row["loaded_digest"] - d) < 1e-6 * d for d in donor_digests), (row, donor_digests)
        # ...and the optimizer trains with this trial's (mutated) lr, not the donor's saved one.
        assert row["optimizer_lr"] == pytest.approx(row["lr"])
    assert (history["optimizer_lr"] - history["lr"]).abs().max() < 1e-12  # every epoch used its config's lr
    assert (history["precision"] == "fp32").all()  # precision auto, on the CPU
    assert (history["threads"] == 1).all()  # cpus_per_worker = 0.5: one torch thread in each trial's process


RESUMABLE = (
    PBT_SPACE.replace('scheduler = "pbt"\n', "")
    .replace("epochs = 4", "epochs = 200")
    .replace(
        'param_space = {"lr": tune.grid_search([1e-5, 2e-5, 0.05, 0.1])}',
        'param_space = {"lr": tune.grid_search([0.01, 0.05])}',
    )
)


def test_a_killed_driver_then_resume_on_an_own_loop_space_loses_no_epoch(tmp_path, tuner_here):
    (tmp_path / "long_loop.py").write_text(textwrap.dedent(RESUMABLE))
    experiment = tmp_path / "results" / "killed"
    run_killed_when(
        saved_with_checkpoints(experiment, 8),
        "run",
        "long_loop.py",
        "--storage-path",
        "results",
        "--name",
        "killed",
        "--no-smoke",
        cwd=tmp_path,
    )

    # The kill is a process's; the resume that follows runs in this one, on the shared local Ray.
    result = tuner_here("resume", str(experiment), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    trials = pd.read_csv(experiment / "trials.csv")
    history = pd.read_parquet(experiment / "history.parquet")
    assert len(trials) == 2 and (trials["status"] == "finished").all()
    for trial_id, rows in history.groupby("trial_id"):
        assert rows["epoch"].tolist() == list(range(1, 201)), trial_id  # every epoch once, in order
    # The study the runs wrote goes on where the killed one left it: one Optuna trial per trial, each
    # epoch's value as the history has it, each trial's best its value.
    study = load_study(str(experiment))
    assert sorted(trial.user_attrs[TRIAL_ID_ATTR] for trial in study.trials) == sorted(trials["trial_id"])
    for trial in study.trials:
        rows = history[history["trial_id"] == trial.user_attrs[TRIAL_ID_ATTR]].set_index("epoch")
        assert trial.state.name == "COMPLETE" and trial.intermediate_values == pytest.approx(rows["val_acc"].to_dict())
        assert trial.value == pytest.approx(rows["val_acc"].max())  # the space's mode is max
