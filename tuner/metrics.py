"""Metrics the training loop reports every epoch that a space may optimise."""

METRICS = ("val_acc", "val_loss", "train_loss")
