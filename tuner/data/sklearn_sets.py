"""scikit-learn's bundled 8x8 handwritten digits: 1,797 real images, no download."""

import numpy as np
import torch

from tuner.data.splits import Splits

# The split is fixed, not seeded per trial, so every trial is scored on the same validation images.
SPLIT_SEED = 0


def digits() -> Splits:
    """(x, y) pairs of float images (N, 1, 8, 8) in [0, 1] and int64 labels 0-9; 80 % train, 20 % val."""
    # Imported here, not with the module: scikit-learn takes ~1 s to import, and a trial process
    # unpickles this function (it names the space's dataset) while its data comes from the driver.
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    x = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_train, x_val, y_train, y_val = train_test_split(
        x, labels, test_size=0.2, stratify=labels, random_state=SPLIT_SEED
    )
    return Splits(
        (torch.from_numpy(x_train), torch.from_numpy(y_train).long()),
        (torch.from_numpy(x_val), torch.from_numpy(y_val).long()),
    )
