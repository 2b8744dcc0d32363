"""Plots, importances and the HTML report, drawn from one real experiment run in-process.

The frames of that experiment are the input; a few tests change a column of them (a status, a
hyperparameter's values, the scores) to reach a case a 4-trial grid cannot show, which is what the
functions under test take anyway: frames, not Ray.
"""

import dataclasses
import textwrap
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from tests.conftest import TINY_GRID, start_shared_ray
from tuner import RunOptions, run
from tuner.errors import TunerError
from tuner.results import analysis, html_report, stops, visualization
from tuner.results.importance import importance
from tuner.search.decision import Decision
from tuner.spec import space

IMAGE = "data:image/png;base64,"
# Every test here reads one real experiment that the fixture runs on the module's shared local Ray.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def exp(tmp_path_factory) -> analysis.Experiment:
    """4 trials x 2 epochs of an MLP on digits, through tuner.run as `tuner run` calls it."""
    root = tmp_path_factory.mktemp("visualization")
    (root / "tiny_grid.py").write_text(textwrap.dedent(TINY_GRID))
    start_shared_ray()
    outcome = run(
        space.load(str(root / "tiny_grid.py")),
        RunOptions(storage_path=str(root / "results"), name="grid", seed=3, verbose=0),
    )
    return analysis.load(outcome.experiment_path)


def many(exp: analysis.Experiment, copies: int = 3) -> pd.DataFrame:
    """The trials repeated under new ids, for cases that need more distinct values than 4 trials have."""
    frames = [exp.trials.assign(trial_id=exp.trials["trial_id"] + f"_{i}") for i in range(copies)]
    trials = pd.concat(frames, ignore_index=True)
    return trials.assign(rank=range(1, len(trials) + 1))


def failed(exp: analysis.Experiment) -> pd.DataFrame:
    return exp.trials.assign(status="error", error="RuntimeError: out of <memory> & more")


def labelled(ax) -> bool:
    return bool(ax.get_xlabel()) and bool(ax.get_ylabel())


def test_the_experiment_is_the_grid(exp):
    assert len(exp.trials) == 4 and (exp.trials["status"] == "finished").all()
    assert len(exp.history) == 8


def test_learning_curves_show_the_top_trials_with_their_ids(exp):
    fig = visualization.plot_learning_curves(exp.trials, exp.history, exp.meta, top=2)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("epoch", "val_acc")
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    best_two = exp.trials["trial_id"].head(2).tolist()
    assert len(legend) == 2 and all(trial in entry for trial, entry in zip(best_two, legend))
    assert "lr=" in legend[0] and "hidden=" in legend[0]  # the config, not only the id
    best_curve = exp.history[exp.history["trial_id"] == best_two[0]].sort_values("epoch")["val_acc"]
    assert np.allclose(ax.lines[0].get_ydata(), best_curve)


def test_learning_curves_of_another_metric(exp):
    fig = exp.plot_learning_curves(metric="train_loss", top=10)
    assert fig.axes[0].get_ylabel() == "train_loss"
    assert len(fig.axes[0].lines) == 4


def test_param_plot_has_one_labelled_subplot_per_hyperparameter(exp):
    fig = visualization.plot_param(exp.trials, exp.meta)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_xlabel() for ax in shown] == ["batch_size", "hidden", "lr"]
    assert all(ax.get_ylabel() == "best_val_acc" for ax in shown)
    lr = shown[2]
    assert [t.get_text() for t in lr.get_xticklabels()] == ["0.001", "0.01"]  # two values: a box each
    assert [ax.get_xlabel() for ax in exp.plot_param("lr").axes] == ["lr"]


def test_param_plot_uses_a_log_axis_for_numbers_spanning_decades(exp):
    trials = many(exp)
    wide = trials.assign(lr=np.geomspace(1e-4, 1e-1, len(trials)))
    narrow = trials.assign(lr=np.linspace(0.01, 0.05, len(trials)))
    assert visualization.plot_param(wide, exp.meta, param="lr").axes[0].get_xscale() == "log"
    assert visualization.plot_param(narrow, exp.meta, param="lr").axes[0].get_xscale() == "linear"


def test_param_plot_boxes_strings(exp):
    trials = many(exp).assign(optimizer=["adam", "sgd", "adamw"] * 4)
    fig = visualization.plot_param(
        trials, dataclasses.replace(exp.meta, params=[*exp.params, "optimizer"]), param="optimizer"
    )
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["adam", "adamw", "sgd"]


def test_param_plot_says_when_a_hyperparameter_is_constant(exp):
    fig = visualization.plot_param(exp.trials.assign(batch_size=64), exp.meta, param="batch_size")
    assert "constant: batch_size = 64" in " ".join(t.get_text() for t in fig.axes[0].texts)
    assert labelled(fig.axes[0])


def test_param_plot_of_an_unknown_hyperparameter(exp):
    with pytest.raises(TunerError, match="'momentum' is not a hyperparameter.*batch_size, hidden, lr"):
        exp.plot_param("momentum")


def test_parallel_coordinates_has_an_axis_per_hyperparameter_and_the_score(exp):
    fig = exp.plot_parallel_coordinates()
    ax, colorbar = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["batch_size", "hidden", "lr", "best_val_acc"]
    assert colorbar.get_ylabel() == "best_val_acc"
    # One collection holds every trial's line (a line each would cost seconds at thousands of trials).
    (collection,) = ax.collections
    trial_lines = [segment for segment in collection.get_segments() if len(segment) == 4]
    assert len(trial_lines) == 4 and all(0 <= y <= 1 for segment in trial_lines for _, y in segment)
    labels = {t.get_text() for t in ax.texts}
    assert {"32", "64", "0.001", "0.01"} <= labels  # real values, not the [0, 1] positions


def test_early_stopping_shows_epochs_run_per_trial_by_rank(exp):
    trials = exp.trials.copy()
    trials.loc[3, ["status", "epochs"]] = ["stopped early", 1]
    fig = visualization.plot_early_stopping(trials, exp.history, exp.meta)
    bars, curves = fig.axes[:2]
    assert labelled(bars) and labelled(curves)
    assert [p.get_width() for p in bars.patches] == [2, 2, 2, 1]
    ticks = [t.get_text() for t in bars.get_yticklabels()]
    assert all(trial in tick for trial, tick in zip(trials["trial_id"], ticks))
    legend = [t.get_text() for t in curves.get_legend().get_texts()]
    assert {"finished", "stopped early", "budget: 2 epochs"} <= set(legend)


def test_early_stopping_marks_the_cutoffs_the_scheduler_compared_with(exp):
    trials = exp.trials.copy()
    trials.loc[3, ["status", "epochs"]] = ["stopped early", 1]
    rows = [
        Decision(trial_id=trial, metric="val_acc", mode="max", epoch=1, rung=1, **row)
        for trial, row in zip(
            trials["trial_id"],
            [
                {"decision": "continue", "value": 0.9, "cutoff": None},
                {"decision": "continue", "value": 0.8, "cutoff": 0.9},
                {"decision": "continue", "value": 0.7, "cutoff": 0.85},
                {"decision": "stop", "value": 0.2, "cutoff": 0.8},
            ],
        )
    ]
    fig = visualization.plot_early_stopping(trials, exp.history, exp.meta, stops.frame(rows))
    bars, curves = fig.axes[:2]
    marks = {line.get_color(): sorted(line.get_ydata()) for line in curves.get_lines() if line.get_marker() == "_"}
    assert marks == {"black": [0.8], "0.6": [0.85, 0.9]}  # the first at the rung had nothing to compare
    assert [t.get_text() for t in bars.texts] == ["0.2 < 0.8"]  # on the stopped trial's bar
    legend = [t.get_text() for t in curves.get_legend().get_texts()]
    assert {"cutoff: stopped", "cutoff: went on"} <= set(legend)


def test_plots_of_an_experiment_without_a_scored_trial(exp):
    trials = failed(exp)
    for fig in (
        visualization.plot_learning_curves(trials, exp.history, exp.meta),
        visualization.plot_param(trials, exp.meta),
        visualization.plot_parallel_coordinates(trials, exp.meta),
    ):
        assert "no trial has a score" in fig.get_suptitle()
    stopping = visualization.plot_early_stopping(trials, exp.history, exp.meta)
    assert "no trial has a score" in stopping.get_suptitle()


def test_plots_of_a_single_trial(exp):
    one = exp.trials.head(1)
    history = exp.history[exp.history["trial_id"] == one["trial_id"].iloc[0]]
    assert len(visualization.plot_learning_curves(one, history, exp.meta).axes[0].lines) == 1
    assert all(
        "constant" in ax.texts[0].get_text() for ax in visualization.plot_param(one, exp.meta).axes if ax.get_visible()
    )
    assert len(visualization.plot_parallel_coordinates(one, exp.meta).axes) == 2
    assert len(visualization.plot_early_stopping(one, history, exp.meta).axes[0].patches) == 1


def test_importance_has_a_finite_row_per_hyperparameter(exp):
    frame = exp.importance()
    assert list(frame.columns) == ["param", "importance", "low", "high"]
    assert sorted(frame["param"]) == sorted(exp.params)
    assert np.isfinite(frame[["importance", "low", "high"]].to_numpy()).all()
    assert ((frame["low"] >= 0) & (frame["high"] <= 1)).all()
    assert frame["importance"].is_monotonic_decreasing


def test_importance_finds_the_hyperparameter_the_score_depends_on(exp):
    trials = many(exp, copies=4)
    rng = np.random.default_rng(1)
    trials = trials.assign(
        lr=rng.choice([0.001, 0.003, 0.01, 0.03], len(trials)), hidden=rng.choice([16, 32], len(trials)), batch_size=64
    )
    trials["best_val_acc"] = 0.9 - 5 * (trials["lr"] - 0.01).abs() + rng.normal(0, 0.001, len(trials))
    frame = importance(trials, exp.meta).set_index("param")
    assert frame.index[0] == "lr" and frame.loc["lr", "importance"] > 10 * abs(frame.loc["hidden", "importance"])
    assert frame.loc["batch_size", ["importance", "low", "high"]].tolist() == [0.0, 0.0, 0.0]  # one value: 0


def test_importance_needs_four_scored_trials(exp):
    trials = exp.trials.copy()
    trials.loc[0, "status"] = "error"
    with pytest.raises(TunerError, match="at least 4 scored trials.*has 3"):
        importance(trials, exp.meta)


def test_importance_plot(exp):
    fig = exp.plot_importance()
    ax = fig.axes[0]
    assert labelled(ax)
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(exp.params)


class _Checker(HTMLParser):
    """Fails on a closing tag that does not match the open one, and keeps the text shown."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, f"</{tag}> closes nothing open"

    def handle_data(self, data):
        self.text.append(data)


def parsed(page: str) -> str:
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.open == [], f"unclosed: {checker.open}"
    return " ".join(checker.text)


def test_html_report_is_one_self_contained_page(exp):
    path = html_report.write(exp.path, exp.trials, exp.history, exp.meta)
    assert path == f"{exp.path}/report.html"
    with open(path, encoding="utf-8") as page_file:
        page = page_file.read()
    assert 'src="http' not in page and "<script" not in page and "<link" not in page
    assert page.count(IMAGE) == 5  # best so far, curves, per-param, parallel coordinates, importance
    text = parsed(page)
    assert "Early stopping" not in text  # fifo, every trial ran every epoch: no section that says only that
    assert "tiny_grid" in text and "finished" in text
    assert all(trial in text for trial in exp.trials["trial_id"])
    assert exp.best()["trial_id"] in text.split("Ranked trials")[0]  # named in the best-trial section
    assert "No trial failed." in text


def test_the_early_stopping_section_shows_where_a_trial_was_stopped_early(exp):
    trials = exp.trials.copy()
    trials.loc[0, "status"] = "stopped early"  # as --stop, the time budget or a scheduler leaves it
    text = parsed(html_report._page(exp.path, trials, exp.history, exp.meta))
    assert "Early stopping" in text


def test_html_report_of_an_experiment_whose_trials_all_failed(exp, tmp_path):
    trials = failed(exp)
    trials.loc[1, ["status", "error"]] = ["diverged", ""]
    page = open(html_report.write(str(tmp_path), trials, exp.history, exp.meta), encoding="utf-8").read()
    assert page.count(IMAGE) == 0  # no score to plot, and no trial stopped early
    assert "out of &lt;memory&gt; &amp; more" in page and "<memory>" not in page
    text = parsed(page)
    assert "No trial has a score" in text and "this experiment has 0" in text
    failures = text.split("Failed trials")[-1]
    assert all(trial in failures for trial in trials["trial_id"])
    assert failures.count("RuntimeError: out of <memory> & more") == 3
    assert "non-finite loss in epoch 2" in failures


def test_two_objectives_and_a_constraint_get_a_pareto_plot_and_section_and_one_objective_none(exp):
    from tuner.results import objectives
    from tuner.settings import Objective

    assert "Pareto front" not in html_report._page(exp.path, exp.trials, exp.history, exp.meta)
    cut = float(exp.trials["val_loss"].median())
    objective = Objective(["val_acc", "val_loss"], ["max", "min"], constraints=[f"val_loss <= {cut}"])
    meta = dataclasses.replace(exp.meta, objective=objective)
    best_loss = exp.history.groupby("trial_id")["val_loss"].min()
    trials = objectives.rank(
        exp.trials.drop(columns="rank").assign(best_val_loss=exp.trials["trial_id"].map(best_loss)), objective
    )
    assert trials["feasible"].sum() == (exp.trials["val_loss"] <= cut).sum() >= 1
    fig = visualization.plot_pareto(trials, meta)
    ax = fig.axes[0]
    assert labelled(ax) and ax.get_xlabel() == "best val_acc (max)" and ax.get_ylabel() == "best val_loss (min)"
    front = objectives.front(trials, objective)
    assert ax.get_title().startswith(f"Pareto front: {len(front)} of 4 scored trials")
    assert {text.get_text() for text in ax.get_legend().get_texts()} >= {"Pareto front", "breaks a constraint"}
    page = html_report._page(exp.path, trials, exp.history, meta)
    assert "<h2>Pareto front</h2>" in page and "objectives val_acc (max), val_loss (min)" in page
    with pytest.raises(ValueError, match="'val_lost' is not an objective"):
        visualization.plot_pareto(trials, meta, y="val_lost")


def test_best_so_far_steps_to_each_new_best_in_the_order_trials_ended(exp):
    from tuner.results import visualization

    fig = visualization.plot_best_so_far(exp.trials, exp.history, exp.meta)
    ax = fig.axes[0]
    ended = exp.history.groupby("trial_id")["reported_at"].max()
    scores = exp.trials.assign(ended=exp.trials["trial_id"].map(ended)).sort_values("ended")["best_val_acc"]
    (best,) = [line for line in ax.lines if line.get_label() == "best so far"]
    assert np.allclose(best.get_ydata(), np.maximum.accumulate(scores.to_numpy(float)))
    assert "so far over 4 scored trials" in ax.get_title()
