"""Multi-worker trials (Ray Train workers) through real runs: every parallel strategy on a shipped space
and on a space's own model, PBT restoring a donor's weights into every rank, a scheduler's stopped
trial giving its workers to the next, and a killed driver resumed with no epoch lost or run twice."""

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import ray
import torch
from ray.util.state import list_actors

from tests.conftest import run_killed_when, run_tuner, saved_with_checkpoints, shutdown_ray, start_test_ray
from tests.e2e.test_user_code import checkpoint_digests, run_here
from tuner.execution import dashboard_port
from tuner.spec import space as spaces
from tuner.storage.decisions import read as decision_rows

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_with_state_api() -> Iterator[None]:
    """One local Ray for the module's in-process runs instead of one started by each run (`own_ray`):
    with the dashboard process, whose State API tells Ray Train's PlacementGroupCleaner that a
    controller died, as tuner starts it for multi-worker trials (tuner/execution/cluster.py,
    connect(state_api=...)), so a worker group left behind by one test is released, not kept from the
    next. The scheduler test, whose trials each need both CPUs, comes last of its users."""
    if ray.is_initialized():
        shutdown_ray()
    with dashboard_port.for_local_instance(shown=False) as port:  # as tuner's: another test's Ray may be up
        start_test_ray(
            num_cpus=2,
            include_dashboard=True,
            dashboard_host="127.0.0.1",
            dashboard_port=port,
            logging_level="ERROR",
        )
    yield
    shutdown_ray()


@pytest.mark.parametrize(
    "space,parallel,sets",
    [
        ("digits_mlp", "fsdp", {"hidden": 32}),
        ("digits_cnn", "pipeline", {"channels": 8, "hidden": 32, "dropout": 0.0, "optimizer": "adam"}),
        ("wine_mlp", "fsdp", {"width": 16, "depth": 2}),  # the space's own model
        ("wine_mlp", "pipeline", {"width": 16, "depth": 2}),
    ],
)
def test_each_strategy_trains_a_shipped_and_an_own_model_on_two_workers(
    ray_with_state_api, tmp_path, space, parallel, sets
):
    loaded = spaces.load(space).with_overrides(
        fixed={"lr": 0.01, "batch_size": 32, **sets},
        workers=2,
        parallel=parallel,
        epochs=2,
        num_samples=1,
        search="grid",
    )
    outcome, trials, history = run_here(loaded, tmp_path, parallel)
    assert history["world_size"].tolist() == [2, 2]
    assert history["epoch"].tolist() == [1, 2]
    assert (trials["status"] == "finished").all()
    assert history["train_loss"].iloc[1] < history["train_loss"].iloc[0]  # it learns
    experiment = Path(outcome.experiment_path)
    saved = sorted(experiment.glob("*/checkpoint_*/checkpoint.pt"))  # Tune's, like an in-process trial's
    assert saved and torch.load(saved[-1], weights_only=False)["epoch"] == 2
    assert not list(experiment.glob("train_runs/*"))  # Ray Train's staging runs are gone
    # A Ray this process started is a local instance: no node of it is ever drained and no autoscaler
    # adds any, so no Train run starts a preemption watcher (a process per run) or the autoscaling
    # coordinator (a process per instance) on it.
    gcs = ray.get_runtime_context().gcs_address  # not found by looking: another test's Ray may be up
    for needless in ("PreemptionWatcher", "_AutoscalingCoordinatorActor"):
        assert not list_actors(address=gcs, filters=[("class_name", "=", needless)]), needless


PBT_DDP_SPACE = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from ray import tune
from torch import nn

from tuner.data import digits

dataset = digits

def digest(net):
    return float(sum(p.detach().double().abs().sum() for p in net.parameters()))

def every_rank(value):
    values = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values

def train_loop(config, ctx):
    train, val = ctx.data
    torch.manual_seed(ctx.rank)  # different weights on each rank, unless a checkpoint is loaded
    net = ctx.prepare_model(nn.Sequential(nn.Flatten(), nn.Linear(64, 10)))
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=0.5)
    loaded = {}
    if (state := ctx.restore()) is not None:
        ctx.set_state(net, optimizer, state)
        digests = every_rank(digest(net))
        loaded = {"loaded_digest_min": min(digests), "loaded_digest_max": max(digests)}
    for epoch in range(ctx.start_epoch, ctx.epochs + 1):
        lr_used = optimizer.param_groups[0]["lr"]
        for x, y in ctx.batches(train, 64):
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            x, y = val
            accuracy = (ctx.evaluation_model(net)(x).argmax(1) == y).double().mean().item()
        ctx.report({"val_acc": accuracy, "digest": digest(net), "optimizer_lr": lr_used, **loaded},
                   checkpoint=ctx.get_state(net, optimizer))
        loaded = {}

metric, mode = "val_acc", "max"
epochs = 2  # one exploit, after epoch 1
workers = 2
cpus_per_worker = 0.5  # both trials' workers fit at once on two cores
scheduler = "pbt"  # synchronous: each epoch pauses both trials, and each restart is a new Train run
pbt_mutable = ["lr"]
param_space = {"lr": tune.grid_search([1e-5, 0.1])}
"""


def test_pbt_with_two_worker_trials_loads_the_donors_weights_into_every_rank(ray_with_state_api, tmp_path):
    (tmp_path / "pbt_ddp.py").write_text(textwrap.dedent(PBT_DDP_SPACE))
    outcome, trials, history = run_here(spaces.load(str(tmp_path / "pbt_ddp.py")), tmp_path, "pbt")
    experiment = Path(outcome.experiment_path)
    assert (history["world_size"] == 2).all() and len(trials) == 2
    exploits = history[history["restored_from"].notna() & (history["restored_from"] != history["trial_id"])]
    assert len(exploits) >= 1, "no trial exploited another"
    for _, row in exploits.iterrows():
        # Both ranks hold the same weights after loading (they started from different seeds)...
        assert row["loaded_digest_min"] == row["loaded_digest_max"]
        # ...and they are the ones the donor saved at that epoch...
        donor_digests = checkpoint_digests(experiment, row["restored_from"], int(row["restored_epoch"]), key="model")
        assert any(abs(row["loaded_digest_min"] - d) < 1e-6 * d for d in donor_digests), (row, donor_digests)
        # ...and the optimizer trains with this trial's mutated lr.
        assert row["optimizer_lr"] == pytest.approx(row["lr"])
    # After the last epoch nothing is left to train: no trial restarted (a new Ray Train run) to copy another.
    exploited_at = [decided.epoch for decided in decision_rows(str(experiment)) if decided.decision == "exploit"]
    assert exploited_at and max(exploited_at) < 2, exploited_at


ASHA_SPACE = """
from ray import tune

model, dataset = "mlp", "digits"
metric, mode = "val_acc", "max"
epochs = 3  # ASHA's rungs (grace period 1, reduction factor 3): epoch 1 and the last
workers = 2
cpus_per_worker = 1  # a trial takes both cores: the next starts only once a stopped one let go of them
scheduler = "asha"
param_space = {"lr": tune.grid_search([0.02, 1e-6, 2e-6]), "hidden": 32}
"""


def test_a_stopped_two_worker_trial_frees_its_workers_for_the_next(ray_with_state_api, tmp_path):
    """ray-project/ray#54305: a stopped trial's worker group once kept its resources, and the next
    trial waited forever. Here each trial needs the whole machine, so each start proves the release: the
    good learner runs first and finishes, then ASHA stops each slow one at its first rung, and the third
    trial can only start once the second, stopped, let go of both cores."""
    (tmp_path / "asha.py").write_text(textwrap.dedent(ASHA_SPACE))
    outcome, trials, history = run_here(spaces.load(str(tmp_path / "asha.py")), tmp_path, "asha")
    epochs = history.groupby("trial_id")["epoch"].max()
    assert len(trials) == 3 and (epochs < 3).sum() == 2, epochs  # ASHA stopped both slow learners early
    starts = history.groupby("trial_id")["reported_at"].min().sort_values()
    ends = history.groupby("trial_id")["reported_at"].max()
    for before, after in zip(starts.index, starts.index[1:]):
        # The next trial's first epoch came soon after the previous trial's last: start-up, not a wait.
        assert starts[after] - ends[before] < 120, (before, after)


RESUMABLE_DDP = """
from ray import tune

model, dataset = "mlp", "digits"
metric, mode = "val_acc", "max"
epochs = 40
workers = 2
cpus_per_worker = 0.5
param_space = {"lr": tune.grid_search([0.01, 0.02]), "hidden": 16, "batch_size": 256}
"""


def test_a_killed_driver_with_two_worker_trials_then_resume_loses_and_repeats_no_epoch(own_ray, tmp_path):
    # own_ray: the module's Ray stops, leaving the two cores to the processes this test starts.
    (tmp_path / "long_ddp.py").write_text(textwrap.dedent(RESUMABLE_DDP))
    experiment = tmp_path / "results" / "killed"
    run_killed_when(
        saved_with_checkpoints(experiment, 6),
        "run",
        "long_ddp.py",
        "--storage-path",
        "results",
        "--name",
        "killed",
        "--no-smoke",
        cwd=tmp_path,
        timeout=300,
    )

    result = run_tuner("resume", str(experiment), cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    trials = pd.read_csv(experiment / "trials.csv")
    history = pd.read_parquet(experiment / "history.parquet")
    assert len(trials) == 2 and (trials["status"] == "finished").all()
    assert (history["world_size"] == 2).all()
    assert history["restored_from"].notna().any()  # the resumed trials started from their checkpoints
    for trial_id, rows in history.groupby("trial_id"):
        assert rows["epoch"].tolist() == list(range(1, 41)), trial_id  # every epoch once, in order
