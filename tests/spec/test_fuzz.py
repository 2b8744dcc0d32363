"""Fuzzing the two parsers of user input, the space-module validator and `--set`, and the command lines of
every command: whatever they are given, they either accept it or raise TunerError (the CLI's one clear
line), never anything else."""

import contextlib
import io
import math
import os
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ray import tune

from tuner import cli
from tuner.errors import TunerError
from tuner.ray_compat.private import first_variant
from tuner.search.plan import plan
from tuner.settings import GROUPS, RunOptions
from tuner.spec import space as spaces
from tuner.spec.hyperparameters import KNOWN, problem
from tuner.spec.overrides import parse_set

ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.complex_numbers(),
    st.lists(st.integers(), max_size=3),
    st.binary(max_size=4),
)


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
        "gpus_per_worker": _value([0, 1, "auto"]),
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
    assert isinstance(space.budget.epochs, int) and space.budget.epochs >= 1 and isinstance(space.param_space, dict)
    assert all(isinstance(key, str) and key for key in space.param_space)
    # The shipped model and tuner's loop read these names: every fixed value they may get passed its rule.
    for key, value in space.param_space.items():
        if key in KNOWN and not isinstance(value, (dict, tune.search.sample.Domain)):
            assert problem(key, value) is None


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.tuples(st.sampled_from(sorted(KNOWN)), st.text(max_size=20)).map("=".join),
        st.tuples(st.sampled_from(sorted(KNOWN)), ANYTHING.map(repr)).map("=".join),
    )
)
def test_set_parser_accepts_or_explains(item):
    try:
        key, value = parse_set(item)
    except TunerError as err:
        assert str(err).startswith("--set") and "\n" not in str(err)
        return
    assert key == item.partition("=")[0].strip() and key
    assert not isinstance(value, (list, tuple, dict, set))  # one value, never a search axis


# An independent oracle for the space's scalar fields: what each accepts, written from the options table
# (docs/getting-started.md) rather than from the validator, so that a value the validator wrongly accepts
# or refuses (True as a count, an infinite CPU share) fails here.
def _whole_at_least(minimum: int, maximum: int = 100_000):
    return lambda v: type(v) is int and minimum <= v <= maximum


def _finite(v) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _seconds(v: str) -> float:
    """A duration's seconds, as the options table writes the units (1h30m, 90s, 90)."""
    total = 0.0
    for number, unit in re.findall(r"(\d+)([hms]?)", v.lower()):
        total += int(number) * {"h": 3600, "m": 60}.get(unit, 1)
    return total


SCALAR_ORACLE = {
    "epochs": _whole_at_least(1),  # the docs: 1 to 100000, num_samples and max_concurrent likewise
    "num_samples": _whole_at_least(1),
    "max_concurrent": lambda v: v is None or _whole_at_least(1)(v),
    # A share of a node's CPUs or GPUs: Ray's unit, 0.0001, at the least (GPUs: or none).
    "cpus_per_worker": lambda v: _finite(v) and 0.0001 <= v <= 4096,
    "gpus_per_worker": lambda v: v == "auto" or (_finite(v) and (v == 0 or 0.0001 <= v <= 64)),
    "search": lambda v: v in ("grid", "random", "optuna", "hyperopt", "bohb", "auto"),
    "scheduler": lambda v: v in ("fifo", "asha", "hyperband", "median", "pbt"),
    "mode": lambda v: v in ("min", "max"),
    "metric": lambda v: type(v) is str and bool(v.strip()) and v.splitlines() == [v],
    "time_budget": lambda v: (
        v is None
        or (
            type(v) is str
            # 1H30M as 1h30m: a unit's case says nothing the lower case does not
            and re.fullmatch(r"\s*(\d+h)?(\d+m)?(\d+s?)?\s*", v, re.IGNORECASE) is not None
            and any(c in "123456789" for c in v)
            and _seconds(v) <= 365 * 24 * 3600  # a year at most
        )
    ),
    "stop": lambda v: (
        v is None or (type(v) is str and re.fullmatch(r"\s*\w+\s*(>=|<=|>|<)\s*-?\d+(\.\d+)?\s*", v) is not None)
    ),
}
VALID_MODULE = {
    "model": "mlp",
    "dataset": "digits",
    "metric": "val_acc",
    "mode": "max",
    "param_space": {"lr": tune.loguniform(1e-3, 1e-1), "batch_size": 32},
}
SCALAR_VALUES = st.one_of(
    ANYTHING,
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 5),
    st.sampled_from(
        [
            "grid",
            "random",
            "auto",
            "asha",
            "pbt",
            "min",
            "max",
            "30s",
            "1h30m",
            "0s",
            "val_acc>=0.9",
            "val_acc >= -1",
            "val_acc=>1",
            " ",
            "",
            "90",
            "8760h",
            "8760h1s",
            "100000",
            "100001",
        ]
    ),
    st.sampled_from([100_000, 100_001, 4096, 4096.5, 64, 65, 10**12, 0.0001, 0.00009, 1e-5]),
)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(sorted(SCALAR_ORACLE)), SCALAR_VALUES)
def test_space_validator_accepts_exactly_what_the_oracle_accepts(field, value):
    module = SimpleNamespace(**{**VALID_MODULE, field: value})
    try:
        spaces.from_module(module, name="fuzzed", source="fuzzed.py")
        accepted = True
    except TunerError as err:
        assert str(err).strip() and "\n" not in str(err)
        accepted = False
    assert accepted == SCALAR_ORACLE[field](value), f"{field}={value!r}: validator accepted={accepted}"


# Every option of `tuner run`, fuzzed through everything that happens before Ray starts: argparse,
# the space it builds, the first config the smoke step takes (seeded) and the searcher (seeded). Each
# either works or ends as argparse's or tuner's one line; `--seed 99999999999` once ended in numpy's
# traceback, which this finds.
CLI_VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-10, 2**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(
        [
            "grid",
            "random",
            "optuna",
            "auto",
            "asha",
            "pbt",
            "ddp",
            "dp",
            "30m",
            "val_acc>=0.9",
            "4294967296",
            "4294967295",
            "0",
            "-1",
            "1e3",
            " 7",
            "--",  # Python < 3.12's argparse drops it from `--flag=--`, leaving a list (tuner/cli.py)
        ]
    ),
)
VALUED_FLAGS = [
    flag
    for cls in [*GROUPS.values(), RunOptions]
    for dest, flag, declared in cli._setting_options(cls)
    if not declared.argparse and dest not in ("data_dir", "storage_path", "name")
]  # a directory, a path or a name: other tests
WHOLE_FLAGS = {
    "--num-samples": 1,
    "--epochs": 1,
    "--workers": 1,
    "--max-concurrent": 1,
    "--seed": 0,
    "--max-failures": 0,
}


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(VALUED_FLAGS), CLI_VALUES)
def test_every_run_option_works_or_is_one_line(flag, text):
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = cli._parser().parse_args(["run", f"{flag}={text}"])
    except SystemExit as exit_:
        assert exit_.code == cli.USAGE_ERROR
        message = stderr.getvalue().strip()
        assert message.startswith("tuner: error:") and "\n" not in message
        return
    if flag in WHOLE_FLAGS:  # accepted: a whole number in its range, as written
        value = getattr(args, flag[2:].replace("-", "_"))
        assert type(value) is int and value >= WHOLE_FLAGS[flag] and int(text) == value
    seed = RunOptions(**cli._given(args, RunOptions)).seed
    assert 0 <= seed <= 2**32 - 1
    try:
        space = cli._space(args)
        first_variant(space.param_space, seed)
        plan(space, seed).search_algorithm(max_concurrent=2)
    except TunerError as err:
        assert str(err).strip() and "\n" not in str(err)


# `tuner report`, `resume`, `list` and `submit`, given anything on their command lines, in a directory
# holding what a user may point them at by mistake (no experiment among them, so that nothing reaches
# Ray: `resume` of a real one would start it; the damaged experiments are fuzzed in
# tests/e2e/test_end_to_end.py, beside a real one). Each ends in exit 0, or one line and exit 2.
PLACES = ["empty_dir", "a_file", "not_an_experiment", "nested", "absent", ".", "..", "tuner_results"]
COMMAND_WORDS = st.one_of(
    st.sampled_from(
        [
            *PLACES,
            "--top",
            "--format",
            "--html",
            "--trial",
            "md",
            "csv",
            "json",
            "xml",
            "--address",
            "http://127.0.0.1:1",  # nothing listens there: refused at once
            "127.0.0.1:1",
            "--storage-path",
            "/abs/results",
            "--data-dir",
            "--num-samples",
            "--follow",
            "--set",
            "lr=0.1",
            "--epochs",
            "-v",
            "-q",
            "--",
            "-",
            "0",
            "-1",
            "1e9",
            str(10**15),
            "00001",
        ]
    ),
    # No ':' (a URI such as s3://... would reach for the network) and no NUL (no path holds one).
    st.text(alphabet=st.characters(blacklist_characters=":\0", blacklist_categories=("Cs",)), max_size=10),
)


@contextlib.contextmanager
def _in(folder):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory):
    """A working directory of what a user may point the commands at by mistake."""
    root = tmp_path_factory.mktemp("mistakes")
    (root / "empty_dir").mkdir()
    (root / "a_file").write_text("not an experiment\n")
    (root / "not_an_experiment").mkdir()
    (root / "not_an_experiment" / "trials.csv").write_text("rank,trial_id\n1,x\n")
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "tuner_results" / "empty").mkdir(parents=True)
    return root


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["report", "resume", "list", "submit"]), st.lists(COMMAND_WORDS, max_size=5))
@example("report", ["~0"])  # found by this test: a `~user` with no such user made pathlib raise
@example("list", ["~no_such_user_here/results"])
def test_every_command_ends_cleanly_whatever_its_arguments(mistakes, monkeypatch, command, words):
    for name in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS", "TUNER_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    out, err = io.StringIO(), io.StringIO()
    with _in(mistakes), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([command, *words])
        except SystemExit as exit_:  # argparse's own exit on a malformed option
            code = exit_.code
    lines = err.getvalue().strip().splitlines()
    assert code in (0, cli.USAGE_ERROR), (code, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue() + out.getvalue()
    if code == cli.USAGE_ERROR:
        assert len(lines) == 1 and lines[0].startswith("tuner: error: "), lines
