"""`python -m tuner run` as a user runs it: a subprocess, a real local Ray instance, real training. Runs
that are there only for what they record (and print) run in this process on one shared local Ray
(`tuner_here`, `start_shared_ray`): ~6 s each against ~16 s for a process."""

import itertools
import json
import os
import re
import shlex
import shutil
import struct
import tempfile
import textwrap
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbclient import NotebookClient

from tests.conftest import REPO, TINY_GRID, run_killed_when, run_tuner, start_shared_ray
from tuner.cli import main
from tuner.command import tuner_command
from tuner.ray_compat import PICKLED_BY_PATH
from tuner.results import analysis
from tuner.storage.study_journal import TRIAL_ID_ATTR, load_study

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("e2e")
    (path / "tiny_grid.py").write_text(textwrap.dedent(TINY_GRID))
    return path


@pytest.fixture(scope="module")
def grid_run(workdir):
    result = run_tuner("run", "tiny_grid.py", "--storage-path", "results", "--name", "grid", "--seed", "3", cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    return result, workdir / "results" / "grid"


def test_trials_match_the_grid(grid_run):
    _, experiment = grid_run
    trials = pd.read_csv(experiment / "trials.csv")
    assert len(trials) == 4
    assert set(zip(trials["lr"], trials["batch_size"])) == set(itertools.product([0.001, 0.01], [32, 64]))
    assert set(trials["hidden"]) <= {16, 32}
    assert (trials["status"] == "finished").all() and (trials["epochs"] == 2).all()
    assert trials["rank"].tolist() == [1, 2, 3, 4]
    assert trials["best_val_acc"].is_monotonic_decreasing
    assert trials["best_val_acc"].iloc[0] > 0.8  # chance is 0.1; two epochs of the best config beat it easily
    parquet = pd.read_parquet(experiment / "trials.parquet")
    pd.testing.assert_frame_equal(parquet[["trial_id", "best_val_acc"]], trials[["trial_id", "best_val_acc"]])


def test_rays_saved_state_names_only_tuners_stable_module_paths(grid_run):
    """Ray pickles some of tuner's classes into the experiment by module path; `tuner resume` and
    `tuner report` import those paths again, so they are the stable ones (tuner.ray_compat)."""
    _, experiment = grid_run
    named = _tuner_modules_named(experiment)
    assert named and named <= set(PICKLED_BY_PATH), named - set(PICKLED_BY_PATH)


def _tuner_modules_named(experiment: Path) -> set[str]:
    named = set()
    for path in experiment.iterdir():
        if path.is_file():
            data = path.read_bytes()
            blobs = [data, *(bytes.fromhex(h.decode()) for h in re.findall(rb"(?:[0-9a-f]{2}){100,}", data))]
            named |= {m.decode() for blob in blobs for m in re.findall(rb"tuner\.[A-Za-z_.]+", blob)}
    return named


def test_history_has_one_row_per_trial_per_epoch(grid_run):
    _, experiment = grid_run
    trials = pd.read_csv(experiment / "trials.csv")
    history = pd.read_parquet(experiment / "history.parquet")
    assert len(history) == 8
    assert set(history["trial_id"]) == set(trials["trial_id"])
    for _, rows in history.groupby("trial_id"):
        assert rows["epoch"].tolist() == [1, 2]
    assert (history["world_size"] == 1).all()
    # Each row holds what the trial reported, as Ray itself logged it in the trial's own result.json
    # (not tuner's files checked against each other), and each trial's best is the best of its rows.
    for trial_id, trial_dir, best in trials[["trial_id", "trial_dir", "best_val_acc"]].itertuples(index=False):
        logged = [json.loads(line) for line in (Path(trial_dir) / "result.json").read_text().splitlines()]
        rows = history[history["trial_id"] == trial_id].sort_values("epoch")
        assert rows["val_acc"].tolist() == pytest.approx([result["val_acc"] for result in logged])
        assert best == pytest.approx(max(result["val_acc"] for result in logged))


def test_run_prints_best_trial_and_report_path(grid_run):
    result, experiment = grid_run
    best = pd.read_csv(experiment / "trials.csv").iloc[0]
    assert f"experiment: {experiment}" in result.stdout
    assert f"best trial: {best['trial_id']}" in result.stdout
    # What the best trial's model costs, as trials.csv has it (tuner/training/model_costs.py).
    assert f"model:      params={best['params']}  latency_ms=" in result.stdout and best["latency_ms"] > 0
    assert re.search(r"^\d+/\d+ trials done", result.stdout, re.MULTILINE)  # tuner's live view (on a pipe)
    assert "smoke step: one batch of the space's code on the first config ran in" in result.stdout
    # gpus_per_worker = auto on a cluster without GPUs: one line before the first trial, the CPU, as
    # before; the summary, trials.csv and tuner.json say so.
    assert "no GPU in the cluster: trials train on the CPU" in result.stdout
    assert "devices:    cpu\n" in result.stdout
    trials = pd.read_csv(experiment / "trials.csv")
    assert (trials["device"] == "cpu").all() and trials["gpu_peak_gib"].isna().all()
    recorded = json.loads((experiment / "tuner.json").read_text())
    assert recorded["resources"]["gpus_per_worker"] == 0.0
    assert recorded["gpus"]["setting"] == "auto" and recorded["gpus"]["why"].startswith("no GPU in the cluster")


def test_report_command_from_another_process(grid_run):
    """The table is checked against Ray's own result.json rows, not against trials.csv, which the same
    command rewrites: the top 3 trials by best val_acc, a tie to the lower trial id (report.rank)."""
    _, experiment = grid_run
    best = {}
    for path in experiment.glob("*/result.json"):
        recorded = [json.loads(line) for line in path.read_text().splitlines()]
        best[recorded[0]["trial_id"]] = max(row["val_acc"] for row in recorded)
    assert len(best) == 4
    top = sorted(best, key=lambda trial_id: (-best[trial_id], trial_id))[:3]

    result = run_tuner("report", str(experiment), "--top", "3", cwd=experiment)
    assert result.returncode == 0, result.stderr
    table = [line for line in result.stdout.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 3  # header, separator, top 3
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    shown = [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in table[2:]]
    assert [row["trial_id"] for row in shown] == top
    assert [row["rank"] for row in shown] == ["1", "2", "3"]
    for row in shown:
        assert float(row["best_val_acc"]) == pytest.approx(best[row["trial_id"]], abs=1e-4)  # as printed


# --- a damaged experiment: the finished grid copied, then one file of the copy damaged ---------------


def _damage(experiment: Path, kind: str) -> None:
    """Damage a copy of a finished experiment as a user, a full disk or another version may leave it."""
    meta = experiment / "tuner.json"
    state = max(experiment.glob("experiment_state-*.json"))
    if kind == "truncated tuner.json":
        meta.write_bytes(meta.read_bytes()[: len(meta.read_bytes()) // 2])
    elif kind == "edited tuner.json":
        record = json.loads(meta.read_text())
        record["budget"]["epochs"] = "two"
        meta.write_text(json.dumps(record))
    elif kind == "tuner.json of another shape":
        meta.write_text("[1, 2, 3]")
    elif kind == "missing trial directories":
        for trial in sorted(experiment.glob("tiny_grid_*"))[:2]:
            shutil.rmtree(trial)
    elif kind == "Ray state of another version":
        recorded = json.loads(state.read_text())
        state.write_text(json.dumps({"checkpoints": recorded["trial_data"], "runner_data": {}}))
    elif kind == "garbled Ray state":  # inside a trial's pickled state (hex): the JSON around it still parses
        text = state.read_text()
        blob = re.search(r"[0-9a-f]{200,}", text)
        assert blob is not None
        state.write_text(text[: blob.start() + 100] + "#" * 40 + text[blob.start() + 140 :])


DAMAGES = {  # kind: what report, resume and list say of it
    "truncated tuner.json": "tuner.json is damaged (not JSON: ",
    "edited tuner.json": "tuner.json is damaged (epochs must be an integer from 1 to 100000, not 'two')",
    "tuner.json of another shape": "tuner.json is damaged (a JSON list, not an object)",
    "missing trial directories": "the directories of 2 trial(s) Ray recorded are missing (tiny_grid_",
    "Ray state of another version": "cannot be read (KeyError: 'trial_data')",
    "garbled Ray state": "cannot be read (",
}


@pytest.fixture(scope="module")
def damaged(grid_run, tmp_path_factory) -> Path:
    """A storage path of the finished grid, whole, and a copy of it per kind of damage."""
    _, experiment = grid_run
    storage = tmp_path_factory.mktemp("damaged")
    shutil.copytree(experiment, storage / "whole")
    for number, kind in enumerate(DAMAGES):
        shutil.copytree(experiment, storage / f"damage{number}")
        _damage(storage / f"damage{number}", kind)
    return storage


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def _main(args: list[str], capsys) -> tuple[int, str, list[str]]:
    code = main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.out, captured.err.strip().splitlines()


@pytest.mark.parametrize("number,kind", list(enumerate(DAMAGES)))
def test_a_damaged_experiment_says_what_is_damaged_and_loses_nothing(damaged, capsys, number, kind):
    experiment = damaged / f"damage{number}"
    before = _files(experiment)
    said = DAMAGES[kind]

    code, out, err = _main(["report", str(experiment)], capsys)  # what can still be read, said to be so
    assert code == 0 and len(err) == 1 and err[0].startswith("tuner: warning: ") and said in err[0], err
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 4, out  # every trial of the grid: from trials.csv, Ray's state or their own files
    assert _files(experiment) == before  # the report files are not rewritten from less than they hold

    code, _, err = _main(["resume", str(experiment)], capsys)  # refused before Ray starts
    assert code == 2 and len(err) == 1 and err[0].startswith(f"tuner: error: cannot resume {experiment}: "), err
    assert said in err[0] and f"report {experiment}" in err[0], err
    assert _files(experiment) == before


def test_list_shows_the_damaged_experiments_as_damaged_and_lists_the_others(damaged, capsys):
    code, out, err = _main(["list", str(damaged)], capsys)
    assert code == 0 and err == [], err
    rows = {
        cells[0]: cells[1:] for cells in ([c.strip() for c in line.split("|")[1:-1]] for line in out.splitlines()[2:])
    }
    assert rows["whole"][:3] == ["tiny_grid", "finished", "4 finished"], rows
    for number, kind in enumerate(DAMAGES):
        assert rows[f"damage{number}"][1] == "damaged", rows
        assert DAMAGES[kind].removeprefix("tuner.json is damaged (").rstrip(")") in rows[f"damage{number}"][2], rows


# What hypothesis may damage: tuner's record, Ray's state files, and a trial's own files.
DAMAGEABLE = [
    "tuner.json",
    "experiment_state-*.json",
    "basic-variant-state-*.json",
    "tuner.pkl",
    "tiny_grid_*/result.json",
    "tiny_grid_*/params.json",
    "trials.csv",
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(DAMAGEABLE),
    st.sampled_from(["report", "list", "resume"]),
    st.one_of(
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("overwrite"), st.floats(0, 1), st.binary(min_size=1, max_size=8)),
        st.tuples(st.just("delete")),
    ),
)
def test_fuzzed_damage_to_an_experiments_files_ends_cleanly(damaged, capsys, pattern, command, change):
    """Bytes of one file of a finished experiment cut, overwritten or the file deleted: `report`,
    `list` and `resume` each end in exit 0 or one line and exit 2, never a traceback, and never rewrite
    the damaged file (but trials.csv, which `report` rebuilds from Ray's files). `resume` is pointed at
    a cluster that is not there, so that a copy it finds whole fails to connect (one line) rather than
    starting Ray."""
    copy = Path(tempfile.mkdtemp(dir=damaged, prefix="fuzzed-"))
    try:
        experiment = copy / "fuzzed"
        shutil.copytree(damaged / "whole", experiment)
        target = max(experiment.glob(pattern))
        data = target.read_bytes()
        if change[0] == "delete":
            target.unlink()
        elif change[0] == "truncate":
            target.write_bytes(data[: int(len(data) * change[1])])
        else:
            at = int(len(data) * change[1])
            target.write_bytes(data[:at] + change[2] + data[at + len(change[2]) :])
        damaged_bytes = target.read_bytes() if target.exists() else None
        args = {
            "report": ["report", str(experiment)],
            "list": ["list", str(copy)],
            "resume": ["resume", str(experiment), "--address", "127.0.0.1:1"],
        }[command]
        code, _, err = _main(args, capsys)
        assert code in (0, 2), err
        if code == 2:
            assert len(err) == 1 and err[0].startswith("tuner: error: "), err
        if pattern != "trials.csv":  # the report's own output: rebuilt from Ray's files when they are whole
            assert (target.read_bytes() if target.exists() else None) == damaged_bytes
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def test_analysis_load_gives_the_same_frames(grid_run):
    _, experiment = grid_run
    exp = analysis.load(str(experiment))
    assert exp.metric == "val_acc" and exp.mode == "max"
    assert exp.best()["trial_id"] == pd.read_csv(experiment / "trials.csv").iloc[0]["trial_id"]
    assert exp.curves().shape == (2, 4)


def _execute_notebook(path: Path, monkeypatch, **env: str) -> list:
    for key, value in {**env, "PYTHONPATH": str(REPO)}.items():
        monkeypatch.setenv(key, value)
    notebook = nbformat.read(path, as_version=4)
    # JupyterLab runs a notebook's kernel in the notebook's folder.
    NotebookClient(notebook, timeout=180, resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    return outputs


def _text(outputs: list) -> str:
    return "\n".join(out.get("text", "") + out.get("data", {}).get("text/plain", "") for out in outputs)


def test_quick_look_notebook_executes_on_the_experiment(grid_run, monkeypatch):
    """The notebook as the `notebook:` line of the run's summary names it: the experiment, and the
    notebook by the path it has where tuner is installed, whatever folder the user is in."""
    result, experiment = grid_run
    line = next(line for line in result.stdout.splitlines() if line.startswith("notebook:"))
    words = shlex.split(line.removeprefix("notebook:").split(", then ")[-1])
    variable, _, printed = words[0].partition("=")
    assert variable == "TUNER_EXPERIMENT" and Path(printed).resolve() == experiment.resolve()
    assert Path(words[-1]).is_absolute()
    outputs = _execute_notebook(Path(words[-1]), monkeypatch, TUNER_EXPERIMENT=printed)
    # learning curves, score per hyperparameter, parallel coordinates, importance, early stopping
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 5
    assert "4 trials" in _text(outputs)


@pytest.fixture(scope="module")
def asha_run(workdir):
    """Only the compare notebook reads it: made in this process, on the shared local Ray."""
    start_shared_ray()
    with pytest.MonkeyPatch.context() as inside:
        inside.chdir(workdir)
        inside.delenv("TUNER_DATA_DIR", raising=False)
        code = main(
            [
                "run",
                "tiny_grid.py",
                "--storage-path",
                "results",
                "--name",
                "asha",
                "--search",
                "random",
                "--scheduler",
                "asha",
                "--num-samples",
                "4",
                "--epochs",
                "3",
            ]
        )
    assert code == 0
    return workdir / "results" / "asha"


def test_compare_notebook_puts_two_experiments_side_by_side(grid_run, asha_run, monkeypatch):
    _, grid = grid_run
    outputs = _execute_notebook(
        REPO / "notebooks" / "compare.ipynb", monkeypatch, TUNER_EXPERIMENTS=f"{grid},{asha_run}"
    )
    text = _text(outputs)
    assert "comparing grid (grid, fifo) vs asha (random, asha)" in text
    assert "trial-epochs spent" in text
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 1


def test_html_report_and_table_formats(grid_run):
    _, experiment = grid_run
    trials = pd.read_csv(experiment / "trials.csv")
    result = run_tuner("report", str(experiment), "--html", "--format", "json", cwd=experiment)
    assert result.returncode == 0, result.stderr
    assert [row["trial_id"] for row in json.loads(result.stdout)] == trials["trial_id"].tolist()
    page = (experiment / "report.html").read_text()
    assert all(trial_id in page for trial_id in trials["trial_id"])
    assert page.count("data:image/png;base64,") >= 4 and "<script src" not in page
    assert "Early stopping" not in page  # a fifo grid whose trials all ran every epoch: nothing to show there
    csv = run_tuner("report", str(experiment), "--format", "csv", "--top", "2", cwd=experiment)
    assert csv.stdout.splitlines()[0].startswith("rank,trial_id,status") and len(csv.stdout.splitlines()) == 3


def _tensorboard_tags(event_file: Path) -> set[str]:
    """The scalar tags of a TensorBoard event file: TFRecords (length, its CRC, an Event, its CRC)."""
    from tensorboardX.proto.event_pb2 import Event

    data, at, tags = event_file.read_bytes(), 0, set()
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at : at + 8])
        event = Event.FromString(data[at + 12 : at + 12 + length])
        tags |= {value.tag for value in event.summary.value if value.HasField("simple_value")}
        at += 12 + length + 4
    return tags


def test_tensorboard_shows_a_run_per_trial_named_by_its_config_with_the_loops_metrics(grid_run):
    _, experiment = grid_run
    trials = pd.read_csv(experiment / "trials.csv")
    files = sorted(experiment.glob("*/*/events.out.tfevents.*"))  # `tensorboard --logdir <experiment>`
    assert len(files) == 4, files
    runs = {f"{file.parent.parent.name}/{file.parent.name}" for file in files}
    assert runs == {
        f"{Path(row.trial_dir).name}/batch_size={row.batch_size},hidden={row.hidden},lr={row.lr:.4g}"
        for row in trials.itertuples()
    }
    # The loop's metrics and the model's costs: none of Ray's or tuner's bookkeeping.
    assert _tensorboard_tags(files[0]) == {"train_loss", "val_acc", "val_loss", "params", "latency_ms"}


def test_report_of_an_experiment_where_every_trial_diverged(tuner_here, workdir):
    """No trial finished: the run says so, and the HTML report names each trial and why it stopped."""
    result = tuner_here(
        "run",
        "tiny_grid.py",
        "--storage-path",
        "results",
        "--name",
        "diverged",
        "--set",
        "lr=1e12",
        "--set",
        "batch_size=64",
        "--set",
        "hidden=16",
        "--epochs",
        "3",
        cwd=workdir,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "no trial completed" in result.stdout
    experiment = workdir / "results" / "diverged"
    report = run_tuner("report", str(experiment), "--html", cwd=workdir)
    assert report.returncode == 0, report.stderr
    trials = pd.read_csv(experiment / "trials.csv")
    assert (trials["status"] == "diverged").all()
    page = (experiment / "report.html").read_text()
    assert "Failed trials" in page and all(trial_id in page for trial_id in trials["trial_id"])
    assert page.count("non-finite loss in epoch 1") == len(trials)  # why each one stopped


def test_existing_experiment_is_never_overwritten(grid_run, workdir):
    _, experiment = grid_run
    before = sorted(os.listdir(experiment))
    result = run_tuner("run", "tiny_grid.py", "--storage-path", "results", "--name", "grid", cwd=workdir)
    assert result.returncode == 2 and "already exists" in result.stderr
    assert sorted(os.listdir(experiment)) == before


def test_two_worker_ddp_trial_on_uri_storage(workdir):
    """Two gloo ranks in one trial, with the experiment stored through a pyarrow-fs URI."""
    result = run_tuner(
        "run",
        "tiny_grid.py",
        "--storage-path",
        f"file://{workdir}/uri_results",
        "--name",
        "ddp",
        "--workers",
        "2",
        "--set",
        "lr=0.01",
        "--set",
        "batch_size=64",
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    experiment = workdir / "uri_results" / "ddp"
    history = pd.read_parquet(experiment / "history.parquet")
    assert history["world_size"].tolist() == [2, 2]
    assert history["epoch"].tolist() == [1, 2]
    assert history["val_acc"].between(0.3, 1.0).all()
    trials = pd.read_csv(experiment / "trials.csv")
    assert len(trials) == 1 and trials.loc[0, "status"] == "finished"
    assert list(experiment.glob("*/checkpoint_*/checkpoint.pt"))  # rank 0's checkpoints, kept by Tune
    assert not list(experiment.glob("train_runs/*"))  # Ray Train's staging runs are gone
    # Ray Train's INFO lines (each rank's report and checkpoint, every epoch) stay out of the console.
    for line in ("Reporting training result", "Checkpoint successfully created"):
        assert line not in result.stdout + result.stderr


def _epochs_recorded(experiment) -> int:
    return sum(len(path.read_text().splitlines()) for path in experiment.glob("*/result.json"))


def test_report_on_a_killed_experiment(workdir):
    """The driver SIGKILLed mid-run: what Ray recorded is still reported, nothing is invented."""
    (workdir / "long.py").write_text(textwrap.dedent(TINY_GRID).replace("epochs = 2", "epochs = 400"))
    experiment = workdir / "results" / "killed"
    run_killed_when(
        lambda: bool(list(experiment.glob("experiment_state-*.json"))) and _epochs_recorded(experiment) >= 5,
        "run",
        "long.py",
        "--storage-path",
        "results",
        "--name",
        "killed",
        "--no-smoke",
        cwd=workdir,
    )
    assert not (experiment / "trials.csv").exists()  # the run never got to write its report

    result = run_tuner("report", str(experiment), cwd=workdir)
    assert result.returncode == 0, result.stderr
    trials = pd.read_csv(experiment / "trials.csv")
    history = pd.read_parquet(experiment / "history.parquet")
    assert 1 <= len(trials) <= 4
    assert set(trials["status"]) <= {"finished", "incomplete", "not started"}
    assert "incomplete" in set(trials["status"])
    started = trials[trials["epochs"] > 0]
    assert (started["status"] != "not started").all() and started["best_epoch"].notna().all()
    assert trials["epochs"].max() >= 1 and (trials["epochs"] < 400).all()
    # Every epoch in the report is one that a trial wrote to result.json before the kill.
    assert len(history) == trials["epochs"].sum() <= _epochs_recorded(experiment)


# The tiny grid's space, changed: lr now a range that leaves out the grid's 0.01, hidden wider.
WARM_SPACE = """
from ray import tune
model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 2
param_space = {
    "lr": tune.loguniform(1e-3, 5e-3),
    "batch_size": tune.choice([32, 64]),
    "hidden": tune.choice([16, 32, 64]),
}
"""


def test_warm_start_seeds_optuna_with_an_earlier_experiment_and_drops_what_no_longer_fits(
    grid_run, workdir, monkeypatch, capsys, tuner_here
):
    _, earlier = grid_run
    (workdir / "tiny_warm.py").write_text(textwrap.dedent(WARM_SPACE))
    (workdir / "other_space.py").write_text(
        textwrap.dedent(WARM_SPACE)
        .replace('"lr"', '"learning_rate"')
        .replace('"batch_size"', '"bs"')
        .replace('"hidden"', '"width"')
    )
    (workdir / "other_metric.py").write_text(textwrap.dedent(WARM_SPACE).replace('"val_acc"', '"val_loss"'))
    monkeypatch.chdir(workdir)
    # Another space entirely, or another metric: one line, exit 2, nothing written (before Ray starts).
    for space, message in (
        ("other_space.py", "none of its trials has a searched key of this space with a value inside it"),
        ("other_metric.py", "ranks its trials by val_acc (max), this search by val_loss (max)"),
    ):
        before = set((workdir / "results").iterdir())
        code = main(["run", space, "--search", "optuna", "--warm-start", str(earlier), "--storage-path", "results"])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and message in lines[0], lines
        assert set((workdir / "results").iterdir()) == before

    result = tuner_here(
        "run", "tiny_warm.py", "--search", "optuna", "--num-samples", "2", "--warm-start", str(earlier),
        "--storage-path", "results", "--name", "warm", cwd=workdir,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        f"warm start from {earlier}: 4 earlier trials seed the search; dropped keys outside the space's domain: "
        "lr (in 2 of 4 trials)"
    ) in result.stdout
    experiment = workdir / "results" / "warm"
    assert json.loads((experiment / "tuner.json").read_text())["warm_start"] == {"from": str(earlier), "trials": 4}
    trials = pd.read_csv(experiment / "trials.csv")
    assert len(trials) == 2 and (trials["status"] == "finished").all()
    assert trials["lr"].between(1e-3, 5e-3).all()
    assert _tuner_modules_named(experiment) <= set(PICKLED_BY_PATH)  # the study in its storage names no tuner code


def test_extend_adds_trials_beside_the_finished_ones_and_every_command_reads_them(grid_run, workdir, tuner_here):
    """A copy of the finished grid, extended by 2 trials: grid runs as random draws of the same space,
    skipping the 4 configs run; report, list, the HTML report and resume see all 6."""
    _, grid = grid_run
    storage = workdir / "extended"
    shutil.copytree(grid, storage / "grid")
    experiment = storage / "grid"
    before = pd.read_csv(experiment / "trials.csv")

    result = tuner_here("extend", str(experiment), "--num-samples", "2", cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "extend: the grid has run whole; the new trials are random draws of the same space" in result.stdout
    # The live view counts the whole experiment, and names the best trial the summary names.
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines if line.startswith("[")] == ["[5/6]", "[6/6]"]
    status = [line for line in lines if "trials done" in line][-1]
    best = next(line for line in lines if line.startswith("best trial:")).split()[2]
    assert status.startswith("6/6 trials done") and f" · best {best} val_acc=" in status, status
    trials = pd.read_csv(experiment / "trials.csv")
    assert len(trials) == 6 and (trials["status"] == "finished").all()
    old = trials[trials["trial_id"].isin(before["trial_id"])].set_index("trial_id").sort_index()
    pd.testing.assert_series_equal(old["best_val_acc"], before.set_index("trial_id").sort_index()["best_val_acc"])
    configs = list(zip(trials["lr"], trials["batch_size"], trials["hidden"]))
    assert len(set(configs)) == 6  # no config of the first run drawn again
    meta = json.loads((experiment / "tuner.json").read_text())
    assert meta["total_trials"] == 6 and [e["trials"] for e in meta["extensions"]] == [2]
    assert meta["extensions"][0]["search"] == "random"
    study = load_study(str(experiment))  # one study: the run's 4 trials and the 2 the extension added
    assert sorted(trial.user_attrs[TRIAL_ID_ATTR] for trial in study.trials) == sorted(trials["trial_id"])
    assert all(trial.state.name == "COMPLETE" for trial in study.trials)

    report = run_tuner("report", str(experiment), "--html", cwd=workdir)
    assert report.returncode == 0, report.stderr
    assert "6 trials (6 finished)" in report.stdout and (experiment / "report.html").exists()
    listed = run_tuner("list", str(storage), cwd=workdir)
    assert listed.returncode == 0 and "| finished | 6 finished |" in listed.stdout, listed.stdout

    # Every trial has ended: resume says so in one line, and runs nothing (the run time stays as it was).
    recorded = (experiment / "tuner.json").read_text()
    resumed = tuner_here("resume", str(experiment), cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stdout.strip() == (
        f"nothing to resume: all 6 trials of {experiment} ended (6 finished); see them with "
        f"`{tuner_command()} report {experiment}`, or add trials with "
        f"`{tuner_command()} extend {experiment} --num-samples N`"
    )
    assert (experiment / "tuner.json").read_text() == recorded
    after = pd.read_csv(experiment / "trials.csv")
    assert sorted(after["trial_id"]) == sorted(trials["trial_id"]) and (after["status"] == "finished").all()
