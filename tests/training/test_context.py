"""The `ctx` a training loop gets, on one process and on two gloo ranks started with torch.multiprocessing
(the context is torch-only: Ray Train's part is starting the processes and the process group)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from sklearn.metrics import f1_score
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from tests.conftest import REPO, free_port
from tuner.data.splits import Splits
from tuner.training.config_reads import ReadTrackingConfig
from tuner.training.context import LoopSetup, TrialContext, load_checkpoint
from tuner.training.losses import default_loss
from tuner.training.metrics import Evaluation

CPU = torch.device("cpu")
N = 23  # not a multiple of the world size or of the batch sizes below


def splits() -> Splits:
    x = torch.arange(N, dtype=torch.float32).unsqueeze(1)
    return Splits((x, torch.arange(N) % 3), (x, torch.arange(N) % 3))


def context(reports=None, restored=None, seed=0, max_batches=None, data=None) -> TrialContext:
    def report(metrics, checkpoint_dir):
        if reports is not None:
            reports.append((metrics, load_checkpoint(checkpoint_dir, CPU) if checkpoint_dir else None))

    return TrialContext(
        config=ReadTrackingConfig({"lr": 0.1}),
        setup=LoopSetup(epochs=3, seed=seed, device=CPU, parallel="ddp", max_batches=max_batches),
        data=data or splits(),
        trial_id="t1",
        report=report,
        restored=restored,
    )


def seen(batches) -> list[int]:
    return [int(v) for x, _ in batches for v in x.flatten()]


def test_training_batches_cover_the_split_reshuffled_each_epoch_and_repeatable_by_seed():
    ctx = context()
    first = seen(ctx.batches(ctx.data.train, 5))
    assert sorted(first) == list(range(N)) and first != list(range(N))
    assert seen(ctx.batches(ctx.data.train, 5)) == first  # the same epoch, the same order
    ctx.report({"val": 1.0})
    assert seen(ctx.batches(ctx.data.train, 5)) != first  # the next epoch reshuffles
    assert seen(context(seed=0).batches(ctx.data.train, 5)) == first
    assert seen(context(seed=1).batches(ctx.data.train, 5)) != first


def test_evaluation_batches_are_the_split_in_order_and_torch_datasets_work_too():
    ctx = context()
    assert seen(ctx.batches(ctx.data.val, 4, shuffle=False)) == list(range(N))
    dataset = TensorDataset(*ctx.data.val)
    assert seen(ctx.batches(dataset, 4, shuffle=False)) == list(range(N))
    assert sorted(seen(ctx.batches(dataset, 4))) == list(range(N))
    assert len(list(context(max_batches=1).batches(dataset, 4))) == 1  # the smoke step's context


def test_report_numbers_epochs_saves_the_checkpoint_and_restore_gives_it_back():
    reports = []
    ctx = context(reports)
    assert (ctx.start_epoch, ctx.epoch, ctx.restore()) == (1, 1, None)
    ctx.report({"loss": torch.tensor(0.5), "n": np.int64(3)}, checkpoint={"w": torch.ones(2)})
    ctx.report({"loss": 0.25})
    (first, saved), (second, nothing) = reports
    assert (first["epoch"], second["epoch"], first["loss"], first["n"]) == (1, 2, 0.5, 3)
    assert first["config_keys_read"] == "" and nothing is None
    assert saved["epoch"] == 1 and saved["trial_id"] == "t1" and torch.equal(saved["state"]["w"], torch.ones(2))

    resumed = []
    ctx = context(resumed, restored=saved)
    assert (ctx.start_epoch, ctx.epoch) == (2, 2) and torch.equal(ctx.restore()["w"], torch.ones(2))
    ctx.report({"loss": 0.1})
    ctx.report({"loss": 0.1})
    assert [m["epoch"] for m, _ in resumed] == [2, 3]
    assert (resumed[0][0]["restored_from"], resumed[0][0]["restored_epoch"]) == ("t1", 1)
    assert "restored_from" not in resumed[1][0]


def test_report_refuses_what_is_no_number():
    with pytest.raises(TypeError, match="metric 'loss' is a tensor of shape \\(2,\\); report one number"):
        context().report({"loss": torch.ones(2)})
    with pytest.raises(TypeError, match="metric 'names' is a list; report numbers"):
        context().report({"names": ["a"]})


def _two_ranks(rank: int, port: int, results: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        torch.manual_seed(0)
        ctx = context()
        assert (ctx.rank, ctx.world_size) == (rank, 2)
        train = seen(ctx.batches(ctx.data.train, 6))  # global batch 6: 3 per rank
        val = seen(ctx.batches(ctx.data.val, 4, shuffle=False))
        total = ctx.all_reduce(torch.tensor([float(rank + 1)]))
        model = ctx.prepare_model(nn.Linear(1, 3))
        # A classifier's validation F1 over both ranks' shares, by torchmetrics, next to its predictions.
        from torchmetrics.classification import MulticlassF1Score

        net = nn.Linear(1, 3)
        torch.manual_seed(1)
        nn.init.normal_(net.weight)
        evaluation = Evaluation({"val_f1": MulticlassF1Score(num_classes=3, average="macro")}, default_loss, CPU)
        scores = evaluation(net, ctx.data.val, ctx)
        x, y = ctx.data.val
        with torch.no_grad():
            predictions = net(x).argmax(1)
            whole_set_loss = float(nn.functional.cross_entropy(net(x), y))
        results[rank] = {
            "train": train,
            "val": val,
            "sum": float(total),
            "ddp": type(model).__name__,
            "scores": scores,
            "predictions": predictions.tolist(),
            "targets": y.tolist(),
            "loss": whole_set_loss,
        }
    finally:
        dist.destroy_process_group()


def test_two_ranks_share_the_data_sum_exactly_and_torchmetrics_f1_matches_sklearn():
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_two_ranks, args=(free_port(), results), nprocs=2, join=True)
        zero, one = dict(results[0]), dict(results[1])
    # Training: disjoint shares of equal length (DistributedSampler pads by repeating samples).
    assert len(zero["train"]) == len(one["train"]) == 12 and set(zero["train"]) | set(one["train"]) == set(range(N))
    # Evaluation: every sample exactly once over both ranks, none repeated.
    assert sorted(zero["val"] + one["val"]) == list(range(N))
    assert zero["sum"] == one["sum"] == 3.0
    assert zero["ddp"] == "DistributedDataParallel"
    assert zero["scores"] == one["scores"]  # every rank reports the same, whole-set values
    expected_f1 = f1_score(zero["targets"], zero["predictions"], average="macro")
    assert zero["scores"]["val_f1"] == pytest.approx(expected_f1, abs=1e-6)
    assert zero["scores"]["val_loss"] == pytest.approx(zero["loss"], rel=1e-6)  # batch means weighted, summed


@pytest.mark.slow  # a fresh interpreter: this session has imported Ray long ago
def test_the_loop_and_everything_it_calls_import_without_ray():
    """Ray belongs to the layer that runs trials: the loop must run where torch runs and Ray does not
    (a GPU machine without Ray, a test). `sys.modules["ray"] = None` makes any import of Ray fail.
    Every module of tuner.training, tuner.models and tuner.data, and tuner's public names' package."""
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import importlib, pkgutil, tuner, tuner.training, tuner.models, tuner.data\n"
        "for package in (tuner.training, tuner.models, tuner.data):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(module.name)\n"
        "from tuner.models import mlp, cnn, resnet18\nfrom tuner.data import digits, mnist, Splits\n"
        "print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def reference_batches(split, batch_size: int, seed: int, epoch: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """What a DataLoader over the split gives with the seeded sampler the context has always used."""
    sampler = DistributedSampler(range(len(split[1])), num_replicas=1, rank=0, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    return list(DataLoader(TensorDataset(*split), batch_size=batch_size, sampler=sampler))


def test_tensor_batches_are_the_dataloaders_for_a_seed_in_order_and_content_every_epoch():
    ctx = context(seed=7)
    for epoch in (1, 2):
        ours, theirs = list(ctx.batches(ctx.data.train, 5)), reference_batches(ctx.data.train, 5, 7, epoch)
        assert len(ours) == len(theirs) == 5
        for (x, y), (x_ref, y_ref) in zip(ours, theirs):
            assert torch.equal(x, x_ref) and torch.equal(y, y_ref)
        ctx.report({"val": 1.0})


class Copies(TorchDispatchMode):
    """Counts the tensor copies between devices that run under it, and records where batches live."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default):
            self.count += 1
        return func(*args, **kwargs)


def test_a_tensor_split_is_moved_to_the_device_once_per_trial_not_once_per_batch():
    # The "meta" device stands in for a GPU: tensors move there by a real copy, counted by the mode.
    meta = torch.device("meta")
    data = splits()
    ctx = TrialContext(
        config=ReadTrackingConfig({}),
        setup=LoopSetup(epochs=3, seed=0, device=meta, parallel="ddp"),
        data=data,
        trial_id="t",
        report=lambda metrics, checkpoint: None,
    )
    with Copies() as copies:
        batches = [batch for _ in range(3) for batch in ctx.batches(data.train, 4)]
        batches += list(ctx.batches(data.train, 4, shuffle=False))
    assert len(batches) == 3 * 6 + 6 and all(x.device == meta and y.device == meta for x, y in batches)
    assert copies.count == 2  # x and y, once; every batch after is cut on the device
    ctx.close()
    assert ctx._resident == {}
