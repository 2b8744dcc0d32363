"""The multi-objective benchmark's problem (bench/zdt.py) against its known Pareto front."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))  # bench/ holds scripts, not a package
from zdt import DIMENSIONS, distance_to_front, inverted_generational_distance, true_front, true_hypervolume, zdt1

from tuner.search import pareto


def test_the_pareto_optimal_set_lies_on_the_published_front():
    for f1 in (0.0, 0.25, 0.5, 1.0):
        x = np.zeros(DIMENSIONS)
        x[0] = f1
        assert zdt1(x) == pytest.approx((f1, 1 - np.sqrt(f1)))
    assert distance_to_front(true_front(7)).max() < 1e-3


def test_no_point_of_the_space_lies_beyond_the_front():
    rng = np.random.default_rng(0)
    values = np.array([zdt1(x) for x in rng.uniform(0, 1, size=(5000, DIMENSIONS))])
    assert (values[:, 1] >= 1 - np.sqrt(values[:, 0]) - 1e-12).all()  # g >= 1 only lifts f2
    assert values[:, 1].max() <= 10  # so the bench's reference point (1.1, 11) counts every trial


def test_the_true_fronts_hypervolume_matches_its_closed_form_and_distances_vanish_on_it():
    front = true_front(20001)
    area = pareto.hypervolume_2d(pareto.oriented(front, ["min", "min"]), [-1.1, -11.0])
    assert area == pytest.approx(true_hypervolume((1.1, 11.0)), abs=1e-3)
    assert true_hypervolume((1.1, 1.1)) == pytest.approx(0.1 + 2 / 3 + 0.11)
    assert inverted_generational_distance(true_front(201)) == pytest.approx(0.0, abs=1e-12)
    assert inverted_generational_distance(np.array([[0.0, 1.0]])) > 0.5  # one end of the front is far from it
