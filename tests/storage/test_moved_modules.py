"""An experiment saved by tuner before its modules moved into stage folders (`data/flat_layout`: a real
run of `tuner run` at commit 8d24a03, 2 trials x 2 epochs, its derived tables removed) is still read by
`tuner report` and resumed by `tuner resume`: Ray's state names `tuner.experiment.TrialNamer` and the
callbacks by their old module paths."""

import importlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests.conftest import run_tuner
from tuner.results import report
from tuner.storage.moved_modules import MOVED, old_module_paths
from tuner.storage.trial_names import TrialNamer

FLAT_LAYOUT = Path(__file__).parent / "data" / "flat_layout"


def _copy(tmp_path: Path) -> Path:
    experiment = tmp_path / "flat_layout"
    shutil.copytree(FLAT_LAYOUT, experiment)
    meta = json.loads((experiment / "tuner.json").read_text())
    meta["source"] = str(experiment / "space.py")  # where resume finds the space module now
    (experiment / "tuner.json").write_text(json.dumps(meta))
    return experiment


def test_old_paths_lead_to_the_moved_modules_only_while_asked():
    with old_module_paths():
        assert importlib.import_module("tuner.experiment").TrialNamer is TrialNamer
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tuner.experiment")
    assert not hasattr(tuner, "experiment")  # nor as the package's attribute
    for old, new in MOVED.items():  # every target exists: a later move must update this table
        assert importlib.util.find_spec(new) is not None, (old, new)


def test_a_flat_layout_experiment_is_still_reported(tmp_path):
    trials, history = report.read_tables(str(_copy(tmp_path)))
    assert len(trials) == 2 and (trials["status"] == "finished").all()
    assert sorted(trials["lr"]) == [0.003, 0.03] and len(history) == 4
    assert trials["best_val_acc"].notna().all()


@pytest.mark.slow
def test_a_flat_layout_experiment_is_resumed(tmp_path):
    experiment = _copy(tmp_path)
    result = run_tuner("resume", str(experiment), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    trials = pd.read_csv(experiment / "trials.csv")
    assert len(trials) == 2 and (trials["status"] == "finished").all() and (trials["epochs"] == 2).all()
