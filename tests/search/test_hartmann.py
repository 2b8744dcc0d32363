"""The synthetic benchmark's function (bench/hartmann.py) against its published values."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))  # bench/ holds scripts, not a package
from hartmann import MINIMIZER, MINIMUM, hartmann6


def test_the_published_minimum_at_the_published_minimizer():
    assert hartmann6(MINIMIZER) == pytest.approx(-3.32237, abs=1e-5)
    assert MINIMUM == -3.32237


def test_no_point_is_below_the_minimum_and_the_minimizer_is_a_local_minimum():
    rng = np.random.default_rng(0)
    values = [hartmann6(x) for x in rng.uniform(0, 1, size=(20000, 6))]
    assert min(values) > MINIMUM
    for step in rng.normal(0, 0.01, size=(200, 6)):
        assert hartmann6(np.clip(MINIMIZER + step, 0, 1)) > MINIMUM - 1e-5


def test_lower_fidelity_is_a_biased_view_that_converges_to_the_function():
    # Only alpha_1's term changes with fidelity: by 0.1 * (1 - s) times that term's exp factor, in [0, 0.1].
    rng = np.random.default_rng(1)
    for x in rng.uniform(0, 1, size=(100, 6)):
        full, half, none = hartmann6(x, 1.0), hartmann6(x, 0.5), hartmann6(x, 0.0)
        assert full <= half <= none <= full + 0.1
        assert none - full == pytest.approx(2 * (half - full))
    assert hartmann6(MINIMIZER, 0.0) > MINIMUM


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="6 coordinates and a fidelity in"):
        hartmann6(np.zeros(5))
    with pytest.raises(ValueError, match="fidelity in"):
        hartmann6(MINIMIZER, 1.5)
