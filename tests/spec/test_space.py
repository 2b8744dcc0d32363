import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from ray import tune

from tests.conftest import REPO
from tuner.errors import TunerError
from tuner.spec import space as spaces
from tuner.spec.overrides import parse_set, parse_sets
from tuner.spec.param_space import flat_keys

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
    assert {"digits_mlp", "digits_cnn", "mnist_cnn", "fashion_mnist_resnet", "cifar10_resnet"} <= set(
        spaces.available()
    )


def test_load_by_path_uses_defaults(tmp_path):
    space = spaces.load(write(tmp_path, VALID))
    assert (space.name, space.model, space.budget.epochs, space.budget.num_samples, space.resources.workers) == (
        "my_space",
        "mlp",
        5,
        1,
        1,
    )
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
        (
            'model = ["mlp"]',
            "model must be a shipped name \\(mlp, cnn, resnet18, resnet50\\) or a function model\\(config\\)",
        ),
        ("model = lambda: None", "model is <lambda>\\(\\); define it as model\\(config\\) or model\\(config, data\\)"),
        (
            "dataset = lambda config, extra: None",
            "dataset is <lambda>\\(config, extra\\); define it as dataset\\(\\) or",
        ),
        ("loss = 3", "loss must be a function loss\\(outputs, targets\\), not 3"),
        ("metrics = {'val_f1': 'f1'}", "metrics\\['val_f1'\\] must be a torchmetrics Metric or a function"),
        ("def train_loop(config, ctx): pass", "a train_loop trains its own model, so model would be ignored"),
        ('metric = ""', "metric must be a non-empty name, such as 'val_loss'"),
        ("max_concurrent = True", "max_concurrent must be an integer from 1 to 100000, not True"),
        ("cpus_per_worker = True", "cpus_per_worker must be a number from 0.0001 to 4096, not True"),
        ('pbt_mutable = ["lr", "ema_decay"]', "pbt_mutable names ema_decay, which param_space does not search over"),
        ('mode = "maximize"', "mode must be 'min' or 'max'"),
        ("epochs = -1", "epochs must be an integer from 1 to 100000"),
        ("num_samples = 0", "num_samples must be an integer from 1 to 100000"),
        ('workers = "2"', "workers must be an integer from 1 to 10000"),
        ("cpus_per_worker = 0", "cpus_per_worker must be a number from 0.0001 to 4096"),
        ("param_space = [1, 2]", "param_space must be a dict"),
        ("param_space = {3: 0.1}", "param_space keys are hyperparameter names; 3 is not a non-empty string"),
        ('param_space = {"lr": {"grid_search": [1], "x": 2}}', "mixes grid_search with other keys"),
        ('param_space = {"lr": tune.grid_search([])}', "empty grid"),
        (
            'param_space = {"optimizer": tune.choice(["adam", "lion"])}',
            "optimizer must be one of adam, adamw, sgd, not 'lion'",
        ),
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
    with pytest.raises(TunerError, match="missing metric, mode, param_space; see docs/space-modules.md"):
        spaces.load(write(tmp_path, 'model = "mlp"\ndataset = "digits"\n'))
    with pytest.raises(TunerError, match="missing metric, mode, param_space, model, dataset \\(or a train_loop"):
        spaces.load(write(tmp_path, "x = 1\n"))
    with pytest.raises(TunerError, match="missing dataset; see docs/space-modules.md"):
        spaces.load(write(tmp_path, VALID.replace('dataset = "digits"', "")))


def test_any_hyperparameter_name_and_nested_groups_are_accepted(tmp_path):
    """Names tuner's parts do not read are the space's own; their values are the space's business."""
    space = spaces.load(
        write(
            tmp_path,
            VALID.replace(
                '"hidden": tune.choice([16, 32])',
                '"learning_rate": 0.1, "net": {"width": tune.choice([8, 16]), "act": "relu"}',
            ),
        )
    )
    assert flat_keys(space.param_space) == ["learning_rate", "lr", "net/act", "net/width"]
    # A name a shipped part reads keeps its check (an own model reads it as it likes, below).
    with pytest.raises(TunerError, match="dropout must be a number in \\[0, 1\\], not 5"):
        spaces.load(write(tmp_path, VALID.replace('"hidden": tune.choice([16, 32])', '"dropout": 5'), name="x"))


def test_own_parts_skip_the_checks_of_the_parts_they_replace(tmp_path):
    own_model = VALID.replace('model = "mlp"', "def model(config): ...") + 'param_space["hidden"] = [64, 64]\n'
    assert spaces.load(write(tmp_path, own_model)).param_space["hidden"] == [64, 64]
    own_optimizer = VALID + 'def optimizer(config, params): ...\nparam_space["optimizer"] = "lion"\n'
    assert spaces.load(write(tmp_path, own_optimizer, name="b")).param_space["optimizer"] == "lion"
    own_loop = (
        'metric, mode = "score", "max"\ndef train_loop(config, ctx): ...\n'
        'param_space = {"batch_size": 0, "lr": -1, "seed": 3}\n'
    )
    assert spaces.load(write(tmp_path, own_loop, name="c")).dataset is None
    # every trial's seed, own loop or not
    with pytest.raises(TunerError, match="seed must be an integer from 0 to 4294967295"):
        spaces.load(write(tmp_path, own_loop.replace('"seed": 3', '"seed": -3'), name="d"))


def test_syntax_and_import_errors(tmp_path):
    with pytest.raises(TunerError, match="syntax error at line 2"):
        spaces.load(write(tmp_path, "x = 1\ny = (\n", name="broken"))
    with pytest.raises(TunerError, match="failed to import: ModuleNotFoundError"):
        spaces.load(write(tmp_path, "import not_a_module_anywhere\n", name="imports"))


def test_overrides_are_validated(tmp_path):
    space = spaces.load(write(tmp_path, VALID))
    changed = space.with_overrides(fixed={"lr": 0.5}, epochs=3, workers=2)
    assert changed.param_space["lr"] == 0.5 and changed.budget.epochs == 3 and changed.resources.workers == 2
    assert space.param_space["lr"] != 0.5  # the loaded space is left as it was
    with pytest.raises(TunerError, match="optimizer must be one of adam, adamw, sgd, not 'rmsprop'"):
        space.with_overrides(fixed={"optimizer": "rmsprop"})
    with pytest.raises(TunerError, match="batch_size must be an integer >= 1, not 0"):
        space.with_overrides(fixed={"batch_size": 0})
    assert space.with_overrides(fixed={"momentum": 0.5}).param_space["momentum"] == 0.5  # read by tuner's loop
    with pytest.raises(TunerError, match="--set learning_rate: not a key of the space's param_space \\(lr, hidden\\)"):
        space.with_overrides(fixed={"learning_rate": 0.5})


def test_parse_set():
    assert parse_set("lr=0.01") == ("lr", 0.01)
    assert parse_set("batch_size = 32") == ("batch_size", 32)
    assert parse_set("optimizer=sgd") == ("optimizer", "sgd")
    assert parse_set("optimizer='adamw'") == ("optimizer", "adamw")
    assert parse_sets(["lr=1e-3", "hidden=8"]) == {"lr": 1e-3, "hidden": 8}


@pytest.mark.parametrize(
    "item,message",
    [
        ("lr", "not key=value"),
        ("=3", "not key=value"),
        ("lr=", "not key=value"),
        ("lr=[0.1, 0.2]", "expects one value"),
    ],
)
def test_parse_set_errors(item, message):
    with pytest.raises(TunerError, match=message):
        parse_set(item)


def _local_modules(folder: Path, python: Path | str, installed_in: str, env: dict[str, str]) -> str:
    """The local modules of a space module in `folder` that imports a neighbour and a module installed in
    `installed_in` (a folder on the interpreter's path), as loaded by `python`."""
    (Path(installed_in) / "installed_beside.py").write_text("VALUE = 1\n")
    (folder / "helpers.py").write_text("WIDTH = 8\n")
    (folder / "mine.py").write_text(
        "import helpers, installed_beside\nfrom ray import tune\n"
        'metric, mode, model, dataset = "val_acc", "max", "mlp", "digits"\nparam_space = {"lr": tune.choice([0.1])}\n'
    )
    loaded = subprocess.run(
        [python, "-c", "from tuner.spec import space; print(space.load('mine.py').local_modules)"],
        cwd=folder,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    return loaded.stdout.strip()


def test_a_package_installed_in_a_venv_beside_the_space_module_is_not_pickled_by_value(tmp_path):
    """README's install puts .venv in the folder where a user may also write a space module: what that
    venv installs is imported as a package on the workers, only the module's own neighbours go by value
    (sklearn pickled by value fails with a RecursionError)."""
    import venv

    venv.create(tmp_path / ".venv", system_site_packages=True, with_pip=False)
    python = tmp_path / ".venv" / "bin" / "python"
    site_packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    # tuner's own dependencies come from the tests' venv
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])}
    assert _local_modules(tmp_path, python, site_packages, env) == "('helpers',)"


def test_a_package_installed_for_the_user_beside_the_space_module_is_not_pickled_by_value(tmp_path):
    """`pip install --user` puts packages under the home folder, where a user may also write a space
    module. The user's site-packages is on the path as Python's site module puts it there (the tests'
    venv turns that off, so PYTHONPATH does it here), under PYTHONUSERBASE."""
    user_base = tmp_path / ".local"
    env = {"PYTHONUSERBASE": str(user_base)}
    user_site = subprocess.run(
        [sys.executable, "-c", "import site; print(site.getusersitepackages())"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(user_site).mkdir(parents=True)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), user_site])
    assert _local_modules(tmp_path, sys.executable, user_site, env) == "('helpers',)"
