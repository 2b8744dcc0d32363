"""torchvision's ResNet-18 (1-channel, small-image stem) on FashionMNIST from a local root:
DIR/FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte. Meant for a GPU, or DDP on
several CPU workers (--workers N)."""

from ray import tune

model = "resnet18"
dataset = "fashion_mnist"
metric = "val_acc"
mode = "max"
epochs = 5
num_samples = 4

param_space = {
    "optimizer": tune.grid_search(["sgd", "adamw"]),
    "lr": tune.loguniform(1e-3, 1e-1),
    "weight_decay": tune.loguniform(1e-5, 1e-3),
    "batch_size": 128,
}
