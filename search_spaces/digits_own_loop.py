"""Your own training loop: `train_loop(config, ctx)` owns the epochs; tuner provides the context.

For code that does not fit one model, one loss and one optimizer (several optimizers, GANs, custom
schedules, gradient accumulation). The same function runs in-process for one worker and on every Ray
Train worker under DDP (`workers = 2`): `ctx` gives this rank's device and data, DDP wrapping, sums
across ranks, the checkpoint to resume from (this trial's own, or a PBT donor's) and `report`. The loop
never calls Ray itself. Here: a CNN on the bundled digits with gradient accumulation and a cosine
learning-rate schedule, exact validation accuracy over all ranks, a checkpoint every epoch.
"""

import math

import torch
import torch.nn.functional as F
from ray import tune
from torch import nn

from tuner.data import digits
from tuner.training.optimizers import load_optimizer_state

dataset = digits  # the shipped loader: ctx.data is its (train, val)


def make_net(width: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(width * 64, 10))


def train_loop(config, ctx):
    train, val = ctx.data
    net = make_net(config["width"]).to(ctx.device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
    state = ctx.restore()
    if state is not None:
        net.load_state_dict(state["net"])
        load_optimizer_state(optimizer, state["optimizer"])  # keeps this config's lr (PBT may have changed it)
    model = ctx.prepare_model(net)  # DDP-wrapped when workers > 1

    steps = config["accumulate"]
    for epoch in range(ctx.start_epoch, ctx.epochs + 1):
        for group in optimizer.param_groups:  # cosine decay over the epochs, from this config's lr
            group["lr"] = config["lr"] * 0.5 * (1 + math.cos(math.pi * (epoch - 1) / ctx.epochs))
        model.train()
        for step, (x, y) in enumerate(ctx.batches(train, config["batch_size"])):
            loss = F.cross_entropy(model(x), y) / steps
            loss.backward()
            if (step + 1) % steps == 0:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)

        net.eval()  # the unwrapped net: ranks may hold different numbers of validation batches
        correct = torch.zeros(2, device=ctx.device)
        with torch.no_grad():
            for x, y in ctx.batches(val, 512, shuffle=False):
                correct += torch.tensor([(net(x).argmax(1) == y).sum().item(), len(y)], device=ctx.device)
        right, seen = ctx.all_reduce(correct).tolist()
        ctx.report({"val_acc": right / seen}, checkpoint={"net": net.state_dict(), "optimizer": optimizer.state_dict()})


metric = "val_acc"
mode = "max"
epochs = 8
num_samples = 2

param_space = {
    "lr": tune.grid_search([1e-3, 1e-2]),
    "width": tune.choice([8, 16]),
    "weight_decay": tune.loguniform(1e-5, 1e-2),
    "accumulate": tune.choice([1, 2]),
    "batch_size": 32,
}
