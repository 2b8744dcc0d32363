"""Fuzzing the two parsers of user input, the space-module validator and `--set`: whatever they are
given, they either accept it or raise TunerError (the CLI's one clear line), never anything else."""

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st
from ray import tune

from tuner import space as spaces
from tuner.errors import TunerError
from tuner.hyperparameters import KNOWN, problem
from tuner.overrides import parse_set

ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                     st.complex_numbers(), st.lists(st.integers(), max_size=3), st.binary(max_size=4))


def _value(valid: list) -> st.SearchStrategy:
    return st.one_of(st.sampled_from(valid), ANYTHING)


PARAM_VALUES = st.one_of(
    ANYTHING,
    st.lists(ANYTHING, max_size=3).map(tune.grid_search),
    st.lists(ANYTHING, min_size=1, max_size=3).map(tune.choice),
    st.tuples(st.floats(-10, 10), st.floats(-10, 10)).map(lambda b: tune.uniform(*b)),
    st.tuples(st.integers(-5, 5), st.integers(-5, 5)).filter(lambda b: b[0] < b[1]).map(lambda b: tune.randint(*b)),
    st.dictionaries(st.text(max_size=5), ANYTHING, max_size=2),
)
PARAM_SPACES = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(sorted(KNOWN)), st.text(max_size=8)), PARAM_VALUES, max_size=4),
    ANYTHING,
)
MODULES = st.fixed_dictionaries(
    {
        "model": _value(["mlp", "cnn", "resnet18"]),
        "dataset": _value(["digits", "mnist"]),
        "metric": _value(["val_acc", "val_loss"]),
        "mode": _value(["max", "min"]),
        "param_space": PARAM_SPACES,
    },
    optional={
        "epochs": _value([1, 5]),
        "num_samples": _value([1, 3]),
        "workers": _value([1, 2]),
        "cpus_per_worker": _value([0.5, 1]),
        "gpus_per_worker": _value([0, 1]),
        "max_concurrent": _value([None, 2]),
        "search": _value(["grid", "random", "optuna", "hyperopt", "bohb"]),
        "scheduler": _value(["fifo", "asha", "hyperband", "median", "pbt"]),
        "time_budget": _value([None, "30s", "1h30m"]),
        "stop": _value([None, "val_acc>=0.9"]),
    },
)


@settings(max_examples=400, deadline=None)
@given(MODULES)
def test_space_validator_accepts_or_explains(fields):
    try:
        space = spaces.from_module(SimpleNamespace(**fields), name="fuzzed", source="fuzzed.py")
    except TunerError as err:
        assert str(err).strip() and "\n" not in str(err)
        return
    # Whatever was accepted is something a run can use.
    assert isinstance(space.epochs, int) and space.epochs >= 1 and isinstance(space.param_space, dict)
    assert all(isinstance(key, str) and key for key in space.param_space)
    # The shipped model and tuner's loop read these names: every fixed value they may get passed its rule.
    for key, value in space.param_space.items():
        if key in KNOWN and not isinstance(value, (dict, tune.search.sample.Domain)):
            assert problem(key, value) is None


@settings(max_examples=600, deadline=None)
@given(st.one_of(
    st.text(max_size=30),
    st.tuples(st.sampled_from(sorted(KNOWN)), st.text(max_size=20)).map("=".join),
    st.tuples(st.sampled_from(sorted(KNOWN)), ANYTHING.map(repr)).map("=".join),
))
def test_set_parser_accepts_or_explains(item):
    try:
        key, value = parse_set(item)
    except TunerError as err:
        assert str(err).startswith("--set") and "\n" not in str(err)
        return
    assert key == item.partition("=")[0].strip() and key
    assert not isinstance(value, (list, tuple, dict, set))  # one value, never a search axis
