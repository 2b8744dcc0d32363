from ray import tune

model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 2
param_space = {"lr": tune.grid_search([0.003, 0.03]), "hidden": 8, "batch_size": 64}
