"""ZDT1 (Zitzler, Deb & Thiele 2000, "Comparison of Multiobjective Evolutionary Algorithms: Empirical
Results", Evolutionary Computation 8(2)): two objectives to minimize over x in [0, 1]^n with a known,
convex Pareto front, a millisecond stand-in for a trade-off such as accuracy against latency
(bench/multi_objective.py).

    f1(x) = x_1
    g(x)  = 1 + 9 / (n - 1) * sum_{i=2..n} x_i
    f2(x) = g(x) * (1 - sqrt(f1(x) / g(x)))

The Pareto-optimal set is x_2 = ... = x_n = 0 (g = 1), where f2 = 1 - sqrt(f1) for f1 in [0, 1].
"""

import numpy as np

DIMENSIONS = 6  # as the Hartmann-6 bench: a space the size of a small model's hyperparameters


def zdt1(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    f1 = float(x[0])
    g = 1.0 + 9.0 / (len(x) - 1) * float(np.sum(x[1:]))
    return f1, g * (1.0 - np.sqrt(f1 / g))


def true_front(points: int = 1001) -> np.ndarray:
    """The Pareto front sampled evenly in f1: rows (f1, 1 - sqrt(f1))."""
    f1 = np.linspace(0.0, 1.0, points)
    return np.column_stack([f1, 1.0 - np.sqrt(f1)])


def true_hypervolume(reference: tuple[float, float]) -> float:
    """The area the true front dominates below `reference` (r1, r2 >= 1), in closed form: the integral
    over f1 in [0, 1] of r2 - (1 - sqrt(f1)), plus the strip f1 in [1, r1] of height r2."""
    r1, r2 = reference
    return (r2 - 1.0) + 2.0 / 3.0 + (r1 - 1.0) * r2


def distance_to_front(points: np.ndarray, front: np.ndarray | None = None) -> np.ndarray:
    """Each (f1, f2) point's Euclidean distance to the nearest point of the sampled true front."""
    front = true_front() if front is None else front
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    return np.sqrt(((points[:, None, :] - front[None, :, :]) ** 2).sum(axis=-1)).min(axis=1)


def inverted_generational_distance(found: np.ndarray, front: np.ndarray | None = None) -> float:
    """IGD: the mean distance from each point of the true front to the nearest found point, which is
    small only when the found front is both close to the true one and spread along all of it."""
    front = true_front(201) if front is None else front
    found = np.asarray(found, dtype=float).reshape(-1, 2)
    return float(np.sqrt(((front[:, None, :] - found[None, :, :]) ** 2).sum(axis=-1)).min(axis=1).mean())
