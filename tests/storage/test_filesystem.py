"""Names joined onto a storage path or URI: a URI's query configures its filesystem and stays at its end."""

import pytest

from tuner.storage import filesystem

URI = "s3://bucket/results?endpoint_override=127.0.0.1:9000&scheme=http"


def test_a_name_goes_on_the_path_before_the_query():
    assert filesystem.join(URI, "exp", "tuner.json") == (
        "s3://bucket/results/exp/tuner.json?endpoint_override=127.0.0.1:9000&scheme=http"
    )
    assert filesystem.split(filesystem.join(URI, "exp")) == (URI, "exp")
    assert filesystem.base_name(filesystem.join(URI, "exp")) == "exp"
    # The experiment's files are where pyarrow opens them: on the endpoint, under the joined path.
    fs, inner = filesystem.filesystem(filesystem.join(URI, "exp"))
    assert inner == "bucket/results/exp" and fs.type_name == "s3"


@pytest.mark.parametrize(
    "path, joined",
    [
        ("/tmp/results/", "/tmp/results/exp"),
        ("/tmp/odd?name", "/tmp/odd?name/exp"),  # a local path's `?` is part of the name
        ("s3://bucket/results", "s3://bucket/results/exp"),
        ("file:///tmp/results", "file:///tmp/results/exp"),
    ],
)
def test_paths_without_a_query_join_plainly(path, joined):
    assert filesystem.join(path, "exp") == joined
    assert filesystem.split(joined) == (path.rstrip("/"), "exp")


def test_a_recent_write_problem_holds_for_its_time_then_is_asked_again(tmp_path):
    """The storage's problem is asked once for a burst of failures (a probe of an object store that is gone
    takes ~6 s), and afresh once its time is up."""
    (tmp_path / "results").write_text("a file where the storage directory should be")
    storage = str(tmp_path / "results" / "experiment")
    held, asked_again = filesystem.recent_write_problem(storage), filesystem.recent_write_problem(storage, 0)
    assert held() == asked_again() == f"{tmp_path / 'results'} is not a directory"
    (tmp_path / "results").unlink()  # put right
    assert held() == f"{tmp_path / 'results'} is not a directory"
    assert asked_again() is None


def test_runs_started_in_the_same_second_claim_their_own_default_names(tmp_path):
    from tuner.storage.filesystem import claim_default_name

    name = "space-20261206-101010"
    claimed = [claim_default_name(str(tmp_path / "results"), name) for _ in range(3)]
    assert claimed == [name, f"{name}-2", f"{name}-3"]
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == sorted(claimed)
