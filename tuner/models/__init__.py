"""Models by name. Each builder takes the input shape, class count and the trial's hyperparameters."""

MODELS: dict[str, str] = {
    "mlp": "tuner.models.mlp:mlp",
    "cnn": "tuner.models.cnn:cnn",
    "resnet18": "tuner.models.resnet:resnet18",
}
