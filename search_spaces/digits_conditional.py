"""Conditional hyperparameters: momentum only with sgd, beta2 only with adam, and `layers` deciding how
many of width_1..width_3 there are (docs/space-modules.md, "Conditional hyperparameters"). A key whose condition does
not hold is not in the trial's config at all: no searcher spends trials on it, the code never sees it,
and the report leaves its cell empty.
"""

import torch
from ray import tune
from torch import nn

dataset = "digits"


def model(config):  # width_2 and width_3 are in the config only when `layers` uses them
    widths = [64] + [config[f"width_{i}"] for i in range(1, config["layers"] + 1)]
    hidden = [layer for a, b in zip(widths, widths[1:]) for layer in (nn.Linear(a, b), nn.ReLU())]
    return nn.Sequential(nn.Flatten(), *hidden, nn.Linear(widths[-1], 10))


def optimizer(config, params):  # momentum only with sgd, beta2 only with adam
    if config["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=config["lr"], momentum=config["momentum"])
    return torch.optim.Adam(params, lr=config["lr"], betas=(0.9, config["beta2"]))


metric, mode = "val_acc", "max"
search = "optuna"
num_samples = 12
param_space = {
    "optimizer": tune.choice(["sgd", "adam"]),
    "lr": tune.loguniform(1e-3, 1e-1),
    "momentum": tune.uniform(0.5, 0.99),
    "beta2": tune.uniform(0.9, 0.9999),
    "layers": tune.choice([1, 2, 3]),
    "width_1": tune.choice([32, 64, 128]),
    "width_2": tune.choice([32, 64, 128]),
    "width_3": tune.choice([32, 64, 128]),
}
conditions = {
    "momentum": {"optimizer": "sgd"},  # searched only when optimizer is sgd
    "beta2": {"optimizer": "adam"},
    "width_2": {"layers": [2, 3]},  # a list: when layers is any of these
    "width_3": {"layers": 3},
}
