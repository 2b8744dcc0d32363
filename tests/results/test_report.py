"""The per-epoch history tuner reports: what a restore makes of Ray's result rows."""

import pandas as pd

from tuner.results.report import _history, rank


def _rows(*rows: tuple) -> list[dict]:
    columns = ["epoch", "val_acc", "restored_from", "restored_epoch"]
    return [dict(zip(columns, row)) for row in rows]


def _epochs(history: pd.DataFrame, trial_id: str) -> list[int]:
    return history[history["trial_id"] == trial_id]["epoch"].tolist()


def test_an_epoch_rerun_after_a_restore_replaces_the_lost_run():
    # Epoch 5 was recorded, then the driver died before its checkpoint was registered: the trial
    # resumed from epoch 4 and ran epoch 5 again.
    rows = _rows((4, 0.6, None, None), (5, 0.64, None, None), (5, 0.65, "t1", 4), (6, 0.7, None, None))
    history, metrics = _history({"t1": rows}, ["t1"], [])
    assert history["epoch"].tolist() == [4, 5, 6]
    assert history["val_acc"].tolist() == [0.6, 0.65, 0.7]
    assert metrics == ["val_acc"]


def test_a_restore_drops_only_its_own_trials_earlier_rows():
    # The experiment's rows are one frame: t1's rerun of epoch 5 leaves t2's epoch 5, read before it, alone.
    rerun = _rows((4, 0.6, None, None), (5, 0.64, None, None), (5, 0.65, "t1", 4))
    other = _rows((4, 0.5, None, None), (5, 0.55, None, None))
    history, _ = _history({"t2": other, "t1": rerun}, ["t2", "t1"], [])
    assert _epochs(history, "t2") == [4, 5]
    assert _epochs(history, "t1") == [4, 5]
    assert history[history["trial_id"] == "t1"]["val_acc"].tolist() == [0.6, 0.65]


def test_a_restore_from_another_trial_keeps_both_branches():
    # PBT: t1 took over t2's epoch-2 checkpoint; its own earlier epochs stay in its history.
    rows = _rows((1, 0.3, None, None), (2, 0.4, None, None), (3, 0.5, "t2", 2))
    assert _history({"t1": rows}, ["t1"], [])[0]["epoch"].tolist() == [1, 2, 3]


def test_a_restore_after_a_pause_drops_nothing():
    rows = _rows((1, 0.3, None, None), (2, 0.4, None, None), (3, 0.5, "t1", 2))
    assert _history({"t1": rows}, ["t1"], [])[0]["epoch"].tolist() == [1, 2, 3]


def test_every_reported_metric_is_a_column_and_nested_configs_are_flattened():
    from tuner.results.report import metric_names
    from tuner.spec.param_space import flatten

    frame = pd.DataFrame(
        [
            {
                "epoch": 1,
                "val_rmse": 3.0,
                "val_mae": 2.0,
                "train_loss": 1.0,
                "world_size": 1,
                "time_this_iter_s": 0.1,
                "config_keys_read": "lr",
                "checkpoint_dir_name": "c",
                "config/net/width": 8,
                "config/layers": [64, 64],
                "config/lr": 0.1,
            }
        ]
    )
    assert metric_names([frame]) == ["val_rmse", "val_mae", "train_loss"]
    assert flatten({"lr": 0.1, "net": {"width": 8, "act": "relu"}, "layers": [64, 64]}) == {
        "lr": 0.1,
        "net/width": 8,
        "net/act": "relu",
        "layers": [64, 64],
    }
    # As Ray's JSON logger writes a row: the config nested.
    row = {key: value for key, value in frame.iloc[0].items() if not key.startswith("config/")}
    row["config"] = {"net": {"width": 8}, "layers": [64, 64], "lr": 0.1}
    history, metrics = _history({"t1": [row]}, ["t1"], ["layers", "lr", "net/width"])
    assert metrics == ["val_rmse", "val_mae", "train_loss"]
    assert history.loc[0, "net/width"] == 8 and history.loc[0, "layers"] == "[64, 64]"  # a list as JSON text
    assert list(history.columns[:5]) == ["trial_id", "epoch", "val_rmse", "val_mae", "train_loss"]


def test_ranking_puts_the_best_first_breaks_ties_by_trial_id_and_unscored_trials_last():
    trials = pd.DataFrame(
        {
            "trial_id": ["a_00003", "a_00001", "a_00002", "a_00000", "a_00004"],
            "best_val_acc": [0.97, 0.97, None, 0.5, 0.97],
        }
    )
    assert rank(trials, "val_acc", "max")["trial_id"].tolist() == [
        "a_00001",
        "a_00003",
        "a_00004",
        "a_00000",
        "a_00002",
    ]
    by_loss = trials.rename(columns={"best_val_acc": "best_val_loss"})
    ranked = rank(by_loss, "val_loss", "min")
    assert ranked["trial_id"].tolist() == ["a_00000", "a_00001", "a_00003", "a_00004", "a_00002"]
    assert ranked["rank"].tolist() == [1, 2, 3, 4, 5]
