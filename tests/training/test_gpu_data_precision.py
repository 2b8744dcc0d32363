"""The data path and the precision modes on a GPU: tensor splits moved there once per trial and cut
there in the CPU's order, a split too big for its share fed from pinned memory, and what each
`precision` selects (TF32 flags, autocast's dtype, fp16's GradScaler). Skipped without CUDA;
`bench/gpu_check.sh` runs it on a GPU machine, which may lack pytest:
`python tests/training/test_gpu_data_precision.py` runs it there."""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from tuner.data.splits import Splits
from tuner.settings.experiment import PRECISIONS
from tuner.training import context as context_module
from tuner.training.batches import SlicedBatches
from tuner.training.config_reads import ReadTrackingConfig
from tuner.training.context import LoopSetup, TrialContext
from tuner.training.losses import default_loss
from tuner.training.trial import Parts, run_trial_loop

try:
    import pytest

    pytestmark = pytest.mark.skipif(
        not torch.cuda.is_available(), reason="no CUDA device: bench/gpu_check.sh runs these on a GPU machine"
    )
except ImportError:  # the GPU machine may lack pytest: see __main__ below
    pass

GPU, CPU = torch.device("cuda"), torch.device("cpu")


def data() -> Splits:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1000, 3, 8, 8, generator=generator)
    y = (x[:, 0].mean((1, 2)) > 0).long() + (x[:, 1].mean((1, 2)) > 0).long()
    return Splits((x[:800], y[:800]), (x[800:], y[800:]))


def model(config=None) -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 64, 3))


def context(device: torch.device, name: str = "auto", splits: Splits | None = None, seed: int = 0) -> TrialContext:
    return TrialContext(
        config=ReadTrackingConfig({}),
        setup=LoopSetup(epochs=3, seed=seed, device=device, parallel="ddp", precision=name),
        data=splits or data(),
        trial_id="gpu",
        report=lambda metrics, checkpoint: None,
    )


def epochs_of_batches(ctx: TrialContext, epochs: int = 2) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    seen = []
    for _ in range(epochs):
        seen.append(list(ctx.batches(ctx.data.train, 64)))
        ctx.report({"val": 1.0})
    return seen


def assert_same_batches(gpu_epochs, cpu_epochs) -> None:
    for gpu_batches, cpu_batches in zip(gpu_epochs, cpu_epochs, strict=True):
        assert len(gpu_batches) == len(cpu_batches)
        for (x, y), (x_cpu, y_cpu) in zip(gpu_batches, cpu_batches):
            assert x.device.type == "cuda" and y.device.type == "cuda"
            assert torch.equal(x.cpu(), x_cpu) and torch.equal(y.cpu(), y_cpu)


def test_a_tensor_split_lives_on_the_gpu_for_the_trial_and_gives_the_cpus_batches():
    splits = data()
    ctx = context(GPU, splits=splits, seed=5)
    gpu_epochs = epochs_of_batches(ctx)
    (x, y, x_there, y_there), *_ = ctx._resident.values()
    assert x is splits.train[0] and x_there.device.type == "cuda" and y_there.device.type == "cuda"
    assert_same_batches(gpu_epochs, epochs_of_batches(context(CPU, splits=splits, seed=5)))
    ctx.close()


def test_a_split_too_big_for_its_share_stays_on_the_host_and_comes_through_pinned_memory():
    splits = data()
    share = context_module.DEVICE_DATA_SHARE
    context_module.DEVICE_DATA_SHARE = 0.0  # nothing fits
    try:
        ctx = context(GPU, splits=splits, seed=5)
        gpu_epochs = epochs_of_batches(ctx)
        assert ctx._resident == {}
    finally:
        context_module.DEVICE_DATA_SHARE = share
    assert_same_batches(gpu_epochs, epochs_of_batches(context(CPU, splits=splits, seed=5)))
    x, y = next(iter(SlicedBatches(*splits.train, range(100), 16, pin=True)))
    assert x.is_pinned() and y.is_pinned() and torch.equal(x, splits.train[0][:16])


def forward_dtype(name: str) -> torch.dtype:
    ctx = context(GPU, name)
    net = ctx.prepare_model(model())
    dtypes = []
    net.register_forward_hook(lambda module, inputs, output: dtypes.append(output.dtype))
    x, y = next(iter(ctx.batches(ctx.data.train, 32)))
    ctx.train_step(net, x, y, default_loss)
    ctx.close()
    return dtypes[0]


def test_each_precision_selects_its_autocast():
    assert {name: forward_dtype(name) for name in PRECISIONS} == {
        "auto": torch.float32,  # measured faster than bf16 on small models: TF32, no autocast
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
    }


def test_tf32_is_on_for_auto_and_tf32_off_for_fp32_during_the_loop_and_put_back_after():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    for name, expected in (("auto", (True, True)), ("tf32", (True, True)), ("fp32", (False, False))):
        seen = []

        def loop(config, ctx, seen=seen):
            seen.append((torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32))
            ctx.report({"val": 1.0})

        run_trial_loop(
            Parts(train_loop=loop),
            {},
            LoopSetup(epochs=1, seed=0, device=GPU, parallel="ddp", precision=name),
            data=None,
            trial_id="gpu",
            report=lambda metrics, checkpoint: None,
        )
        assert seen == [expected], name
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == saved


def test_fp16_steps_through_a_grad_scaler_and_only_fp16_has_one():
    for name in PRECISIONS:
        ctx = context(GPU, name)
        scaling = ctx._loss_scaling
        assert (scaling is not None) == (name == "fp16"), name
        ctx.close()
    ctx = context(GPU, "fp16")
    assert ctx._loss_scaling is not None
    scaler = ctx._loss_scaling.scaler
    assert isinstance(scaler, torch.amp.GradScaler) and scaler.get_scale() == 65536.0
    net = ctx.prepare_model(model())
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = next(iter(ctx.batches(ctx.data.train, 64)))
    optimizer.zero_grad()
    loss = ctx.train_step(net, x, y, default_loss)
    assert loss is not None and float(loss.detach()) < 10  # the true loss, not 65536 times it
    ctx.step(optimizer)
    assert not ctx._loss_scaling.pending  # stepped through the scaler, which then updated its scale
    ctx.close()


def test_tuners_loop_learns_under_every_precision_on_the_gpu():
    for name in PRECISIONS:
        reports: list[dict] = []
        run_trial_loop(
            Parts.of(model=model),
            {"lr": 0.05, "batch_size": 64},
            LoopSetup(epochs=3, seed=0, device=GPU, parallel="ddp", precision=name),
            data=data(),
            trial_id=name,
            report=lambda metrics, checkpoint, reports=reports: reports.append(metrics),
        )
        assert reports[-1]["train_loss"] < reports[0]["train_loss"] and reports[-1]["val_acc"] > 0.5, (name, reports)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("tests/training/test_gpu_data_precision.py: no CUDA device, nothing to run")
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
