"""The CNN on MNIST, read from a local root: --data-dir DIR (or TUNER_DATA_DIR) holding
DIR/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte, torchvision's layout (no download)."""

from ray import tune

model = "cnn"
dataset = "mnist"
metric = "val_acc"
mode = "max"
epochs = 3
num_samples = 4

param_space = {
    "lr": tune.loguniform(3e-4, 3e-3),
    "channels": tune.choice([16, 32]),
    "hidden": tune.choice([64, 128]),
    "batch_size": tune.choice([64, 128]),
    "dropout": tune.uniform(0.0, 0.25),
}
