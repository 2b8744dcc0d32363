"""Data parallelism over processes: every rank holds the whole model and its shard of each batch, and
DistributedDataParallel averages the gradients (gloo on CPU, NCCL on GPU)."""

from torch import nn

from tuner.training.parallel.strategy import Strategy


class DDPStrategy(Strategy):
    def prepare(self, model: nn.Module) -> nn.Module:
        model = model.to(self.device)
        device_ids = [self.device] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=device_ids)

    def unwrap(self, model: nn.Module) -> nn.Module:
        return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
