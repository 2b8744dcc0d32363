"""Local storage replaces files whole: a rewrite that fails keeps what the file recorded.

The first test is the failure CI found: Ray's own driver upload (several files at once) onto a full
disk. With pyarrow's LocalFileSystem in its place, a trial's result.json in storage went from 5 rows to
0 in about 1 upload of 3 (the space its truncation freed went to a progress.csv written beside it).
"""

import gc
import json
import pickle
from pathlib import Path

import pyarrow.fs as pafs
from ray.train import Checkpoint
from ray.train._internal.storage import _upload_to_fs_path

from tests.conftest import fill
from tuner.storage.whole_files import checkpoint_directory, is_whole_file, ray_storage, whole_file_filesystem

TRIALS = [f"trial_{index}" for index in range(8)]
ROW = {"val_acc": 0.5, "config": "x" * 700}


def _write_logs(experiment: Path, rows: int) -> None:
    for trial in TRIALS:
        (experiment / trial).mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({**ROW, "epoch": epoch}) for epoch in range(1, rows + 1)]
        (experiment / trial / "result.json").write_text("".join(f"{line}\n" for line in lines))
        (experiment / trial / "progress.csv").write_text("".join(f"{epoch},{'y' * 600}\n" for epoch in range(rows)))


def _rows(experiment: Path) -> dict[str, int]:
    """Rows that parse per trial: a write cut short leaves a torn last line."""
    counts = {}
    for trial in TRIALS:
        lines = (experiment / trial / "result.json").read_text().splitlines()
        counts[trial] = sum(1 for line in lines if line.endswith("}"))
    return counts


def test_ray_uploading_onto_a_full_disk_keeps_every_recorded_row(tmp_path, small_disk):
    fs, staging, experiment = whole_file_filesystem(), tmp_path / "staging", small_disk / "experiment"
    _write_logs(staging, rows=9)
    for attempt in range(12):  # the loss it guards against is a race: one upload in 3 lost rows
        _write_logs(experiment, rows=5)
        fill(small_disk, "filler")
        try:
            _upload_to_fs_path(str(staging), fs, str(experiment))
        except OSError:
            pass  # Ray's syncer logs this and tries again at the next sync
        assert _rows(experiment) == dict.fromkeys(TRIALS, 5), f"upload {attempt}"
        assert not list(experiment.rglob(".*.tmp")), "a temporary file left behind"
        (small_disk / "filler").unlink()

    _upload_to_fs_path(str(staging), fs, str(experiment))  # space again: the next sync completes
    assert _rows(experiment) == dict.fromkeys(TRIALS, 9)


def test_a_write_given_up_midway_leaves_the_old_file(tmp_path):
    recorded = tmp_path / "result.json"
    for fs, left in ((whole_file_filesystem(), b"recorded"), (pafs.LocalFileSystem(), b"torn")):
        recorded.write_bytes(b"recorded")
        stream = fs.open_output_stream(str(recorded))
        stream.write(b"torn")
        del stream  # abandoned unclosed, as pyarrow's copy leaves a stream whose write failed
        gc.collect()
        assert recorded.read_bytes() == left, fs
    assert [path.name for path in tmp_path.iterdir()] == ["result.json"]

    stream = whole_file_filesystem().open_output_stream(str(recorded))
    stream.write(b"rewritten")
    stream.close()
    assert recorded.read_bytes() == b"rewritten"


def test_ray_gets_whole_files_for_local_storage_and_the_store_itself_for_an_object_store(tmp_path):
    path, fs = ray_storage(f"file://{tmp_path}")
    assert path == str(tmp_path) and fs is not None and is_whole_file(fs)
    assert is_whole_file(pickle.loads(pickle.dumps(fs)))  # as Ray hands it to each trial's process
    assert ray_storage("s3://bucket/experiments?endpoint_override=127.0.0.1:9000") == (
        "s3://bucket/experiments?endpoint_override=127.0.0.1:9000",
        None,
    )


def test_a_checkpoint_on_whole_file_storage_is_read_in_place(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"weights")
    with checkpoint_directory(Checkpoint(str(tmp_path), filesystem=whole_file_filesystem())) as directory:
        assert directory == str(tmp_path)
