"""Default experiment: an MLP on scikit-learn's bundled 8x8 digits (real data, no download).

A 3-value learning-rate grid crossed with 3 random samples of width, batch size and weight decay:
9 trials, well under a minute of training on 2 cores.
"""

from ray import tune

model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 10
num_samples = 3  # random samples per grid point

param_space = {
    "lr": tune.grid_search([3e-4, 3e-3, 3e-2]),
    "hidden": tune.choice([32, 64, 128]),
    "batch_size": tune.choice([32, 64]),
    "weight_decay": tune.loguniform(1e-6, 1e-3),
}
