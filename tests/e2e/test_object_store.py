"""Experiments in a real S3-compatible object store (tests/object_store.py: SeaweedFS on 127.0.0.1), in
both forms a user points tuner at a bucket: the endpoint in the URI's query, or in AWS_ENDPOINT_URL (one
experiment through both: the Ray start-ups are the cost).
Faults for real: the driver killed, the store stopped mid-run and started again, wrong credentials.
"""

import io
import json
import os
import re
import shlex
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator

import pandas as pd
import pyarrow.fs as pafs
import pytest

from tests.conftest import free_port, run_tuner
from tests.e2e.test_faults import finish, kill_group, start, wait_until, write_space
from tests.object_store import BUCKET, ObjectStore
from tuner.command import tuner_command
from tuner.storage import filesystem

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    server = ObjectStore(tmp_path_factory.mktemp("object-store"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def checkpoints(store: ObjectStore, experiment: str) -> int:
    """Epochs all trials have checkpointed in the store so far, by checkpoint index (each epoch writes one,
    and tuner's retention keeps only a few, so a count of those on the store can stand still)."""
    latest: dict[str, int] = {}
    for trial, _, rest in (name.partition("/") for name in store.names(experiment)):
        if rest.startswith("checkpoint_") and "/" not in rest:
            latest[trial] = max(latest.get(trial, -1), int(rest.removeprefix("checkpoint_")))
    return sum(1 + index for index in latest.values())


def has_state(store: ObjectStore, experiment: str) -> Callable[[], bool]:
    return lambda: any(name.startswith("experiment_state-") for name in store.names(experiment))


def result_rows(store: ObjectStore, experiment: str) -> dict[str, list[dict]]:
    """Each trial's result.json rows in the store (a torn last line is no row)."""
    recorded = {}
    for name in store.names(experiment):
        if name.endswith("/result.json") and name.count("/") == 1:
            lines = store.read(f"{experiment}/{name}").decode().splitlines()
            recorded[name.split("/")[0]] = [json.loads(line) for line in lines if line.endswith("}")]
    return recorded


def test_uri_form_killed_then_the_store_lost_mid_resume_then_resumed_and_reported(store, tmp_path):
    """`s3://bucket/path?endpoint_override=...&scheme=http` (the bug: the name was joined after the query).
    The driver is SIGKILLed mid-run; `tuner resume` goes on until the store is stopped under it, and fails
    in one line naming the store; with the store back on its port and data, `tuner resume` finishes with
    every epoch once and nothing recorded before lost; report, --html and list read it from the store.
    That last resume and the list take the other form: AWS_ENDPOINT_URL and a plain `s3://bucket/path`."""
    epochs, grid = 40, [0.001, 0.01]
    path = write_space(tmp_path, "stored", epochs=epochs, lr=f"tune.grid_search({grid})")
    env = store.env()
    storage = store.uri("results")
    experiment = store.uri("results/stored")  # the name on the path, the query kept at the end
    inside = "results/stored"

    # No retries: a trial fails at its first write to the stopped store, the error comes ~20 s sooner.
    driver = start(
        tmp_path,
        "run",
        path,
        "--storage-path",
        storage,
        "--name",
        "stored",
        "--max-failures",
        "0",
        "--no-smoke",
        env=env,
    )
    try:
        wait_until(
            lambda: checkpoints(store, inside) >= 3 and has_state(store, inside)(), "3 checkpoints", driver=driver
        )
    finally:
        kill_group(driver)

    before = checkpoints(store, inside)
    driver = start(tmp_path, "resume", experiment, env=env)
    try:
        # More than one epoch per trial: a trial process of the killed run may land one last upload after
        # the count above, and the store stopped before the resume trains tests the resume's start instead.
        wait_until(lambda: checkpoints(store, inside) > before + len(grid), "progress after the kill", driver=driver)
        kept = result_rows(store, inside)
        store.stop()
        code, out, err = finish(driver, timeout=300)
    finally:
        if driver.poll() is None:
            kill_group(driver)
        store.start()
    assert code == 2, out[-2000:] + err[-4000:]
    # Ray's and pyarrow's tracebacks for the failed uploads, snapshots and trials are tuner lines.
    assert "Traceback" not in err and "Unhandled error" not in err, err[-4000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        f"tuner: error: cannot write to {experiment}: the object store at {store.endpoint} does not answer "
        "(connection refused)"
    ), err[-4000:]
    assert last.endswith(
        f"; what was written is kept: once it answers again, then: {tuner_command()} resume {shlex.quote(experiment)}"
    )
    after = result_rows(store, inside)
    for trial, recorded in kept.items():  # nothing recorded before the store went away was lost
        assert after[trial][: len(recorded)] == recorded

    # The other form for the same experiment: the endpoint from the environment, a plain s3:// path.
    plain_env, plain = store.env(AWS_ENDPOINT_URL=f"http://{store.endpoint}"), f"s3://{BUCKET}/results"
    resumed = run_tuner("resume", f"{plain}/stored", cwd=tmp_path, env=plain_env, timeout=400)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    trials = pd.read_csv(io.BytesIO(store.read(f"{inside}/trials.csv")))
    history = pd.read_parquet(io.BytesIO(store.read(f"{inside}/history.parquet")))
    assert sorted(trials["lr"]) == grid and (trials["status"] == "finished").all(), trials
    assert (trials["epochs"] == epochs).all()
    assert not history.duplicated(["trial_id", "epoch"]).any() and len(history) == len(grid) * epochs

    report = run_tuner("report", experiment, "--html", cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    assert "stored: 2 trials (2 finished)" in report.stdout, report.stdout
    assert f"html report: {store.uri('results/stored/report.html')}" in report.stderr
    assert b"<html" in store.read(f"{inside}/report.html")
    listed = run_tuner("list", plain, cwd=tmp_path, env=plain_env)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert any(line.startswith("| stored ") and " finished " in line for line in listed.stdout.splitlines()), (
        listed.stdout
    )


def test_every_hint_of_a_bucket_experiment_runs_as_printed(store, tmp_path):
    """The commands a run's summary and `tuner resume` print for an experiment in a bucket, pasted into a
    shell from another folder: the URI's `&` and `?` quoted, no line for TensorBoard (it reads no
    bucket through pyarrow's URI form); the study page serves the study from the bucket."""
    path = write_space(tmp_path, "hinted", epochs=1, lr="tune.grid_search([0.001, 0.01])")
    env = store.env()
    ran = run_tuner("run", path, "--storage-path", store.uri("hints"), "--name", "hinted", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = dict(line.split(":", 1) for line in ran.stdout.splitlines() if re.match(r"^[a-z ]+: ", line))
    assert "tensorboard" not in lines
    experiment = store.uri("hints/hinted")
    report = lines["report"].split(" (", 1)[1].removesuffix(")")
    hints = [report, lines["html report"].strip()]
    quoted = shlex.split(lines["notebook"].split(", then ", 1)[1])
    assert quoted[0] == f"TUNER_EXPERIMENT={experiment}"  # one word for the shell, the whole URI in it
    resumed = run_tuner("resume", experiment, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = resumed.stdout.strip()
    assert said.startswith(f"nothing to resume: all 2 trials of {experiment} ended"), said
    hints.append(said.split("`")[1])  # see them with `tuner report ...`
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shell = {**os.environ, **env}
    for hint in hints:
        pasted = subprocess.run(hint, shell=True, cwd=elsewhere, env=shell, capture_output=True, text=True, timeout=300)
        assert pasted.returncode == 0, (hint, pasted.stderr[-3000:])
        assert "hinted: 2 trials (2 finished)" in pasted.stdout, (hint, pasted.stdout[-2000:])
    assert b"<html" in store.read("hints/hinted/report.html")
    # The study page, pasted with a port of its own: it serves the study the run uploaded to the bucket.
    port = free_port()
    page = subprocess.Popen(
        f"{lines['study page'].strip()} --port {port}", shell=True, cwd=elsewhere, env=shell, start_new_session=True
    )
    try:
        wait_until(lambda: b'"study_name": "hinted"' in _answer(f"http://127.0.0.1:{port}/api/studies"), "the page")
    finally:
        kill_group(page)


def _answer(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.read()
    except OSError:
        return b""


def test_a_missing_bucket_is_said_as_such_or_made_where_the_uri_allows(store, monkeypatch):
    """The store answers a write into a missing bucket "Access Denied", which would read as wrong
    credentials; pyarrow's own check says what it is, and makes it under allow_bucket_creation=true."""
    for name, value in store.env().items():
        monkeypatch.setenv(name, value)
    missing = f"s3://not-made/results?endpoint_override={store.endpoint}&scheme=http"
    assert filesystem.store_problem(missing) == (
        f"the bucket not-made does not exist at {store.endpoint}; create it, or let tuner create it with "
        "allow_bucket_creation=true in the URI's query"
    )
    # Made under allow_bucket_creation=true (this store has volumes for one bucket only, so the probe's
    # write into the new one gets the store's own refusal; a store of default settings takes it).
    said = filesystem.store_problem(f"{missing}&allow_bucket_creation=true")
    assert said is None or "does not exist" not in said, said
    fs, _ = filesystem.filesystem(missing)
    assert fs.get_file_info("not-made").type == pafs.FileType.Directory


def test_wrong_credentials_are_one_line_before_ray_starts(store, tmp_path):
    """A wrong secret: `tuner run` says the store's answer and what to set in one line, exit 2, before Ray
    starts and with nothing written; `tuner list` and `tuner report` likewise."""
    path = write_space(tmp_path, "refused", epochs=2, lr="0.01")
    wrong = store.env(AWS_SECRET_ACCESS_KEY="not-the-secret")
    started = time.monotonic()
    refused = run_tuner("run", path, "--storage-path", store.uri("refused"), cwd=tmp_path, env=wrong)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr[-3000:]
    assert refused.stderr.strip() == (
        f"tuner: error: cannot write to --storage-path {store.uri('refused')}: the object store at {store.endpoint} "
        "refused the credentials (SIGNATURE_DOES_NOT_MATCH: The request signature we calculated does not match "
        "the signature you provided. Check your key and signing method.); set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY to a key that may read and write the bucket"
    )
    assert time.monotonic() - started < 30  # no Ray start-up: the probe answers in well under a second
    assert store.names("refused") == []
    plain_env = {**wrong, "AWS_ENDPOINT_URL": f"http://{store.endpoint}"}
    for command, env in (["list", store.uri("refused")], wrong), (["report", f"s3://{BUCKET}/refused/x"], plain_env):
        said = run_tuner(*command, cwd=tmp_path, env=env)
        assert said.returncode == 2 and said.stdout == "", said.stdout + said.stderr[-3000:]
        # The endpoint as the URI's query or AWS_ENDPOINT_URL (http://...) gives it.
        assert said.stderr.startswith("tuner: error: the object store at "), said.stderr[-3000:]
        assert f"{store.endpoint} refused the credentials (ACCESS_DENIED: " in said.stderr
        assert len(said.stderr.strip().splitlines()) == 1
