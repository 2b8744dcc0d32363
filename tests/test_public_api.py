"""`import tuner`: the names in `__all__` are the public surface, each resolves, and a library caller
gets tuner's one-line errors, never a KeyError from inside."""

import subprocess
import sys

import pandas as pd
import pytest
import ray

import tuner
from tests.conftest import REPO
from tuner.settings import Cluster


def test_every_public_name_resolves_and_nothing_else_is_offered():
    """Each name in `__all__` is, at run time, the very object that tuner/__init__.py's TYPE_CHECKING
    imports declare for it (what type checkers and editors show), and `import tuner` alone loads neither
    Ray nor torch (checked in a fresh interpreter): Ray's workers import tuner's modules for the loop."""
    import ast
    from importlib import import_module

    package = ast.parse((REPO / "tuner" / "__init__.py").read_text())
    declared = {
        alias.asname or alias.name: (statement.module, alias.name)
        for block in ast.walk(package)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for statement in block.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }
    assert sorted(declared) == sorted(tuner.__all__)
    for name, (module, attribute) in declared.items():
        assert getattr(tuner, name) is getattr(import_module(module), attribute), name
    assert set(tuner.__all__) <= set(dir(tuner))
    with pytest.raises(AttributeError, match="has no attribute 'experiment'"):
        tuner.experiment  # noqa: B018  (internal modules are not public names)

    heavy = "import sys, tuner; print(sorted({name.split('.')[0] for name in sys.modules} & {'ray', 'torch'}))"
    fresh = subprocess.run([sys.executable, "-c", heavy], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"mode": "maybe"}, "mode must be 'min' or 'max'"),
        ({"epochs": True}, "epochs must be an integer from 1 to 100000"),
        ({"model": "transformer"}, "transformer"),
        ({"param_space": {"lr": -1.0}}, "lr must be a number > 0"),
    ],
)
def test_a_space_built_in_python_checks_itself(fields, message):
    valid = {
        "name": "py",
        "metric": "val_acc",
        "mode": "max",
        "param_space": {"lr": 0.01},
        "model": "mlp",
        "dataset": "digits",
    }
    with pytest.raises(tuner.TunerError, match=message):
        tuner.ExperimentSpec.of(**{**valid, **fields})


@pytest.mark.slow
def test_run_and_load_through_the_public_api(tmp_path):
    """What docs/results.md's "From Python" shows, in a fresh interpreter (tuner starts its own Ray)."""
    code = (
        "import tuner\n"
        "space = tuner.ExperimentSpec.of(\n"
        "    name='py', metric='val_acc', mode='max', model='mlp', dataset='digits', epochs=2,\n"
        "    param_space={'lr': tuner.load_space('digits_mlp').param_space['lr'], 'batch_size': 64},\n"
        ")\n"
        f"outcome = tuner.run(space, tuner.RunOptions(storage_path={str(tmp_path)!r}, name='py', verbose=0))\n"
        "exp = tuner.load(outcome.experiment_path)\n"
        "print(len(exp.trials), exp.best()['status'], exp.meta.space)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    trials = pd.read_csv(tmp_path / "py" / "trials.csv")
    assert result.stdout.split()[-3:] == [str(len(trials)), tuner.TrialStatus.FINISHED.value, "py"]
    assert (trials["status"] == tuner.TrialStatus.FINISHED).all() and (trials["epochs"] == 2).all()


@pytest.mark.slow
def test_run_in_a_process_that_started_ray_runs_there_and_leaves_it_up(local_ray, tmp_path):
    """As in a notebook that called ray.init() first: no second instance, and Ray stays up for the next cell."""
    address = ray.get_runtime_context().gcs_address
    space = tuner.ExperimentSpec.of(
        name="mine",
        metric="val_acc",
        mode="max",
        model="mlp",
        dataset="digits",
        epochs=1,
        param_space={"lr": 0.01, "batch_size": 64},
    )
    outcome = tuner.run(space, tuner.RunOptions(storage_path=str(tmp_path), name="mine", verbose=0))
    assert (outcome.trials["status"] == tuner.TrialStatus.FINISHED).all()
    assert ray.is_initialized() and ray.get_runtime_context().gcs_address == address

    with pytest.raises(tuner.TunerError, match="already running in this process, so the address auto cannot apply"):
        tuner.run(space, tuner.RunOptions(storage_path=str(tmp_path), name="elsewhere", cluster=Cluster("auto")))
    assert not (tmp_path / "elsewhere").exists()
