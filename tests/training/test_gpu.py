"""The torch-level code on a GPU: tuner's loop with bf16 autocast and non-blocking copies, checkpoints
saved on the GPU and loaded with `map_location`, DDP and FSDP over NCCL (world size 1, the most one
GPU allows: two NCCL ranks on one GPU fail, ray-project/ray#48012), DDP, FSDP and pipeline over two
gloo ranks holding CUDA tensors on the one GPU (multi-rank GPU code where one GPU is lent), the
pipeline's stages (one process: on cuda:0 and cuda:1 with two GPUs, both on the one GPU otherwise),
and several trial processes sharing one GPU. Skipped without CUDA; `bench/gpu_check.sh` runs it on a GPU
machine, which may have torch alone (no Ray, no pytest): `python tests/training/test_gpu.py` runs it there."""

import os
import socket
import sys
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from tuner.data.splits import Splits
from tuner.training.context import CHECKPOINT_FILE, LoopSetup, load_checkpoint
from tuner.training.parallel import strategy
from tuner.training.parallel.ddp import DDPStrategy
from tuner.training.parallel.fsdp import FSDPStrategy
from tuner.training.parallel.pipeline import PipelineStages, split
from tuner.training.trial import Parts, run_trial_loop

try:
    import pytest

    pytestmark = pytest.mark.skipif(
        not torch.cuda.is_available(), reason="no CUDA device: bench/gpu_check.sh runs these on a GPU machine"
    )
except ImportError:  # the GPU machine may lack pytest: see __main__ below
    pass

CONFIG = {"lr": 0.01, "batch_size": 64}


def data() -> Splits:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1200, 3, 8, 8, generator=generator)
    y = (x[:, 0].mean((1, 2)) > 0).long() + (x[:, 1].mean((1, 2)) > 0).long()
    return Splits((x[:1000], y[:1000]), (x[1000:], y[1000:]))


def model(config):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64, 3)
    )


def trial(
    epochs: int = 3, restored=None, parallel: str = "ddp", precision: str = "auto"
) -> list[tuple[dict, dict | None]]:
    reports: list[tuple[dict, dict | None]] = []

    def report(metrics, checkpoint_dir):
        reports.append((metrics, load_checkpoint(checkpoint_dir, torch.device("cuda")) if checkpoint_dir else None))

    run_trial_loop(
        Parts.of(model=model),
        CONFIG,
        # A bare "cuda", as a user's code may pass: the context names the index torch's memory calls need.
        LoopSetup(epochs=epochs, seed=0, device=torch.device("cuda"), parallel=parallel, precision=precision),
        data=data(),
        trial_id="gpu",
        report=report,
        restored=restored,
    )
    return reports


def test_the_loop_trains_on_the_gpu_and_a_restored_trial_continues_the_same():
    reports = trial()
    losses = [metrics["train_loss"] for metrics, _ in reports]
    assert losses[-1] < losses[0] and reports[-1][0]["val_acc"] > 0.6, losses
    state = reports[0][1]
    assert next(iter(state["state"]["model"].values())).is_cuda  # loaded onto the GPU (map_location)
    # What the model costs, on the GPU: the latency's forwards synchronised, the peak from the allocator.
    whole = sum(p.numel() for p in model({}).parameters())
    assert {m["params"] for m, _ in reports} == {whole} and len({m["latency_ms"] for m, _ in reports}) == 1
    assert 0 < reports[0][0]["latency_ms"] < 1000 and 0 < reports[-1][0]["gpu_peak_gib"] < 10
    resumed = trial(restored=state)
    assert [m["epoch"] for m, _ in resumed] == [2, 3]
    # bf16 kernels on a GPU need not repeat bit for bit; the restored run follows the same path.
    for (got, _), (want, _) in zip(resumed, reports[1:]):
        assert abs(got["val_loss"] - want["val_loss"]) < 0.05 * want["val_loss"]


def test_a_checkpoint_saved_on_the_gpu_loads_on_the_cpu():
    state = trial(epochs=1)[0][1]
    with tempfile.TemporaryDirectory() as directory:
        torch.save(state, Path(directory) / CHECKPOINT_FILE)
        on_cpu = load_checkpoint(directory, torch.device("cpu"))
    assert all(not tensor.is_cuda for tensor in on_cpu["state"]["model"].values())


def test_dp_on_the_gpus_trains():
    reports = trial(epochs=2, parallel="dp")
    assert reports[-1][0]["train_loss"] < reports[0][0]["train_loss"]


def _nccl_rank(rank: int, port: int, results) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        device = torch.device("cuda", 0)
        x, y = data().train[0][:64].to(device), data().train[1][:64].to(device)
        for name, strategy in (("ddp", DDPStrategy), ("fsdp", FSDPStrategy)):
            torch.manual_seed(0)
            chosen = strategy(rank=0, world_size=1, device=device)
            net = chosen.prepare(model({}))
            optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
            loss = chosen.train_step(
                net, x, y, nn.functional.cross_entropy, torch.autocast("cuda", dtype=torch.bfloat16)
            )
            optimizer.step()
            state = chosen.get_state(net, optimizer)
            fresh = chosen.prepare(model({}))
            fresh_optimizer = torch.optim.Adam(fresh.parameters(), lr=0.01)
            chosen.set_state(fresh, fresh_optimizer, state)
            with torch.no_grad():
                same = torch.equal(chosen.evaluation_model(net.eval())(x), chosen.evaluation_model(fresh.eval())(x))
            results[name] = {"wrapped": type(net).__name__, "loss": float(loss), "restored_equal": same}
    finally:
        dist.destroy_process_group()


def test_ddp_and_fsdp_over_nccl_train_and_restore():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_nccl_rank, args=(port, results), nprocs=1, join=True)
        results = dict(results)
    assert results["ddp"]["wrapped"] == "DistributedDataParallel", results
    for name in ("ddp", "fsdp"):
        assert results[name]["restored_equal"] and results[name]["loss"] > 0, results


def test_pipeline_stages_on_the_gpu_compute_the_model():
    torch.manual_seed(0)
    net = model({}).cuda().eval()
    x = data().val[0][:32].cuda()
    stages = split(list(net), 2)
    with torch.no_grad():
        composed = PipelineStages(nn.Sequential(*stages), 0, 1, torch.device("cuda"))(x)
        assert torch.equal(composed, net(x))


def test_one_gpu_runs_both_pipeline_stages_of_one_process():
    """The seed's model split with its two devices the same GPU: a functional check of the placement."""
    torch.manual_seed(0)
    whole = model({}).cuda()
    torch.manual_seed(0)
    gpu = torch.device("cuda", 0)
    parts = PipelineStages(model({}), 0, 1, gpu, [gpu, gpu])
    x, y = data().train[0][:64].cuda(), data().train[1][:64].cuda()
    nn.functional.cross_entropy(whole(x), y).backward()
    nn.functional.cross_entropy(parts(x), y).backward()
    assert torch.allclose(parts(x), whole(x), atol=1e-5)
    for got, want in zip(parts.stage.parameters(), whole.parameters()):
        assert got.is_cuda and torch.allclose(got.grad, want.grad, atol=1e-5)


def test_a_pipeline_trial_with_two_gpus_puts_its_stages_on_cuda0_and_cuda1():
    if torch.cuda.device_count() < 2:
        if "pytest" in sys.modules:
            pytest.skip("needs 2 GPUs")
        return
    chosen = strategy("pipeline", rank=0, world_size=1, device=torch.device("cuda", 0))
    net = chosen.prepare(model({}))
    placed = [next(layer.parameters()).device.index for layer in net.stage if any(True for _ in layer.parameters())]
    assert placed == [0, 0, 1], placed  # conv, batch norm | linear: the first half on cuda:0
    reports = trial(epochs=2, parallel="pipeline")  # the loop, over both GPUs
    assert reports[-1][0]["train_loss"] < reports[0][0]["train_loss"]


def _gloo_rank(rank: int, port: int, parallel: str, precision: str, results) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        reports = trial(epochs=2, parallel=parallel, precision=precision)
        results[rank] = {
            "precision": reports[0][0]["precision"],
            "losses": [m["train_loss"] for m, _ in reports],
            "val_loss": [m["val_loss"] for m, _ in reports],
            "world_size": reports[0][0]["world_size"],
        }
    finally:
        dist.destroy_process_group()


def two_gloo_ranks_on_one_gpu(parallel: str, precision: str = "auto") -> None:
    """NCCL refuses two ranks on one GPU; gloo takes CUDA tensors, so the multi-rank code runs there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_gloo_rank, args=(port, parallel, precision, results), nprocs=2, join=True)
        found, other = dict(results[0]), dict(results[1])
    assert found["world_size"] == 2 and found["losses"][-1] < found["losses"][0], found
    assert found["precision"] == (precision if precision != "auto" else "tf32"), found
    assert found["val_loss"] == other["val_loss"]  # every rank reports the same


def test_ddp_over_two_gloo_ranks_on_one_gpu():
    two_gloo_ranks_on_one_gpu("ddp")


def test_fsdp_over_two_gloo_ranks_on_one_gpu():
    two_gloo_ranks_on_one_gpu("fsdp")


def test_pipeline_over_two_gloo_ranks_on_one_gpu():
    two_gloo_ranks_on_one_gpu("pipeline")


def test_pipeline_in_fp16_over_two_gloo_ranks_on_one_gpu():
    """Only the last stage scales a loss; the first unscales what reaches it by the same scale."""
    two_gloo_ranks_on_one_gpu("pipeline", "fp16")


def _packed_trial(index: int, results) -> None:
    results[index] = trial(epochs=2)[-1][0]["val_acc"]


def test_four_trials_share_one_gpu():
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_packed_trial, args=(results,), nprocs=4, join=True)
        accuracies = dict(results)
    assert len(accuracies) == 4 and min(accuracies.values()) > 0.5, accuracies
    # The same seed and config in each: the four trials computed (nearly) the same thing side by side.
    assert max(accuracies.values()) - min(accuracies.values()) < 0.05


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("tests/training/test_gpu.py: no CUDA device, nothing to run")
        sys.exit(0)
    failed = 0
    for name, test in [(n, f) for n, f in list(globals().items()) if n.startswith("test_") and callable(f)]:
        try:
            test()
            print(f"PASSED {name}", flush=True)
        except Exception as error:  # report every test, then fail the run
            failed += 1
            print(f"FAILED {name}: {type(error).__name__}: {error}", flush=True)
    sys.exit(1 if failed else 0)
