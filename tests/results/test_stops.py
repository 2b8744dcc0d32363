"""Why each trial stopped, from decisions.jsonl: the file as the driver appends it, and the words the
report and `tuner report --trial` make of its rows."""

import dataclasses
import json

import pyarrow.fs

from tuner.results import stops
from tuner.search.decision import EVERY_DECISION, Decision
from tuner.settings import Objective
from tuner.storage import decisions
from tuner.storage.meta import ExperimentMeta

ASHA_STOP = Decision(
    scheduler="asha",
    trial_id="t1",
    epoch=3,
    metric="val_acc",
    mode="max",
    decision="stop",
    value=0.81,
    cutoff=0.88,
    rung=3,
)


def test_appended_rows_read_back_in_order_past_a_torn_line(tmp_path):
    fs = pyarrow.fs.LocalFileSystem()
    path = f"{tmp_path}/{decisions.DECISIONS_FILE}"
    decisions.append(fs, path, (json.dumps(ASHA_STOP.to_json()) + "\n").encode())
    # A row of a newer tuner (a field this one does not know), one without a trial, a write cut short.
    decisions.append(fs, path, b'{"trial_id": "b", "new": 1}\n{"decision": "stop"}\n{"trial_id": ')
    assert decisions.read(str(tmp_path)) == [ASHA_STOP, Decision("b")]
    assert decisions.read(str(tmp_path / "absent")) == []


def test_a_decision_row_holds_every_decisions_fields_and_the_schedulers_own_that_it_set():
    row = ASHA_STOP.to_json()
    assert set(row) == {*EVERY_DECISION, "rung"} and row["iteration"] is None  # null, not left out
    assert Decision.from_json(json.loads(json.dumps(row))) == ASHA_STOP


def test_each_scheduler_says_what_it_compared():
    assert stops.describe(ASHA_STOP) == "asha: val_acc 0.81 < cutoff 0.88 at epoch 3 (rung 3)"
    went_on = dataclasses.replace(ASHA_STOP, scheduler="hyperband", decision="continue", value=0.9, bracket=1)
    assert stops.describe(went_on) == "hyperband: val_acc 0.9 >= cutoff 0.88 at epoch 3 (rung 3, bracket 1)"
    loss = dataclasses.replace(ASHA_STOP, metric="val_loss", mode="min", value=0.5, cutoff=0.3)
    assert stops.describe(loss) == "asha: val_loss 0.5 > cutoff 0.3 at epoch 3 (rung 3)"
    first = dataclasses.replace(ASHA_STOP, decision="continue", cutoff=None)
    assert stops.describe(first) == "asha: val_acc 0.81 at epoch 3 (rung 3), the first there: nothing to compare"
    median = dataclasses.replace(ASHA_STOP, scheduler="median", compared_with=4)
    assert (
        stops.describe(median) == "median: best val_acc 0.81 < median 0.88 of 4 other trials' running means at epoch 3"
    )
    bohb = dataclasses.replace(ASHA_STOP, scheduler="bohb")
    assert stops.describe(bohb) == "bohb: val_acc 0.81 < 0.88, the worst kept, at epoch 3 (rung 3)"
    exploit = dataclasses.replace(
        ASHA_STOP,
        scheduler="pbt",
        decision="exploit",
        clone_of="t2",
        clone_value=0.95,
        clone_epoch=3,
        changes={"lr": [0.01, 0.012, "* 1.2"]},
    )
    assert stops.describe(exploit) == (
        "pbt: val_acc 0.81 in the bottom quantile (up to 0.88) at epoch 3: copied trial t2 (val_acc 0.95 at "
        "epoch 3); lr 0.01 -> 0.012 (* 1.2)"
    )


def test_stopped_because_is_the_last_stop_of_a_trial_stopped_early_and_empty_otherwise():
    meta = ExperimentMeta(
        space="s", params=[], objective=Objective(metric="val_acc", mode="max"), stopped_by="time budget 15s reached"
    )
    again = dataclasses.replace(ASHA_STOP, epoch=1, rung=1, cutoff=0.9)  # a resumed run judged it again
    rows = [
        dataclasses.replace(ASHA_STOP, decision="continue", cutoff=0.5),
        again,
        dataclasses.replace(ASHA_STOP, trial_id="t2"),
    ]
    stopped = stops.stop_rows(rows)
    assert stops.stopped_because("t1", "stopped early", stopped, meta) == stops.describe(again)
    assert stops.stopped_because("t1", "finished", stopped, meta) == ""
    # Stopped early by no scheduler decision: what ended the run.
    assert stops.stopped_because("t3", "stopped early", stopped, meta) == "time budget 15s reached"
    history = stops.trial_history(rows, "t1")
    assert history["decision"].tolist() == ["continue", "stop"] and list(history.columns) == stops.HISTORY_COLUMNS
