"""torchvision's ResNet-18 (small-image stem) on CIFAR-10 from a local root: DIR/cifar-10-batches-py/
{data_batch_1..5, test_batch, batches.meta}, the python pickle release. Meant for GPUs:
one trial per GPU, or DDP across several (--workers N --gpus-per-worker 1)."""

from ray import tune

model = "resnet18"
dataset = "cifar10"
metric = "val_acc"
mode = "max"
epochs = 10
num_samples = 4
cpus_per_worker = 2

param_space = {
    "optimizer": "sgd",
    "momentum": 0.9,
    "lr": tune.loguniform(1e-2, 2e-1),
    "weight_decay": tune.loguniform(1e-4, 1e-3),
    "batch_size": tune.choice([128, 256]),
}
