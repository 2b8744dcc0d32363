"""Each searcher and scheduler through `tuner run`, on spaces small enough for 2 cores: in this process
on one shared local Ray (`tuner_here`), as the runs are there for what they record and print, not for
the process; `tuner report` and `tuner list` on them run as processes."""

import json
import re
import textwrap
import time

import pandas as pd
import pytest

from tests.conftest import run_tuner

pytestmark = pytest.mark.slow

# lr=1e-5 barely moves in a few epochs while lr=3e-2 reaches ~90 %: bad configs are obvious.
OBVIOUS = """
from ray import tune
model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = {epochs}
num_samples = {num_samples}
param_space = {{
    "lr": {lr},
    "hidden": tune.choice([16, 32]),
    "batch_size": 64,
}}
"""


def space(workdir, name, epochs=9, num_samples=6, lr="tune.choice([1e-5, 1e-5, 3e-2])"):
    (workdir / f"{name}.py").write_text(textwrap.dedent(OBVIOUS.format(epochs=epochs, num_samples=num_samples, lr=lr)))
    return f"{name}.py"


def decisions(workdir, name):
    """The scheduler's decisions of experiment `name`, as the driver appended them."""
    path = workdir / "results" / name / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run(here, workdir, *args):
    trials, history, _ = run_with_output(here, workdir, *args)
    return trials, history


def run_with_output(here, workdir, *args):
    result = here("run", *args, "--storage-path", "results", cwd=workdir)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    name = args[args.index("--name") + 1]
    experiment = workdir / "results" / name
    return pd.read_csv(experiment / "trials.csv"), pd.read_parquet(experiment / "history.parquet"), result.stdout


def ended_by(stdout: str, total: int) -> tuple[str, str]:
    """The live view's last status line and the summary's `stopped:` line, once each; the status line
    says nothing runs or waits any more."""
    final = [line for line in stdout.splitlines() if f"/{total} trials done" in line][-1]
    assert "waiting" not in final and "running" not in final and "left" not in final, final
    summary = [line for line in stdout.splitlines() if line.startswith("stopped:    ")]
    assert len(summary) == 1, stdout
    return final, summary[0]


def test_asha_stops_bad_configs_early(tuner_here, tmp_path):
    trials, history = run(
        tuner_here,
        tmp_path,
        space(tmp_path, "obvious"),
        "--search",
        "random",
        "--scheduler",
        "asha",
        "--name",
        "asha",
        "--max-concurrent",
        "2",
    )
    assert len(trials) == 6
    stopped = trials[trials["status"] == "stopped early"]
    full = trials[trials["status"] == "finished"]
    assert len(stopped) >= 1 and (stopped["epochs"] < 9).all()
    assert (full["epochs"] == 9).all()
    assert trials.iloc[0]["status"] == "finished" and trials.iloc[0]["lr"] == 3e-2
    assert stopped["best_val_acc"].mean() < full["best_val_acc"].mean()
    assert len(history) == trials["epochs"].sum() < 6 * 9
    # Why each stopped: ASHA's comparison at the rung it stopped at, its last epoch; nothing for the rest.
    assert stopped["stopped_because"].str.fullmatch(r"asha: val_acc \S+ < cutoff \S+ at epoch \d+ \(rung \d+\)").all()
    for _, trial in stopped.iterrows():
        assert f"at epoch {trial['epochs']} (rung {trial['epochs']})" in trial["stopped_because"]
    assert full["stopped_because"].isna().all()  # empty in the CSV
    # Every decision is a value the trial reported at that epoch, judged against the cutoff as ASHA does.
    rows = decisions(tmp_path, "asha")
    assert {row["trial_id"] for row in rows if row["decision"] == "stop"} == set(stopped["trial_id"])
    reported = history.set_index(["trial_id", "epoch"])["val_acc"]
    for row in rows:
        assert row["scheduler"] == "asha" and row["epoch"] == row["rung"] in (1, 3)
        assert row["value"] == pytest.approx(reported[(row["trial_id"], row["epoch"])])
        if row["decision"] == "stop":
            assert row["value"] < row["cutoff"]
        assert row["cutoff"] is None or row["decision"] == "stop" or row["value"] >= row["cutoff"]
    # One trial's history of decisions.
    victim = stopped.iloc[0]["trial_id"]
    shown = run_tuner("report", "results/asha", "--trial", victim, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert stopped.iloc[0]["stopped_because"] in shown.stdout and "| stop " in shown.stdout
    written = (tmp_path / "results" / "asha" / "trials.csv").stat().st_mtime_ns
    unknown = run_tuner("report", "results/asha", "--trial", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.stderr.startswith("tuner: error: results/asha has no trial 'nope'; ")
    assert len(unknown.stderr.splitlines()) == 1
    assert (tmp_path / "results" / "asha" / "trials.csv").stat().st_mtime_ns == written  # nothing rewritten


def test_pbt_restores_from_a_donor_checkpoint_and_perturbs_its_config(tuner_here, tmp_path):
    # 3 epochs: PBT perturbs after epochs 1 and 2 (interval epochs // 4, at least 1). lr is a range, not a
    # grid: Ray's PBT perturbs a list only to values of the list, but a range's value by * 0.8 or * 1.2, or
    # by a fresh draw, so an exploiting trial trains with an lr that no trial started with.
    path = space(tmp_path, "pbt_space", epochs=3, lr="tune.loguniform(1e-5, 3e-2)", num_samples=4)
    # Half a CPU each: all four trials run at once, so PBT compares them at the same epochs.
    trials, history = run(tuner_here, tmp_path, path, "--scheduler", "pbt", "--name", "pbt", "--cpus-per-worker", "0.5")
    assert len(trials) == 4
    restored = history[history["restored_from"].notna()]
    exploits = restored[restored["restored_from"] != restored["trial_id"]]  # the rest are pause/resume
    assert len(exploits) >= 1, "no trial exploited another"
    ids = set(trials["trial_id"])
    for _, row in restored.iterrows():
        donor = row["restored_from"]
        assert donor in ids  # the checkpoint was written by a trial of this experiment
        assert row["epoch"] == row["restored_epoch"] + 1  # and training went on from the donor's epoch
        # The donor got at least that far. (Not "that row exists": Ray has been seen to drop a row of a
        # trial that itself restarted from a checkpoint at that epoch.)
        assert row["restored_epoch"] <= history.loc[history["trial_id"] == donor, "epoch"].max()
    # A trial's epochs only go back or skip where it loaded a checkpoint (PBT may hand a
    # trial a donor's earlier epoch, which it then trains again under the new config).
    for _, rows in history.groupby("trial_id", sort=False):
        steps = rows["epoch"].diff().iloc[1:]
        assert ((steps == 1) | rows["restored_from"].iloc[1:].notna()).all()
    # The config schedule: every epoch records the lr it trained with, and an exploiting trial's lr is a
    # perturbed one, none of the lrs the trials started with (their epoch-1 rows: no restore comes before
    # epoch 2). Were the mutation ignored, the exploit would carry its donor's lr, one of those. (Ray has
    # been seen to drop a trial's pre-exploit rows; a dropped row only leaves a value out of `started`.)
    assert history["lr"].notna().all()
    started = set(history.loc[history["epoch"] == 1, "lr"])
    assert len(started) >= 2  # the seeded draws differ, and rows of the first epoch were kept
    assert not started & set(exploits["lr"]), (started, exploits[["trial_id", "restored_from", "lr"]])
    # Each restore from another trial was an exploit the scheduler recorded: who copied whom, and the lr
    # it perturbed; nobody was stopped.
    rows = decisions(tmp_path, "pbt")
    assert {row["decision"] for row in rows} == {"exploit"}
    copied = {(row["trial_id"], row["clone_of"]) for row in rows}
    assert set(zip(exploits["trial_id"], exploits["restored_from"])) <= copied
    assert all(set(row["changes"]) == {"lr"} and row["value"] <= row["cutoff"] for row in rows)
    assert trials["stopped_because"].isna().all()


# A trial's first report comes ~15 s after it is asked for (Ray Train's start-up), more while the other
# test worker runs Ray too: a budget of 15 s could end a loaded run before any trial reported.
BUDGET = "30s"


def test_optuna_with_median_stopping_and_a_time_budget(tuner_here, tmp_path):
    path = space(tmp_path, "long", epochs=10000, num_samples=50, lr="tune.loguniform(1e-5, 3e-2)")
    started = time.monotonic()
    trials, history, out = run_with_output(
        tuner_here,
        tmp_path,
        path,
        "--search",
        "optuna",
        "--scheduler",
        "median",
        "--time-budget",
        BUDGET,
        "--name",
        "optuna_median",
    )
    assert time.monotonic() - started < 120  # the budget's trials plus Ray's start-up and teardown
    assert 1 <= len(trials) < 50
    assert (trials["epochs"] < 10000).all()  # ~40 epochs/s here: the budget ends every trial early
    assert set(trials["status"]) <= {"stopped early", "not started"}
    # The budget ended the run, and the live view, the summary and `tuner list` say so and count alike.
    final, summary = ended_by(out, 50)
    done = int((trials["status"] == "stopped early").sum())
    counts = f"{done} stopped early, {50 - done} not started"
    assert final.startswith(f"{done}/50 trials done · {done} stopped early · {50 - done} not started"), final
    assert f"stopped: time budget {BUDGET} reached" in out.splitlines()
    assert summary == f"stopped:    time budget {BUDGET} reached; {done} of 50 trials done ({counts})"
    listed = run_tuner("list", "results", cwd=tmp_path).stdout
    assert any("| stopped " in line and counts in line for line in listed.splitlines()), listed
    # Why: the median rule's comparison where it stopped a trial, the time budget for the rest.
    rows = decisions(tmp_path, "optuna_median")
    assert all(row["scheduler"] == "median" for row in rows)
    assert all((row["value"] < row["cutoff"]) == (row["decision"] == "stop") for row in rows)
    by_rule = {row["trial_id"] for row in rows if row["decision"] == "stop"}
    for _, trial in trials[trials["status"] == "stopped early"].iterrows():
        expected = "median: best val_acc " if trial["trial_id"] in by_rule else f"time budget {BUDGET} reached"
        assert trial["stopped_because"].startswith(expected), trial["stopped_because"]


def test_a_time_budget_that_ends_before_any_report_leaves_every_trial_not_started(tuner_here, tmp_path):
    """Ray's record of a trial it created but that never reported is not empty (its id, then its actor's
    host and pid): the report reads it as not started, as the live view does, not as finished."""
    path = space(tmp_path, "short", epochs=10000, num_samples=4)
    result = tuner_here(
        "run", path, "--time-budget", "1s", "--name", "short", "--storage-path", "results", cwd=tmp_path
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0/4 trials done · 4 not started" in result.stdout, result.stdout
    assert "stopped:    time budget 1s reached; 0 of 4 trials done (4 not started)" in result.stdout.splitlines()
    trials = pd.read_csv(tmp_path / "results" / "short" / "trials.csv")
    assert set(trials["status"]) == {"not started"}, trials
    assert trials["epochs"].eq(0).all()


def test_hyperopt_with_hyperband_and_a_stop_condition(tuner_here, tmp_path):
    path = space(tmp_path, "stop", epochs=30, num_samples=8, lr="tune.loguniform(1e-2, 3e-2)")
    trials, history, out = run_with_output(
        tuner_here,
        tmp_path,
        path,
        "--search",
        "hyperopt",
        "--scheduler",
        "hyperband",
        "--stop",
        "val_acc>=0.8",
        "--name",
        "hyperopt_stop",
    )
    assert trials.iloc[0]["best_val_acc"] >= 0.8
    assert history["epoch"].max() < 30  # nobody trained on after the target was reached
    # Which trial reached it, the same in the live view and the summary; the live view's best is the
    # summary's best trial.
    final, summary = ended_by(out, 8)
    reached = [line for line in out.splitlines() if line.startswith("stopped: val_acc>=0.8 reached by trial ")]
    assert len(reached) == 1, out
    by = reached[0].rsplit(" ", 1)[-1]
    assert summary.startswith(f"stopped:    val_acc>=0.8 reached by trial {by}; "), summary
    assert trials.set_index("trial_id").loc[by, "best_val_acc"] >= 0.8
    ranked = trials[trials["status"].isin(["finished", "stopped early", "paused"])]  # what the summary ranks
    assert f"best {ranked.iloc[0]['trial_id']} val_acc=" in final
    assert f"best trial: {ranked.iloc[0]['trial_id']} " in out


def test_bohb(tuner_here, tmp_path):
    path = space(tmp_path, "bohb_space", epochs=3, num_samples=4, lr="tune.loguniform(1e-4, 3e-2)")
    trials, history = run(tuner_here, tmp_path, path, "--search", "bohb", "--name", "bohb")
    assert len(trials) == 4 and trials["best_val_acc"].notna().all()
    # HyperBand pauses trials at rung boundaries; with only 4 samples some brackets never fill.
    assert set(trials["status"]) <= {"finished", "stopped early", "paused"}
    for row in decisions(tmp_path, "bohb"):  # the rungs of brackets that filled, if any did
        assert row["scheduler"] == "bohb"
        assert row["value"] <= row["cutoff"] if row["decision"] == "stop" else row["value"] >= row["cutoff"]


def test_search_auto_runs_a_small_finite_space_whole_and_says_so(tuner_here, tmp_path):
    path = space(tmp_path, "finite", epochs=1, num_samples=1, lr="tune.grid_search([1e-3, 1e-2, 3e-2])")  # no rungs
    result = tuner_here("run", path, "--search", "auto", "--name", "auto", "--storage-path", "results", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "tuner: search auto: every one of the space's 6 configs once, in random order (a finite space of <= 16 configs)"
    ) in result.stdout
    trials = pd.read_csv(tmp_path / "results" / "auto" / "trials.csv")
    assert sorted(zip(trials["lr"], trials["hidden"])) == sorted(
        (lr, hidden) for lr in (1e-3, 1e-2, 3e-2) for hidden in (16, 32)
    )


def test_optuna_with_two_objectives_a_constraint_and_pareto_asha(tuner_here, tmp_path):
    """Multi-objective TPE, ASHA by Pareto front, a constraint: lr=1e-5 trials are worse in both val_acc and
    val_loss and break val_loss <= 1.5 (they stay near ln 10 = 2.3), so they rank last and may be stopped."""
    path = space(tmp_path, "two", epochs=3, num_samples=6, lr="tune.choice([1e-5, 3e-2])")
    trials, history, out = run_with_output(
        tuner_here,
        tmp_path,
        path,
        "--search",
        "optuna",
        "--scheduler",
        "asha",
        "--metric",
        "val_acc,val_loss",
        "--mode",
        "max,min",
        "--constraints",
        "val_loss<=1.5",
        "--max-concurrent",
        "2",
        "--name",
        "two",
    )
    assert "tuner: asha compares trials at each rung by Pareto front" in out
    assert len(trials) == 6 and {"best_val_acc", "best_val_loss", "pareto_rank", "feasible"} <= set(trials.columns)
    assert trials["feasible"].tolist() == sorted(trials["feasible"], reverse=True)  # feasible ones first
    assert (trials["feasible"] == (trials["val_loss"] <= 1.5)).all()
    assert (trials.loc[trials["feasible"], "lr"] == 3e-2).all()
    # Only dominated trials are stopped: at the epoch it stopped, another trial was at least as good in
    # both objectives and better in one.
    at = history.set_index(["trial_id", "epoch"])[["val_acc", "val_loss"]]
    for _, trial in trials[trials["status"] == "stopped early"].iterrows():
        mine = at.loc[(trial["trial_id"], trial["epochs"])]
        others = history[(history["epoch"] == trial["epochs"]) & (history["trial_id"] != trial["trial_id"])]
        assert (
            (others["val_acc"] >= mine["val_acc"])
            & (others["val_loss"] <= mine["val_loss"])
            & ((others["val_acc"] > mine["val_acc"]) | (others["val_loss"] < mine["val_loss"]))
        ).any(), (trial["trial_id"], history)
        # ... and it says so: the rung's count of trials on fronts ahead of it, recorded as it was decided.
        assert f"at epoch {trial['epochs']} (rung " in trial["stopped_because"], trial["stopped_because"]
        assert "lie on Pareto fronts of val_acc, val_loss ahead of it, at least 1/3" in trial["stopped_because"]
    assert (trials.loc[trials["status"] != "stopped early", "stopped_because"].fillna("") == "").all()
    if trials["feasible"].any():
        assert trials.iloc[0]["pareto_rank"] == 1
        front = trials[trials["feasible"] & (trials["pareto_rank"] == 1)]
        on_front = f"{len(front)} trial" + ("" if len(front) == 1 else "s")  # `1 trial`, `2 trials`
        assert f"pareto front: {on_front} (val_acc max, val_loss min)" in out
    feasible = int(trials["feasible"].sum())
    assert f"feasible:   {feasible} of 6 trials meet val_loss<=1.5" in out
    from tuner.ray_compat import PICKLED_BY_PATH
    from tuner.results import analysis, html_report

    # The searcher and the scheduler Ray pickles into the saved state are at tuner's stable paths.
    saved = b"".join(path.read_bytes() for path in (tmp_path / "results" / "two").iterdir() if path.is_file())
    named = {name.decode() for name in re.findall(rb"tuner\.[A-Za-z_.]+", saved)}
    assert {"tuner.search.pareto_asha", "tuner.search.optuna_objectives"} <= named <= set(PICKLED_BY_PATH), named
    experiment = analysis.load(str(tmp_path / "results" / "two"))
    page = html_report._page(experiment.path, experiment.trials, experiment.history, experiment.meta)
    assert "<h2>Pareto front</h2>" in page and 'alt="Pareto front"' in page
    # The importance of the hyperparameters for each objective, the primary first.
    assert page.index("<h3>for val_acc (max)</h3>") < page.index("<h3>for val_loss (min)</h3>")


def test_a_conditional_space_gives_each_trial_only_its_active_keys(tuner_here, tmp_path):
    """The shipped example (its model reads width_2/width_3 and its optimizer momentum or beta2 only
    when active: an inactive key in a config would be read by nothing, a missing active one a KeyError)
    with adam pinned, so momentum is active in no trial."""
    trials, _, out = run_with_output(
        tuner_here,
        tmp_path,
        "digits_conditional",
        *("--search", "random", "--num-samples", "4", "--epochs", "1", "--set", "optimizer=adam"),
        *("--seed", "0", "--name", "conditional"),
    )
    experiment = tmp_path / "results" / "conditional"
    assert len(trials) == 4 and (trials["status"] == "finished").all()
    configs = [json.loads(path.read_text()) for path in experiment.glob("*/params.json")]
    assert len(configs) == 4
    for config in configs:
        active = {"optimizer", "lr", "beta2", "layers", "width_1"}
        active |= {"width_2"} if config["layers"] >= 2 else set()
        assert set(config) == active | ({"width_3"} if config["layers"] == 3 else set()), config
    # Inactive keys are blank cells, not values; integers stay integers beside them.
    assert trials["momentum"].isna().all() and trials["beta2"].notna().all()
    assert (trials["width_3"].isna() == (trials["layers"] != 3)).all() and trials["width_3"].isna().any()
    assert (trials["width_2"].isna() == (trials["layers"] < 2)).all()
    parquet = pd.read_parquet(experiment / "trials.parquet")
    assert str(parquet["width_3"].dtype) == "Int64"
    # momentum was in no trial's config, so no trial could read it: no warning.
    assert "no trial read" not in out
    assert json.loads((experiment / "tuner.json").read_text())["unread_params_warning"] is None
    best = [line for line in out.splitlines() if line.startswith("best config:")][0]
    assert "momentum" not in best and "nan" not in best
