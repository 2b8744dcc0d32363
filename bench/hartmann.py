"""A multi-fidelity Hartmann-6 function: an exact, millisecond stand-in for a training run, so that
searchers and schedulers can be compared over many seeds (bench/synthetic_search.py).

The Hartmann-6 function (Hartmann 1973; constants as in Surjanovic & Bingham's Virtual Library of
Simulation Experiments, https://www.sfu.ca/~ssurjano/hart6.html) on [0, 1]^6, with the fidelity term of
the "augmented Hartmann" of Kandasamy et al. 2017 ("Multi-fidelity Bayesian Optimisation with Continuous
Approximations", as in BoTorch's AugmentedHartmann): the first coefficient alpha_1 is lowered by
0.1 * (1 - s) at fidelity s in [0, 1], so a low-fidelity value is a biased, cheaper view of the full one.

    H(x, s) = -(alpha_1 - 0.1 (1 - s)) exp(-sum_j A_1j (x_j - P_1j)^2)
              - sum_{i=2..4} alpha_i exp(-sum_j A_ij (x_j - P_ij)^2)

The global minimum at s = 1 is H(x*) = -3.32237 at x* = (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
Here a trial's epoch e of E is fidelity s = e / E, and it costs one trial-epoch.
"""

import numpy as np

ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
A = np.array(
    [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ]
)
P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)
MINIMIZER = np.array([0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573])
MINIMUM = -3.32237


def hartmann6(x: np.ndarray, fidelity: float = 1.0) -> float:
    """H(x, s) above; x in [0, 1]^6, fidelity s in [0, 1] (1: the true function)."""
    x = np.asarray(x, dtype=float)
    if x.shape != (6,) or not 0.0 <= fidelity <= 1.0:
        raise ValueError(f"hartmann6 takes 6 coordinates and a fidelity in [0, 1], got {x.shape} and {fidelity}")
    alpha = ALPHA.copy()
    alpha[0] -= 0.1 * (1.0 - fidelity)
    return float(-np.sum(alpha * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))
