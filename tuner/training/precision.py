"""The arithmetic a trial trains in: the `precision` setting (tuner/settings/experiment.py) made concrete.

bf16 autocast used to be on for every GPU trial; on an H200 it was slower than fp32 with TF32
convolutions on the models people tune (0.80x on a small CNN, 0.81x on ResNet-50 at 64x64), so
`auto` is TF32 matmuls and convolutions without autocast (`bench/gpu_packing.py` compares the modes
side by side). On the CPU every mode is fp32: autocast there is bf16 on CPUs that lack fast bf16.

    fp32  full fp32: TF32 off for matmuls and cuDNN convolutions
    tf32  TF32 matmuls and convolutions (fp32 everywhere else), where the GPU has TF32 (Ampere on)
    bf16  bf16 autocast around the forward
    fp16  fp16 autocast, and a GradScaler that scales the loss so small gradients survive fp16; the
          loop then steps its optimizer with `ctx.step(optimizer)`
"""

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

log = logging.getLogger(__name__)
LossFn = Callable[[Any, Any], torch.Tensor]


@dataclass(frozen=True)
class Precision:
    """What one trial's process runs in: `name` (fp32, tf32, bf16 or fp16, never auto), autocast's dtype
    (None: no autocast) and whether TF32 is on (None: torch's own defaults are left alone)."""

    name: str
    autocast_dtype: torch.dtype | None = None
    tf32: bool | None = False

    @property
    def scales_loss(self) -> bool:
        return self.autocast_dtype == torch.float16

    def autocast(self, device: torch.device) -> AbstractContextManager[Any]:
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast(device.type, dtype=self.autocast_dtype)

    @contextmanager
    def flags(self) -> Iterator[None]:
        """TF32 set for the loop's duration, and put back after (the smoke step runs in the driver)."""
        if self.tf32 is None:
            yield
            return
        saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = self.tf32
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


FP32 = Precision("fp32")
MODES = {
    "fp32": FP32,
    "tf32": Precision("tf32", tf32=True),
    # Under autocast the matmuls run in bf16 or fp16; what it leaves in fp32 keeps torch's defaults.
    "bf16": Precision("bf16", torch.bfloat16, tf32=None),
    "fp16": Precision("fp16", torch.float16, tf32=None),
}
AUTO = "tf32"  # what auto means on a GPU, by the measurements in the module docstring


def resolve(requested: str, device: torch.device) -> Precision:
    """The precision a trial on `device` trains in when the experiment asks for `requested`."""
    if device.type != "cuda":
        if requested not in ("auto", "fp32"):
            log.warning("precision %s: this trial has no GPU, so it trains in fp32", requested)
        return FP32
    if requested == "bf16" and not torch.cuda.is_bf16_supported():
        log.warning("precision bf16: this GPU has no bf16, so the trial trains in fp32")
        return FP32
    return MODES[AUTO if requested == "auto" else requested]


class LossScaling:
    """fp16's GradScaler, applied through the loss function every strategy's step already calls: the
    strategy backpropagates the scaled loss, and `step` unscales the gradients and skips a step whose
    gradients overflowed. A process group of several ranks uses the sharded scaler, which agrees on
    skipping over all ranks (FSDP's and the pipeline's ranks hold different gradients)."""

    def __init__(self, device: torch.device, distributed: bool):
        if distributed:
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

            self.scaler: torch.amp.GradScaler = ShardedGradScaler(device.type)
        else:
            self.scaler = torch.amp.GradScaler(device.type)
        # The scale exists on every rank from the start, not only where a loss is scaled: a pipeline's
        # earlier stages compute no loss, yet receive gradients the last stage scaled, and unscale them
        # by this same starting scale (the sharded scaler's shared overflow check keeps them equal after).
        self.scaler.scale(torch.zeros((), device=device))
        self.pending = False  # a scaled backward ran, and its optimizer step has not
        self._stepping = False
        self._hook = register_optimizer_step_pre_hook(self._refuse_unscaled_step)

    def scaled(self, loss_fn: LossFn, unscaled: list[torch.Tensor]) -> LossFn:
        """`loss_fn` returning the scaled loss (for backward); the true losses are appended to `unscaled`."""

        def scaled_loss(outputs: Any, targets: Any) -> torch.Tensor:
            loss = loss_fn(outputs, targets)
            unscaled.append(loss)
            self.pending = True
            return self.scaler.scale(loss)

        return scaled_loss

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        self._stepping = True
        try:
            self.scaler.step(optimizer)
        finally:
            self._stepping = False
        self.scaler.update()
        self.pending = False

    def _refuse_unscaled_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self.pending and not self._stepping:
            raise RuntimeError(
                "precision fp16 scales the loss, so optimizer.step() would apply gradients 65536 times too "
                "large: step with ctx.step(optimizer) instead, or choose precision bf16 or tf32"
            )

    def close(self) -> None:
        self._hook.remove()
