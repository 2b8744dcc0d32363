"""Pareto fronts of several objectives: non-dominated sorting, used by the report to rank trials and by
the Pareto ASHA scheduler to decide at each rung. Plain numpy, no Ray.

Values are oriented first (`oriented`): every column becomes higher-is-better, and a missing value
(NaN) the worst possible in its objective.
"""

from collections.abc import Sequence

import numpy as np


def oriented(values: np.ndarray | Sequence[Sequence[float]], modes: Sequence[str]) -> np.ndarray:
    """`values` (one row per point, one column per objective) with every column higher-is-better:
    `min` columns negated, NaN as -inf."""
    array = np.asarray(values, dtype=float).reshape(-1, len(modes))
    signs = np.array([1.0 if mode == "max" else -1.0 for mode in modes])
    flipped = array * signs
    return np.where(np.isnan(flipped), -np.inf, flipped)


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """`a` is at least as good as `b` in every objective and better in one (oriented values)."""
    return bool(np.all(a >= b) and np.any(a > b))


def front_ranks(points: np.ndarray) -> np.ndarray:
    """Each point's front, 1 for the non-dominated ones, 2 for those dominated only by front 1, ...
    (`points` oriented). Equal points share a front."""
    points = np.asarray(points, dtype=float)
    ranks = np.zeros(len(points), dtype=int)
    remaining = np.arange(len(points))
    front = 1
    while remaining.size:
        sub = points[remaining]
        at_least = (sub[:, None, :] >= sub[None, :, :]).all(axis=-1)  # [j, i]: j >= i everywhere
        better = (sub[:, None, :] > sub[None, :, :]).any(axis=-1)  # [j, i]: j > i somewhere
        dominated = (at_least & better).any(axis=0)
        ranks[remaining[~dominated]] = front
        remaining = remaining[dominated]
        front += 1
    return ranks


def keeps(points: np.ndarray, index: int, reduction_factor: float) -> bool:
    """At a rung of successive halving, whether the point at `index` goes on: fewer than 1/rf of the
    rung's points lie on fronts before its own. A point on the first front always goes on, so a trial
    is stopped only when others dominate it; with one objective this is ASHA's top 1/rf."""
    ranks = front_ranks(points)
    ahead = int(np.sum(ranks < ranks[index]))
    return ahead < len(points) / reduction_factor


def hypervolume_2d(points: np.ndarray, reference: Sequence[float]) -> float:
    """The area that points (oriented, higher-is-better) dominate above `reference` (oriented the same
    way, worse than every point that counts): the usual quality of a found 2-D front."""
    ref = np.asarray(reference, dtype=float)
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    points = points[np.all(points > ref, axis=1)]
    if not len(points):
        return 0.0
    points = points[np.argsort(-points[:, 0])]  # best first objective first
    area, best_second = 0.0, ref[1]
    for first, second in points:
        if second > best_second:
            area += (first - ref[0]) * (second - best_second)
            best_second = second
    return float(area)
