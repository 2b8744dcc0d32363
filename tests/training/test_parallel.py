"""The parallel strategies (`tuner/training/parallel/`) at the torch level, on two gloo ranks started with
torch.multiprocessing: what Ray Train does for a multi-worker trial, minus Ray.

Each strategy runs tuner's own loop (`run_trial_loop`, the code every trial runs) on one model and one
dataset, and each does one process's arithmetic, so its reports must agree with one process's to float
rounding: ddp and fsdp (the ranks' shares of a global batch are the batch one process takes, and the
gradients are averaged), a 2-stage pipeline (every stage reads the whole batch; micro-batch gradients
are scaled to the batch's). And for each strategy a
trial restored from its epoch-1 checkpoint must report what the uninterrupted trial reported for
epoch 2: the checkpoint holds the whole model and optimizer state, gathered from shards or stages.

The ranks train on the CPU wherever they run, and never touch CUDA: on a GPU host (`bench/gpu_check.sh`
runs this file there) torch defaults collectives to the GPU whenever it sees one, which is how FSDP's
default mesh once put gloo ranks of a CPU trial on cuda:0. So this file needs no Ray, only torch."""

import os
import socket
from contextlib import nullcontext

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torchvision.models import ResNet

from tuner.data.splits import Splits
from tuner.errors import TunerError
from tuner.models import small_image_resnet18
from tuner.training import precision
from tuner.training.context import LoopSetup, load_checkpoint
from tuner.training.parallel import strategy
from tuner.training.parallel.pipeline import PipelineStages, local_devices, pipeline_layers, split
from tuner.training.trial import Parts, run_trial_loop

CPU = torch.device("cpu")
CONFIG = {"lr": 0.01, "batch_size": 32}
EPOCHS = 2
# Sums over shards or micro-batches in another order: equal to float32 rounding, not bit for bit.
CLOSE = {"rel": 1e-4, "abs": 1e-5}


def data() -> Splits:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(230, 8, generator=generator)  # 230: no multiple of the ranks or the batch
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    return Splits((x[:180], y[:180]), (x[180:], y[180:]))


def model(config, splits):
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))


def trial(parallel: str, restored=None) -> list[tuple[dict, dict | None]]:
    """The reports of one trial on this process (and its process group, if any)."""
    reports: list[tuple[dict, dict | None]] = []

    def report(metrics, checkpoint_dir):
        reports.append((metrics, load_checkpoint(checkpoint_dir, CPU) if checkpoint_dir else None))

    run_trial_loop(
        Parts.of(model=model),
        CONFIG,
        LoopSetup(epochs=EPOCHS, seed=3, device=CPU, parallel=parallel),
        data=data(),
        trial_id="t",
        report=report,
        restored=restored,
    )
    return reports


def scores(reports) -> list[dict[str, float]]:
    return [{key: metrics[key] for key in ("train_loss", "val_loss", "val_acc")} for metrics, _ in reports]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def devices_after_a_step(parallel: str, rank: int) -> dict:
    """Where one CPU rank's model of `parallel` keeps everything after a training step: the device types
    of its parameters, gradients, buffers and (FSDP) its mesh."""
    torch.manual_seed(0)
    chosen = strategy(parallel, rank=rank, world_size=2, device=CPU)
    net = chosen.prepare(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3)))
    x, y = data().train
    chosen.train_step(net, x[:32], y[:32], nn.functional.cross_entropy, torch.autocast("cpu", enabled=False))
    tensors = [*net.parameters(), *net.buffers(), *(p.grad for p in net.parameters() if p.grad is not None)]
    meshes = {p.device_mesh.device_type for p in net.parameters() if hasattr(p, "device_mesh")}
    return {"tensors": {t.device.type for t in tensors}, "meshes": meshes, "count": len(tensors)}


def pipeline_weights_after_steps(rank: int, scaled: bool) -> list[torch.Tensor] | str:
    """This stage's weights after three steps of a 2-stage pipeline, its loss scaled as fp16 scales it
    (precision.LossScaling: torch's sharded GradScaler, unscaling before each step) or not at all; or the
    error a step raised. On the CPU nothing overflows and the scale is a power of two, so both ways must
    give the same weights: the earlier stage unscales the gradients the last stage scaled."""
    torch.manual_seed(0)
    chosen = strategy("pipeline", rank=rank, world_size=2, device=CPU)
    net = chosen.prepare(model(CONFIG, None))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
    scaling = precision.LossScaling(CPU, distributed=True) if scaled else None
    x, y = data().train
    try:
        for step in range(3):
            batch = slice(32 * step, 32 * (step + 1))
            optimizer.zero_grad(set_to_none=True)
            loss_fn = scaling.scaled(nn.functional.cross_entropy, []) if scaling else nn.functional.cross_entropy
            chosen.train_step(net, x[batch], y[batch], loss_fn, nullcontext())
            if scaling:
                scaling.step(optimizer)
            else:
                optimizer.step()
    except Exception as error:  # reported, so that the other checks of this rank still run
        return f"{type(error).__name__}: {error}"
    finally:
        if scaling:
            scaling.close()
    return [p.detach().clone() for p in net.parameters()]


def fsdp_mesh_is_the_ranks_group_where_torch_sees_a_gpu(rank: int) -> bool:
    """Whether FSDP's mesh over these gloo ranks is their own group when torch reports a GPU, as on the GPU
    machine (reported here only for the mesh's construction, which reads it). A new group there would send
    CUDA collectives to NCCL, which refuses two ranks on one GPU."""
    chosen = strategy("fsdp", rank=rank, world_size=2, device=CPU)
    available = torch.cuda.is_available
    torch.cuda.is_available = lambda: True  # type: ignore[assignment]
    try:
        mesh = chosen.mesh()
    finally:
        torch.cuda.is_available = available  # type: ignore[assignment]
    return mesh.get_group() is dist.group.WORLD


def _ranks(rank: int, port: int, results: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        out = {}
        for parallel in ("ddp", "fsdp", "pipeline"):
            reports = trial(parallel)
            dist.broadcast_object_list(checkpoint := [reports[0][1]], src=0)  # rank 0's epoch-1 checkpoint
            resumed = trial(parallel, restored=checkpoint[0])
            out[parallel] = {
                "scores": scores(reports),
                "resumed": scores(resumed),
                "world_size": reports[0][0]["world_size"],
                "epochs": [m["epoch"] for m, _ in resumed],
                "costs": [(m["params"], m["latency_ms"]) for m, _ in reports + resumed],
            }
        # The shipped small-image ResNet in two pipeline stages: outputs equal the unsplit model's.
        torch.manual_seed(0)
        resnet = small_image_resnet18(3, num_classes=10).eval()
        stage = split(pipeline_layers(resnet), 2)[rank]
        x = torch.randn(6, 3, 16, 16, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            piped = PipelineStages(stage, rank, 2, CPU).eval()(x)
            out["resnet"] = None if piped is None else (piped - resnet(x)).abs().max().item()
        out["devices"] = {parallel: devices_after_a_step(parallel, rank) for parallel in ("ddp", "fsdp", "pipeline")}
        out["fsdp mesh, torch seeing a GPU"] = fsdp_mesh_is_the_ranks_group_where_torch_sees_a_gpu(rank)
        out["fp16 pipeline"] = {scaled: pipeline_weights_after_steps(rank, scaled) for scaled in (False, True)}
        # Last: after every trial and step above, none of which may have started CUDA.
        out["cuda_initialized"] = torch.cuda.is_initialized()
        out["gpu_visible"] = torch.cuda.is_available()
        results[rank] = out
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_ranks() -> dict[int, dict]:
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_ranks, args=(free_port(), results), nprocs=2, join=True)
        return {rank: dict(results[rank]) for rank in (0, 1)}


def assert_close(actual: list[dict], expected: list[dict]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got == pytest.approx(want, **CLOSE)


@pytest.fixture(scope="module")
def one_process() -> list[dict[str, float]]:
    torch.set_num_threads(1)
    reports = scores(trial("ddp"))  # one process: the model unwrapped
    assert reports[1]["train_loss"] < reports[0]["train_loss"]  # it learns
    return reports


@pytest.mark.parametrize("parallel", ["ddp", "fsdp", "pipeline"])
def test_two_ranks_train_exactly_as_one_process(two_ranks, one_process, parallel):
    assert two_ranks[0][parallel]["world_size"] == 2
    assert_close(two_ranks[0][parallel]["scores"], one_process)
    assert two_ranks[0][parallel]["scores"] == two_ranks[1][parallel]["scores"]  # every rank reports the same


@pytest.mark.parametrize("parallel", ["ddp", "fsdp", "pipeline"])
def test_a_trial_restored_from_its_checkpoint_continues_as_if_uninterrupted(two_ranks, parallel):
    result = two_ranks[0][parallel]
    assert result["epochs"] == [2]
    assert_close(result["resumed"], result["scores"][1:])


@pytest.mark.parametrize("parallel", ["ddp", "fsdp", "pipeline"])
def test_every_rank_reports_the_whole_models_params_and_the_slowest_ranks_latency(two_ranks, parallel):
    whole = sum(p.numel() for p in model(CONFIG, data()).parameters())
    costs = two_ranks[0][parallel]["costs"]
    assert costs == two_ranks[1][parallel]["costs"]  # the same on both ranks: one number per trial
    assert {params for params, _ in costs} == {whole}  # not a shard's or a stage's
    latencies = [latency for _, latency in costs]
    assert latencies[0] == latencies[1] and 0 < latencies[0] < 1000  # measured once per run, reported each epoch
    assert latencies[2] > 0  # the resumed run measures again


def test_a_resnet_split_into_two_pipeline_stages_computes_the_unsplit_model(two_ranks):
    assert two_ranks[0]["resnet"] is None  # the first stage has no outputs
    assert two_ranks[1]["resnet"] < 1e-5


@pytest.mark.parametrize("parallel", ["ddp", "fsdp", "pipeline"])
def test_cpu_ranks_keep_everything_on_the_cpu(two_ranks, parallel):
    """On a GPU host (where it counts: `gpu_visible`) and here: the CPU trial's ranks hold every
    parameter, gradient, buffer and mesh on the CPU."""
    for rank in (0, 1):
        found = two_ranks[rank]["devices"][parallel]
        assert found["count"] > 0 and found["tensors"] == {"cpu"}, found
        assert found["meshes"] == ({"cpu"} if parallel == "fsdp" else set()), found


def test_every_pipeline_stage_unscales_fp16s_scaled_gradients(two_ranks):
    """fp16 over pipeline stages: only the last stage computes (and scales) the loss, yet every stage's
    gradients arrive scaled, so each must unscale them by the same scale before its step."""
    for rank in (0, 1):
        plain, scaled = two_ranks[rank]["fp16 pipeline"][False], two_ranks[rank]["fp16 pipeline"][True]
        assert not isinstance(scaled, str), f"stage {rank}: {scaled}"
        assert len(scaled) == len(plain) > 0
        for got, want in zip(scaled, plain):
            assert torch.allclose(got, want, rtol=1e-6, atol=1e-7), f"stage {rank}: {(got - want).abs().max()}"


def test_fsdp_over_gloo_ranks_keeps_their_group_even_where_torch_sees_a_gpu(two_ranks):
    assert two_ranks[0]["fsdp mesh, torch seeing a GPU"] and two_ranks[1]["fsdp mesh, torch seeing a GPU"]


def test_cpu_ranks_never_start_cuda(two_ranks):
    for rank in (0, 1):
        assert two_ranks[rank]["cuda_initialized"] is False, (
            f"rank {rank} of a CPU trial initialised CUDA (GPU visible: {two_ranks[rank]['gpu_visible']})"
        )


def test_where_models_split():
    resnet = small_image_resnet18(3, num_classes=10)
    layers = pipeline_layers(nn.Sequential(nn.Identity(), resnet))
    assert len(layers) == 7  # the Identity, then the ResNet's stem, four residual layers and head
    assert [len(stage) for stage in split(layers, 2)] == [3, 4]
    assert isinstance(resnet, ResNet) and len(pipeline_layers(resnet)) == 6

    class Declared(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)
            self.pipeline_layers = [self.a, self.b]

    declared = Declared()
    assert pipeline_layers(declared) == [declared.a, declared.b]
    with pytest.raises(TunerError, match="build it as an nn.Sequential, or give it a `pipeline_layers` attribute"):
        pipeline_layers(nn.Linear(2, 2))
    with pytest.raises(TunerError, match="with 3 workers needs at least 3 layers"):
        split([nn.Linear(2, 2), nn.ReLU()], 3)


def test_one_process_runs_the_pipeline_as_one_stage_of_all_its_layers(one_process):
    """What the smoke step runs for a pipeline space: the split layers, composed, train like the model."""
    assert_close(scores(trial("pipeline")), one_process)


def test_one_process_splits_its_stage_over_devices_and_computes_the_model():
    """The seed's model split (stages on cuda:0 and cuda:1 in one process, `tests/training/test_gpu.py`),
    here with both parts on the CPU: the same outputs and gradients as the unsplit model, and the state
    dict of the unsplit one, so a checkpoint loads on any number of GPUs."""
    torch.manual_seed(0)
    whole = model({}, None)
    torch.manual_seed(0)
    parts = PipelineStages(model({}, None), 0, 1, CPU, [CPU, CPU])
    assert parts._starts == [0, 2] and local_devices(CPU, 5) == [CPU]
    x, y = data().train[0][:16], data().train[1][:16]
    nn.functional.cross_entropy(whole(x), y).backward()
    nn.functional.cross_entropy(parts(x), y).backward()
    assert torch.equal(parts(x), whole(x))
    for (name, got), (_, want) in zip(parts.stage.named_parameters(), whole.named_parameters()):
        assert torch.equal(got.grad, want.grad), name
    assert parts.stage.state_dict().keys() == whole.state_dict().keys()
