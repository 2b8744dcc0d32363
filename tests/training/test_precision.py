"""The `precision` setting made concrete: what each name selects on a GPU and on the CPU, TF32 set for a
loop and put back after, and fp16's loss scaling through `ctx.train_step` and `ctx.step`. The scaling
runs here on the CPU for real (torch's GradScaler and fp16 autocast work on the CPU too), with the
choice a GPU would make; what needs CUDA is in tests/training/test_gpu_data_precision.py."""

import logging

import pytest
import torch
from torch import nn

from tuner.data.splits import Splits
from tuner.settings.experiment import PRECISIONS
from tuner.training import precision
from tuner.training.config_reads import ReadTrackingConfig
from tuner.training.context import LoopSetup, TrialContext
from tuner.training.losses import default_loss
from tuner.training.trial import Parts, run_trial_loop

CPU = torch.device("cpu")


def data() -> Splits:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(256, 4, generator=generator)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return Splits((x[:192], y[:192]), (x[192:], y[192:]))


def test_every_declared_precision_has_a_meaning_and_auto_is_tf32_without_autocast():
    assert set(precision.MODES) | {"auto"} == set(PRECISIONS)
    assert precision.MODES[precision.AUTO] == precision.Precision("tf32", None, tf32=True)
    assert precision.MODES["fp32"].tf32 is False and precision.MODES["fp32"].autocast_dtype is None
    assert precision.MODES["bf16"].autocast_dtype == torch.bfloat16 and not precision.MODES["bf16"].scales_loss
    assert precision.MODES["fp16"].autocast_dtype == torch.float16 and precision.MODES["fp16"].scales_loss


def test_on_the_cpu_every_precision_is_fp32_and_a_gpu_only_one_says_so_in_one_line(caplog):
    for name in PRECISIONS:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=precision.__name__):
            assert precision.resolve(name, CPU) is precision.FP32
        said = [record.getMessage() for record in caplog.records]
        notice = f"precision {name}: this trial has no GPU, so it trains in fp32"
        assert said == ([] if name in ("auto", "fp32") else [notice])


def test_tf32_is_set_for_the_loop_and_put_back_after():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    for mode, inside in (("tf32", (True, True)), ("fp32", (False, False)), ("bf16", saved)):
        with precision.MODES[mode].flags():
            assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == inside
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == saved


def gpu_choice(monkeypatch) -> None:
    """The choice a GPU would make for each name, so fp16's scaling runs here on the CPU."""
    monkeypatch.setattr(
        precision, "resolve", lambda name, device: precision.MODES[precision.AUTO if name == "auto" else name]
    )


def context(name: str) -> TrialContext:
    return TrialContext(
        config=ReadTrackingConfig({}),
        setup=LoopSetup(epochs=1, seed=0, device=CPU, parallel="ddp", precision=name),
        data=data(),
        trial_id="t",
        report=lambda metrics, checkpoint: None,
    )


def steps(ctx: TrialContext, count: int = 5) -> tuple[list[float], nn.Module]:
    torch.manual_seed(0)
    model = ctx.prepare_model(nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for x, y in list(ctx.batches(ctx.data.train, 64, shuffle=False))[:count]:
        optimizer.zero_grad()
        loss = ctx.train_step(model, x, y, default_loss)
        ctx.step(optimizer)
        losses.append(float(loss.detach()))
    return losses, model


def test_fp16_scales_the_loss_for_backward_and_steps_with_unscaled_gradients(monkeypatch):
    gpu_choice(monkeypatch)
    ctx = context("fp16")
    try:
        assert ctx._loss_scaling is not None and ctx._loss_scaling.scaler.get_scale() == 65536.0
        fp16_losses, fp16_model = steps(ctx)
    finally:
        ctx.close()
    fp32_losses, fp32_model = steps(context("fp32"))
    # The loss the step returns is the true one, and the weights moved as fp32's did: with gradients
    # 65536 times too large, lr 0.5 would have thrown them far off.
    assert fp16_losses == pytest.approx(fp32_losses, rel=1e-2)
    assert torch.allclose(fp16_model.weight, fp32_model.weight, atol=1e-2)


def test_fp16_refuses_a_plain_optimizer_step_with_a_clear_message_and_lets_go_of_its_hook(monkeypatch):
    gpu_choice(monkeypatch)
    ctx = context("fp16")
    model = ctx.prepare_model(nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = next(iter(ctx.batches(ctx.data.train, 8)))
    ctx.train_step(model, x, y, default_loss)
    with pytest.raises(RuntimeError, match=r"step with ctx.step\(optimizer\) instead"):
        optimizer.step()
    ctx.close()
    optimizer.step()  # the hook is gone with the context


def test_tuners_own_loop_trains_under_every_precision(monkeypatch):
    gpu_choice(monkeypatch)
    for name in PRECISIONS:
        reports = []
        run_trial_loop(
            Parts.of(model=lambda config: nn.Linear(4, 2)),
            {"lr": 0.1, "batch_size": 32},
            LoopSetup(epochs=2, seed=0, device=CPU, parallel="ddp", precision=name),
            data=data(),
            trial_id=name,
            report=lambda metrics, checkpoint, reports=reports: reports.append(metrics),
        )
        assert len(reports) == 2 and reports[1]["train_loss"] < reports[0]["train_loss"], (name, reports)


def test_each_report_says_what_the_trial_trained_in():
    reports = []
    ctx = TrialContext(
        config=ReadTrackingConfig({}),
        setup=LoopSetup(epochs=1, seed=0, device=CPU, parallel="ddp", precision="bf16"),
        data=data(),
        trial_id="t",
        report=lambda metrics, checkpoint: reports.append(metrics),
    )
    ctx.report({"val": 1.0})
    assert reports[0]["precision"] == "fp32"  # bf16 asked for, on the CPU
