"""nn.DataParallel: one process scatters each batch over the trial's GPUs and gathers the outputs.

PyTorch recommends DDP instead (one process per GPU, no per-step scatter of the model); this exists
so a user can measure the difference on their own model (`bench/parallel.py`). It needs CUDA: the
command line refuses it on a machine without GPUs before any trial starts.
"""

import torch
from torch import nn

from tuner.training.parallel.strategy import Strategy


class DataParallelStrategy(Strategy):
    def prepare(self, model: nn.Module) -> nn.Module:
        model = model.to(self.device)
        if self.device.type != "cuda":
            raise RuntimeError(
                "parallel = 'dp' runs nn.DataParallel over GPUs, and this trial has none; "
                "use parallel = 'ddp' with workers = N"
            )
        if torch.cuda.device_count() < 2:
            return model  # one GPU: DataParallel would only add its scatter and gather
        return nn.DataParallel(model)

    def unwrap(self, model: nn.Module) -> nn.Module:
        return model.module if isinstance(model, nn.DataParallel) else model
