"""Bad input: one line on stderr naming the problem and the fix, exit code 2, no traceback, nothing written."""

import pytest
import ray

from tests.conftest import REPO, run_tuner
from tuner.cli import main

MNIST_FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]

SPACES = REPO / "search_spaces"
DOWN_STORE = "s3://bucket/results?endpoint_override=127.0.0.1:1&scheme=http"
DOWN_EXPERIMENT = "s3://bucket/results/run?endpoint_override=127.0.0.1:1&scheme=http"

MISSING_FIELDS = 'model = "mlp"\ndataset = "digits"\n'
HEADER = 'from ray import tune\nmodel = "mlp"\ndataset = "digits"\nmetric = "val_acc"\nmode = "max"\n'
COND_SPACE = 'param_space = {"optimizer": tune.choice(["sgd", "adam"]), "momentum": tune.choice([0.0, 0.9])}\n'
# Malformed space modules, one per row of the table below.
SPACE_FILES = {
    "missing_fields.py": MISSING_FIELDS,
    "syntax_error.py": HEADER + 'param_space = {"lr": tune.grid_search([0.1, 0.2)}\n',
    "wrong_types.py": HEADER + 'epochs = "ten"\nparam_space = {"lr": 0.1}\n',
    "empty_grid.py": HEADER + 'param_space = {"lr": tune.grid_search([])}\n',
    "negative_epochs.py": HEADER + 'epochs = -3\nparam_space = {"lr": 0.1}\n',
    "zero_samples.py": HEADER + 'num_samples = 0\nparam_space = {"lr": 0.1}\n',
    "list_space.py": HEADER + 'param_space = ["lr"]\n',
    "exits.py": HEADER + 'param_space = {"lr": 0.1}\nimport sys\nsys.exit()\n',  # a script's ending, at top level
    # Conditional spaces (tuner/spec/conditions.py): a key not in the space, a value the parent never
    # takes, a cycle.
    "cond_unknown.py": HEADER + COND_SPACE + 'conditions = {"momentum": {"optimiser": "sgd"}}\n',
    "cond_never.py": HEADER + COND_SPACE + 'conditions = {"momentum": {"optimizer": "sgdd"}}\n',
    "cond_cycle.py": HEADER
    + COND_SPACE
    + 'conditions = {"momentum": {"optimizer": "sgd"}, "optimizer": {"momentum": 0.9}}\n',
}


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "no_such_space"], "unknown space 'no_such_space'; available:"),
        (["run", "nowhere/space.py"], "space module nowhere/space.py does not exist"),
        (["run", "missing_fields.py"], "is missing metric, mode, param_space"),
        (["run", "syntax_error.py"], "space module syntax_error.py has a syntax error at line 6: closing parenthesis"),
        (["run", "wrong_types.py"], "space wrong_types: epochs must be an integer from 1 to 100000, not 'ten'"),
        (["run", "empty_grid.py"], "space empty_grid: param_space['lr'] is an empty grid; give tune.grid_search at"),
        (["run", "negative_epochs.py"], "space negative_epochs: epochs must be an integer from 1 to 100000, not -3"),
        (["run", "zero_samples.py"], "space zero_samples: num_samples must be an integer from 1 to 100000, not 0"),
        (["run", "list_space.py"], "space list_space: param_space must be a dict, not list"),
        (["run", "exits.py"], "space module exits.py called exit(None) as it was imported; a space module defines"),
        (["run", "cond_unknown.py"], "space cond_unknown: conditions name 'optimiser', which is no key of param_space"),
        (["run", "cond_never.py"], "conditions: 'momentum' needs optimizer='sgdd', a value optimizer never takes"),
        (["run", "cond_cycle.py"], "conditions form a cycle: optimizer needs momentum needs optimizer"),
        (["run", "digits_conditional", "--scheduler", "pbt"], "pbt mutates each hyperparameter on its own"),
        (["run", "--set", "lr"], "--set 'lr' is not key=value"),
        (
            ["run", "--set", "learning_rate=0.1"],
            "--set learning_rate: not a key of the space's param_space (lr, hidden,",
        ),
        (["run", "--seed", "-5"], "argument --seed: must be an integer from 0 to 4294967295, not -5"),
        (["run", "--set", "batch_size=0"], "batch_size must be an integer >= 1, not 0"),
        (["run", "--workers", "0"], "argument --workers: must be an integer from 1 to 10000, not 0"),
        (
            ["run", "--name", "../elsewhere"],
            "argument --name: must be a plain name of letters, digits, '.', '_' and '-'",
        ),
        (["run", "--epochs", "many"], "argument --epochs: 'many' is not a whole number"),
        (["run", "digits_mlp", "--space", "digits_cnn"], "either as an argument or with --space"),
        (["report", "not_an_experiment"], "is not a tuner experiment"),
        (["resume", "not_an_experiment"], "is not a tuner experiment"),
        (["run", "--warm-start", "absent_dir"], "absent_dir does not exist"),
        # An object store that is down (nothing listens at port 1): said at once, not after pyarrow's retries.
        (["list", DOWN_STORE], "does not answer (connection refused); start it, or point tuner at it"),
        (["report", DOWN_EXPERIMENT], "the object store at 127.0.0.1:1 does not answer (connection refused)"),
        (["resume", DOWN_EXPERIMENT], "the object store at 127.0.0.1:1 does not answer (connection refused)"),
        (["extend", DOWN_EXPERIMENT, "--num-samples", "2"], "127.0.0.1:1 does not answer (connection refused)"),
        (["run", "--storage-path", DOWN_STORE], f"cannot reach {DOWN_STORE}: the object store at 127.0.0.1:1"),
        (["run", "--warm-start", DOWN_EXPERIMENT], "the object store at 127.0.0.1:1 does not answer"),
        (["run", "mnist_cnn"], "pass --data-dir DIR or set TUNER_DATA_DIR"),
        (["run", "mnist_cnn", "--data-dir", "absent_dir"], "--data-dir absent_dir does not exist or is not a folder"),
        (["run", "--data-dir", "absent_dir"], "--data-dir absent_dir does not exist"),  # digits reads none; a typo
        (["run", "mnist_cnn", "--data-dir", "not_an_experiment"], "dataset files missing under"),
        (["run", "--warm-start", "not_an_experiment"], "is not a tuner experiment"),
        (["extend", "not_an_experiment", "--num-samples", "2"], "is not a tuner experiment"),
        (["extend", "not_an_experiment"], "the following arguments are required: --num-samples"),
        (
            ["extend", "not_an_experiment", "--num-samples", "0"],
            "argument --num-samples: must be an integer from 1 to 100000",
        ),
        (["run", "--time-budget", "abc"], "time budget 'abc' is not a duration; write e.g. 90s, 30m"),
        (["run", "--metric", "val_acc,val_loss", "--mode", "max"], "metric names 2 objective(s) (val_acc, val_loss)"),
        (["run", "--mode", "max,best"], "argument --mode: must be 'min' or 'max', or a list of them"),
        (["run", "--constraints", "val_loss = 1"], "argument --constraints: constraint 'val_loss = 1' is not METRIC"),
        (
            ["run", "--metric", "val_acc,val_loss", "--mode", "max,min", "--search", "hyperopt"],
            "hyperopt optimizes one metric, and this space has 2 objectives; use --search optuna",
        ),
        (
            ["run", "--scheduler", "pb2"],
            "argument --scheduler: must be one of fifo, asha, hyperband, median, pbt, not 'pb2'",
        ),
        (["run", "-v", "-q"], "give -v (Ray's full output) or -q (the summary only), not both"),
        (
            ["run", "--scheduler", "pbt", "--set", "lr=0.1", "--set", "weight_decay=0", "--set", "batch_size=64"],
            "pbt has nothing to mutate",
        ),
        (["run", "--max-failures", "-3"], "argument --max-failures: must be an integer from 0 to 1000, not -3"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["report", "absent_dir"], "absent_dir does not exist"),
        (["report", "not_an_experiment", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["run", "--address", "127.0.0.1:1"], "cannot reach a Ray cluster at 127.0.0.1:1 (Connection refused)"),
        (["run", "--address", "ray://127.0.0.1:1"], "cannot reach a Ray cluster at ray://127.0.0.1:1"),
        (
            ["run", "--address", "http://127.0.0.1:8265"],
            "is a dashboard (Jobs API) address: use it with `tuner submit`",
        ),
        (["run", "--address", "not an address"], "is not a Ray address; use auto, host:port or ray://host:port"),
        (["run", "--dashboard", "--address", "auto"], "a cluster given with --address has its own"),
        (
            ["run", "--dashboard-port", "70000"],
            "argument --dashboard-port: must be an integer from 1 to 65535, not 70000",
        ),
        (["submit"], "give the cluster's dashboard address: --address http://<head node>:8265"),
        (["submit", "--address", "http://127.0.0.1:1"], "cannot reach a Ray cluster at http://127.0.0.1:1"),
        (["submit", "--address", "127.0.0.1:6379"], "is not a dashboard URL; `tuner submit` needs http://"),
        (
            ["submit", "--address", "http://127.0.0.1:1", "--storage-path", "results"],
            "--storage-path results is relative",
        ),
        (["submit", "--address", "http://127.0.0.1:1", "--set", "lr=-1"], "lr must be"),
        (
            ["submit", "--address", "http://127.0.0.1:1", str(SPACES / "digits_mlp.py")],
            "is outside the current directory",
        ),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, monkeypatch, capsys, own_ray, args, message):
    """In-process, the way `python -m tuner` calls it (a subprocess each would cost seconds of imports);
    an exception that escaped `main` would fail the test with its traceback. No Ray is running, as for
    `tuner run` (the --address rows would otherwise be told that one is), and none may start: each of
    these is refused before Ray's start-up, in a moment."""

    def no_start(*args, **kwargs):
        raise AssertionError("Ray started before this input was refused")

    monkeypatch.setattr(ray, "init", no_start)
    _one_clear_line(tmp_path, monkeypatch, capsys, args, message)


def _one_clear_line(tmp_path, monkeypatch, capsys, args, message) -> None:
    for name, text in SPACE_FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "not_an_experiment").mkdir()
    corrupt = tmp_path / "corrupt" / "MNIST" / "raw"
    corrupt.mkdir(parents=True)
    for name in MNIST_FILES:
        (corrupt / name).write_bytes(b"\x08\x03 not an IDX file")
    monkeypatch.chdir(tmp_path)
    for name in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS", "TUNER_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    before = set(tmp_path.iterdir())
    capsys.readouterr()  # anything a running Ray printed before this row
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse exits by itself on malformed options
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], captured.err
    assert set(tmp_path.iterdir()) == before  # no experiment directory, no tuner_results/


def test_bad_input_from_a_real_process_has_no_traceback(tmp_path):
    (tmp_path / "missing_fields.py").write_text(MISSING_FIELDS)
    result = run_tuner("run", "missing_fields.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tuner: error: space module missing_fields.py is missing metric, mode, param_space; see docs/space-modules.md"
    ]


def test_workers_beyond_the_cluster_fail_before_any_trial(tmp_path):
    result = run_tuner("run", "--workers", "8", "--storage-path", "results", "--name", "too_big", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert (
        "tuner: error: a trial needs 8 workers x 1 CPU = 8 CPU, but the Ray cluster has 2; lower --workers"
        in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "results" / "too_big").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "mnist_cnn", "--data-dir", "corrupt"], "dataset files under corrupt/MNIST/raw could not be read"),
        (
            ["run", "--stop", "accuracy>0.9"],
            "stop condition's metric 'accuracy' is never reported; the loop reports train_loss, val_acc, val_loss",
        ),
        (
            ["run", "--metric", "val_acc,f1", "--mode", "max,max"],
            "objective 'f1' is never reported; the loop reports train_loss, val_acc, val_loss",
        ),
        (
            ["run", "--constraints", "f1>=0.5"],
            "constraint 'f1>=0.5': metric 'f1' is never reported",
        ),
        (
            ["run", "--workers", "8", "--max-concurrent", "1"],  # a limit on trials at once skips no check
            "a trial needs 8 workers x 1 CPU = 8 CPU, but the Ray cluster has 2",
        ),
    ],
)
def test_bad_input_found_once_ray_runs_is_one_clear_line(tmp_path, monkeypatch, capsys, local_ray, args, message):
    """What is found as Ray starts (the data load and the smoke step run meanwhile) or from the cluster
    itself (its CPUs): on the shared local Ray, which each row would otherwise start and stop (~4 s)."""
    _one_clear_line(tmp_path, monkeypatch, capsys, args, message)
