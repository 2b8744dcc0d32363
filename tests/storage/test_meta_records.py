"""tuner.json's typed records (how the trials got GPUs, a warm start, each extension): a file written by
an earlier version, which kept them as plain JSON objects, reads as the same records and is written
back as the same objects; a record that lacks a key it needs is a damaged file, said in one line."""

import json
from pathlib import Path

import pytest

from tuner.storage import meta as meta_file
from tuner.storage.meta import Damaged, Extension, GpuRecord, WarmStartRecord

# As tuner wrote these fields before they were typed (tuner.json of an extended, warm-started run).
EARLIER = {
    "space": "digits_mlp",
    "params": ["lr"],
    "objective": {"metric": "val_acc", "mode": "max"},
    "gpus": {
        "setting": "auto",
        "gpus_per_worker": 0.0,
        "trials_per_gpu": 0,
        "why": "no GPU in the cluster: the trials train on the CPU",
        "peak_gib": None,
        "gpu_gib": None,
        "step_s": None,
    },
    "warm_start": {"from": "/results/earlier", "trials": 4},
    "extensions": [
        {
            "num_samples": 2,
            "trials": 2,
            "search": "random",
            "seed": 1,
            "started_at": 1765000000.5,
            "previous_state": "experiment_state-2026-12-06_10-00-00.json",
        }
    ],
    "total_trials": 6,
}


def _written(tmp_path: Path, record: dict) -> str:
    (tmp_path / meta_file.FILE).write_text(json.dumps(record))
    return str(tmp_path)


def test_an_earlier_file_reads_as_records_and_is_written_back_unchanged(tmp_path):
    meta = meta_file.read(_written(tmp_path, EARLIER))
    assert meta.gpus == GpuRecord("auto", 0.0, 0, "no GPU in the cluster: the trials train on the CPU")
    assert meta.warm_start == WarmStartRecord(source="/results/earlier", trials=4)
    assert meta.extensions == [Extension(2, 2, "random", 1, 1765000000.5, "experiment_state-2026-12-06_10-00-00.json")]
    meta_file.write(str(tmp_path), meta)
    again = json.loads((tmp_path / meta_file.FILE).read_text())
    for field in ("gpus", "warm_start", "extensions"):
        assert again[field] == EARLIER[field], field
    assert meta_file.read(str(tmp_path)) == meta


def test_the_latest_run_of_an_extended_experiment_counts_its_own_trials(tmp_path):
    meta = meta_file.read(_written(tmp_path, EARLIER))
    assert meta.total_trials == 6 and meta.latest_run().total_trials == 2
    first = meta_file.read(_written(tmp_path, {**EARLIER, "extensions": []}))
    assert first.latest_run() is first


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("warm_start", {"trials": 4}, 'warm_start is {"trials": 4}, not WarmStartRecord | None'),
        ("extensions", [{"num_samples": 2}], 'extensions is [{"num_samples": 2}], not list[Extension]'),
        ("gpus", {**EARLIER["gpus"], "trials_per_gpu": "two"}, "gpus is "),
    ],
)
def test_a_record_without_what_it_needs_is_a_damaged_file(tmp_path, field, value, said):
    with pytest.raises(Damaged) as raised:
        meta_file.read(_written(tmp_path, {**EARLIER, field: value}))
    assert said in str(raised.value) and "\n" not in str(raised.value)
