"""A small CNN on the bundled 8x8 digits: optimizer x learning rate grid, random width and dropout."""

from ray import tune

model = "cnn"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 10
num_samples = 2

param_space = {
    "optimizer": tune.grid_search(["adam", "sgd"]),
    "lr": tune.grid_search([1e-3, 1e-2]),
    "channels": tune.choice([8, 16, 32]),
    "hidden": tune.choice([64, 128]),
    "dropout": tune.uniform(0.0, 0.3),
    "batch_size": 64,
}
