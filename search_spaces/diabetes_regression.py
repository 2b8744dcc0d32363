"""Regression with your own model, data and metrics: scikit-learn's bundled diabetes set (442 patients,
10 baseline measurements, disease progression a year later; real data, no download).

Float targets make tuner's loop use mean squared error. RMSE is no per-sample mean, so it comes from a
torchmetrics metric, which is exact over the whole validation set (and across DDP ranks); MAE is a
per-sample mean, so a plain function of each batch is exact too.
"""

import torch
from ray import tune
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from torch import nn
from torchmetrics import MeanSquaredError

TARGET_SCALE = 100.0  # targets run from 25 to 346: trained in hundreds, reported in the original units


def dataset():
    x, y = load_diabetes(return_X_y=True)  # features come centred and scaled
    x_train, x_val, y_train, y_val = train_test_split(x, y / TARGET_SCALE, test_size=0.25, random_state=0)
    as_tensors = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    return (as_tensors(x_train), as_tensors(y_train).unsqueeze(1)), (as_tensors(x_val), as_tensors(y_val).unsqueeze(1))


def model(config):
    return nn.Sequential(
        nn.Linear(10, config["width"]), nn.ReLU(), nn.Dropout(config["dropout"]), nn.Linear(config["width"], 1)
    )


class RMSE(MeanSquaredError):
    """Root mean squared error in the targets' original units."""

    def compute(self):
        return super().compute().sqrt() * TARGET_SCALE


metrics = {
    "val_rmse": RMSE(),
    "val_mae": lambda outputs, targets: (outputs - targets).abs().mean() * TARGET_SCALE,
}
metric = "val_rmse"
mode = "min"
epochs = 40
num_samples = 8
search = "random"

param_space = {
    "lr": tune.loguniform(1e-3, 3e-2),
    "width": tune.choice([16, 64, 128]),
    "dropout": tune.uniform(0.0, 0.3),
    "batch_size": tune.choice([16, 32]),
}
