import textwrap

import pytest
from ray import tune

from tuner import space as spaces
from tuner.errors import TunerError
from tuner.overrides import parse_set, parse_sets

VALID = """
from ray import tune
model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
param_space = {"lr": tune.grid_search([0.001, 0.01]), "hidden": tune.choice([16, 32])}
"""


def write(tmp_path, body, name="my_space"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


@pytest.mark.parametrize("name", spaces.available())
def test_every_shipped_space_loads(name):
    space = spaces.load(name)
    assert space.name == name and space.param_space


def test_shipped_spaces_include_the_issue_list():
    assert {"digits_mlp", "digits_cnn", "mnist_cnn", "fashion_mnist_resnet", "cifar10_resnet"} <= set(spaces.available())


def test_load_by_path_uses_defaults(tmp_path):
    space = spaces.load(write(tmp_path, VALID))
    assert (space.name, space.model, space.epochs, space.num_samples, space.workers) == ("my_space", "mlp", 5, 1, 1)
    assert space.param_space["lr"] == tune.grid_search([0.001, 0.01])


def test_unknown_name_lists_available():
    with pytest.raises(TunerError, match="unknown space 'nope'; available: .*digits_mlp"):
        spaces.load("nope")


def test_missing_path():
    with pytest.raises(TunerError, match="does not exist"):
        spaces.load("elsewhere/none.py")


@pytest.mark.parametrize(
    "change,message",
    [
        ('model = "transformer"', "model 'transformer' is unknown"),
        ('dataset = "imagenet"', "dataset 'imagenet' is unknown"),
        ('metric = "f1"', "metric 'f1' is not reported"),
        ('mode = "maximize"', "mode must be 'min' or 'max'"),
        ("epochs = -1", "epochs must be an integer >= 1"),
        ("num_samples = 0", "num_samples must be an integer >= 1"),
        ('workers = "2"', "workers must be an integer >= 1"),
        ("cpus_per_worker = 0", "cpus_per_worker must be a number > 0"),
        ("param_space = [1, 2]", "param_space must be a dict"),
        ('param_space = {"learning_rate": 0.1}', "'learning_rate' is not a hyperparameter"),
        ('param_space = {"lr": tune.grid_search([])}', "empty grid"),
        ('param_space = {"optimizer": tune.choice(["adam", "lion"])}', "optimizer must be one of adam, adamw, sgd, not 'lion'"),
        ('param_space = {"batch_size": 0}', "batch_size must be an integer >= 1, not 0"),
        ('param_space = {"batch_size": 32.5}', "batch_size must be an integer >= 1, not 32.5"),
        ('param_space = {"lr": tune.grid_search([0.1, -0.1])}', "lr must be a number > 0, not -0.1"),
        ('param_space = {"dropout": tune.uniform(0.0, 2.0)}', "dropout must be a number in \\[0, 1\\], not 2.0"),
        ('param_space = {"hidden": tune.randint(0, 64)}', "hidden must be an integer >= 1, not 0"),
        ('param_space = {"lr": "fast"}', "lr must be a number > 0, not 'fast'"),
    ],
)
def test_invalid_fields(tmp_path, change, message):
    with pytest.raises(TunerError, match=message):
        spaces.load(write(tmp_path, VALID + change + "\n"))


def test_missing_fields_are_listed(tmp_path):
    with pytest.raises(TunerError, match="missing metric, mode, param_space"):
        spaces.load(write(tmp_path, 'model = "mlp"\ndataset = "digits"\n'))


def test_syntax_and_import_errors(tmp_path):
    with pytest.raises(TunerError, match="syntax error at line 2"):
        spaces.load(write(tmp_path, "x = 1\ny = (\n", name="broken"))
    with pytest.raises(TunerError, match="failed to import: ModuleNotFoundError"):
        spaces.load(write(tmp_path, "import not_a_module_anywhere\n", name="imports"))


def test_overrides_are_validated(tmp_path):
    space = spaces.load(write(tmp_path, VALID))
    changed = space.with_overrides(fixed={"lr": 0.5}, epochs=3, workers=2)
    assert changed.param_space["lr"] == 0.5 and changed.epochs == 3 and changed.workers == 2
    assert space.param_space["lr"] != 0.5  # the loaded space is left as it was
    with pytest.raises(TunerError, match="optimizer must be one of adam, adamw, sgd, not 'rmsprop'"):
        space.with_overrides(fixed={"optimizer": "rmsprop"})
    with pytest.raises(TunerError, match="batch_size must be an integer >= 1, not 0"):
        space.with_overrides(fixed={"batch_size": 0})


def test_parse_set():
    assert parse_set("lr=0.01") == ("lr", 0.01)
    assert parse_set("batch_size = 32") == ("batch_size", 32)
    assert parse_set("optimizer=sgd") == ("optimizer", "sgd")
    assert parse_set("optimizer='adamw'") == ("optimizer", "adamw")
    assert parse_sets(["lr=1e-3", "hidden=8"]) == {"lr": 1e-3, "hidden": 8}


@pytest.mark.parametrize(
    "item,message",
    [("lr", "not key=value"), ("=3", "not key=value"), ("lr=", "not key=value"),
     ("learning_rate=0.1", "unknown hyperparameter"), ("lr=[0.1, 0.2]", "expects one value")],
)
def test_parse_set_errors(item, message):
    with pytest.raises(TunerError, match=message):
        parse_set(item)
