"""Your own model and data: an MLP on scikit-learn's bundled wine set (178 wines, 13 measurements, 3
cultivars; real data, no download). Copy this module to tune a model of your own.

`model(config)` builds the network from the trial's hyperparameters (any names you like: `width` and
`depth` here); `dataset()` returns (train, val) as (x, y) pairs. tuner's loop does the rest: the
optimizer from lr / weight_decay, cross-entropy for the integer labels, val_loss and val_acc.
"""

import torch
from ray import tune
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from torch import nn


def dataset():
    x, y = load_wine(return_X_y=True)
    x = (x - x.mean(axis=0)) / x.std(axis=0)  # the 13 measurements live on very different scales
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    return (torch.tensor(x_train, dtype=torch.float32), torch.tensor(y_train)), (
        torch.tensor(x_val, dtype=torch.float32),
        torch.tensor(y_val),
    )


def model(config):
    layers, width = [], 13
    for _ in range(config["depth"]):
        layers += [nn.Linear(width, config["width"]), nn.ReLU()]
        width = config["width"]
    return nn.Sequential(*layers, nn.Linear(width, 3))


metric = "val_loss"
mode = "min"
epochs = 30
num_samples = 6
search = "random"

param_space = {
    "lr": tune.loguniform(1e-3, 1e-1),
    "width": tune.choice([8, 16, 32]),
    "depth": tune.randint(1, 4),
    "weight_decay": tune.loguniform(1e-6, 1e-2),
    "batch_size": 32,
}
