"""The smoke step: a space module whose own code is broken fails in seconds, before Ray starts, with the
user's own traceback (their frames, not tuner's) or one line, exit code 2, and nothing written."""

import textwrap

import pytest

from tests.conftest import run_tuner
from tuner.cli import main

DATA = """
import torch
from ray import tune
from torch import nn

def dataset():
    x = torch.randn(40, 5)
    y = (x.sum(1) > 0).long()
    return (x, y), (x[:10], y[:10])
"""
PARTS = (
    DATA
    + """
def model(config):
    return nn.Sequential(nn.Linear(5, config["width"]), nn.ReLU(), nn.Linear(config["width"], 2))

metric, mode = "val_acc", "max"
param_space = {"width": tune.choice([4, 8]), "lr": 0.01}
"""
)
BROKEN = {
    # A model that raises while it is built: its own frame and line are shown.
    "raises.py": PARTS.replace(
        "    return nn.Sequential(",
        "    raise ValueError(f\"no such width {config['width']}\")\n    return nn.Sequential(",
    ),
    # Layers that do not fit the data: the error arises inside torch, from the model's forward pass.
    "shapes.py": PARTS.replace("nn.Linear(5,", "nn.Linear(4,"),
    "metric.py": PARTS.replace('metric, mode = "val_acc", "max"', 'metric, mode = "val_f1", "max"'),
    "stop.py": PARTS + 'stop = "val_f1>=0.9"\n',
    "silent_loop.py": DATA
    + """
def train_loop(config, ctx):
    for epoch in range(ctx.start_epoch, ctx.epochs + 1):
        pass

metric, mode = "val_acc", "max"
param_space = {"lr": 0.1}
""",
    "bad_dataset.py": PARTS.replace("    return (x, y), (x[:10], y[:10])", "    return x, y, None"),
    "dataset_raises.py": PARTS.replace("    x = torch.randn(40, 5)", "    x = open('missing.csv').read()"),
    "bad_metric.py": PARTS + "def metrics(outputs, targets):\n    return {'val_top': outputs.max(1).values}\n",
}
EXPECTED = {
    "raises.py": (
        ['raises.py", line', "in model", "raise ValueError", "ValueError: no such width"],
        "space raises: its code failed on the first config {'width': ",
    ),
    "shapes.py": (
        ["In tuner's loop, at `outputs = model(x)`:", "RuntimeError: mat1 and mat2 shapes cannot be multiplied"],
        "space shapes: its code failed on the first config",
    ),
    "metric.py": (
        [],
        "space metric: metric 'val_f1' is never reported; the loop reports train_loss, val_acc, val_loss",
    ),
    "stop.py": ([], "space stop: stop condition's metric 'val_f1' is never reported"),
    "silent_loop.py": ([], "space silent_loop: train_loop returned without calling ctx.report"),
    "bad_dataset.py": (
        [],
        "dataset() must return (train, val), each an (x, y) pair of tensors or a torch Dataset; it returned a tuple",
    ),
    "dataset_raises.py": (['dataset_raises.py", line', "FileNotFoundError"], "space dataset_raises: dataset() failed"),
    "bad_metric.py": (
        ["ValueError: metric 'val_top' gave a tensor of shape (10,); give one number per metric"],
        "space bad_metric: its code failed on the first config",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_space_code_fails_before_any_trial_with_the_users_traceback(
    tmp_path, monkeypatch, capsys, local_ray, name
):
    (tmp_path / name).write_text(textwrap.dedent(BROKEN[name]))
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    code = main(["run", name, "--storage-path", "results"])
    err = capsys.readouterr().err
    shown, last_line = EXPECTED[name]
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("tuner: error: ") and last_line in lines[-1], err
    for text in shown:
        assert text in err, err
    if not shown:
        assert len(lines) == 1, err
    assert "tuner/training/loop.py" not in err and "site-packages" not in err  # no frame of tuner's or torch's
    assert set(tmp_path.iterdir()) == before  # no results directory


@pytest.mark.slow
def test_no_smoke_skips_it_and_a_missing_metric_then_stops_the_run_in_one_line(tmp_path):
    (tmp_path / "space.py").write_text(textwrap.dedent(BROKEN["metric.py"]))
    result = run_tuner(
        "run", "space.py", "--storage-path", "results", "--name", "skipped", "--no-smoke", "--epochs", "1", cwd=tmp_path
    )
    # Without the smoke step the missing metric surfaces once the first trial reports: one line, the
    # run stopped, what was recorded kept.
    assert result.returncode == 2, result.stderr[-2000:]
    assert "smoke step" not in result.stdout
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("tuner: error: a trial reported without metric 'val_f1', which the search ranks by")
    )
    assert (tmp_path / "results" / "skipped" / "tuner.json").exists()
