"""The loss tuner's loop uses when a space module defines none, chosen by the targets' dtype.

Integer (or bool) targets are class labels: cross-entropy over one output per class, or binary
cross-entropy when the model gives one logit per sample. Float targets are values to regress: mean
squared error, with the outputs reshaped to the targets' shape when only the layout differs, since
MSE between (N, 1) and (N,) would broadcast to an (N, N) matrix and train on nonsense.
"""

import torch
import torch.nn.functional as F


def is_class_labels(targets: torch.Tensor) -> bool:
    return not (torch.is_floating_point(targets) or torch.is_complex(targets))


def one_logit_per_sample(outputs: torch.Tensor, targets: torch.Tensor) -> bool:
    return outputs.numel() == targets.numel()


def matched(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """`outputs` in the targets' shape when they hold as many numbers; otherwise a clear error."""
    if outputs.shape == targets.shape:
        return outputs
    if outputs.numel() != targets.numel():
        raise ValueError(
            f"the model's outputs have shape {tuple(outputs.shape)} but the targets {tuple(targets.shape)}: "
            "give the model one output per target value, or define a `loss` in the space module"
        )
    return outputs.reshape(targets.shape)


def default_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy for class labels (binary with one logit per sample), MSE for float targets."""
    if is_class_labels(targets):
        if one_logit_per_sample(outputs, targets):
            return F.binary_cross_entropy_with_logits(matched(outputs, targets), targets.float())
        return F.cross_entropy(outputs, targets.long())
    return F.mse_loss(matched(outputs, targets), targets)
