"""What Ray's dashboard calls a run's trials: each trial's actor named after its trial in the Actors page
(the State API the page reads), and each log line of a trial's process prefixed with the trial it came
from, also when Tune reuses the process for trial after trial."""

import re
import textwrap
import time

import pytest
import ray
from ray.util.state import list_actors

from tests.conftest import shutdown_ray, start_test_ray
from tuner.cli import main
from tuner.results import report

pytestmark = pytest.mark.slow

# Words, not numbers: Ray's log deduplication takes lines that differ only in numbers for one.
SPACE = """
from ray import tune

param_space = {"word": tune.grid_search(["alpha", "beta", "gamma", "delta", "epsilon"])}
metric, mode, epochs = "score", "max", 2


def train_loop(config, ctx):
    print("this trial's word is", config["word"])
    for epoch in range(1, ctx.epochs + 1):
        ctx.report({"score": len(config["word"]) * epoch})
"""
# Ray's prefix, "(trial <id> pid=<pid>)", colored on a terminal.
LINE = re.compile(
    r"\(trial (?P<trial>\S+) pid=(?P<pid>\d+)(?:, ip=\S+)?\)(?:\x1b\[0m)? this trial's word is (?P<word>\w+)"
)


@pytest.fixture
def ray_with_dashboard(capsys):
    if ray.is_initialized():
        shutdown_ray()
    context = start_test_ray(num_cpus=2, include_dashboard=True, logging_level="ERROR")
    capsys.readouterr()
    yield f"http://{context.dashboard_url}"  # this test's own: never "the" Ray on the machine
    shutdown_ray()


def test_each_trials_actor_and_log_lines_are_named_after_its_trial(tmp_path, ray_with_dashboard, capsys, monkeypatch):
    (tmp_path / "words.py").write_text(textwrap.dedent(SPACE))
    monkeypatch.chdir(tmp_path)
    code = main(["run", "words.py", "--no-smoke", "-q", "--max-concurrent", "2", "--name", "words"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    trials, _ = report.read_tables(str(tmp_path / "tuner_results" / "words"))
    word_of = dict(zip(trials["trial_id"], trials["word"], strict=True))

    # Ray's log monitor prints the trials' lines as it reads them, some after the run's end.
    seen = out.out + out.err
    deadline = time.monotonic() + 30
    while len(lines := [found.groupdict() for found in LINE.finditer(seen)]) < len(word_of):
        assert time.monotonic() < deadline, seen
        time.sleep(0.5)
        more = capsys.readouterr()
        seen += more.out + more.err
    assert sorted(line["trial"] for line in lines) == sorted(word_of), seen
    for line in lines:
        assert word_of[line["trial"]] == line["word"], line
    # Tune reused a process: its later lines name the later trial, not the one it was made for.
    assert len({line["pid"] for line in lines}) < len(lines), lines

    # Each process that ran trials is an actor named after the first trial it ran. Tune may also make an
    # actor for a trial that a reused one then runs: it ran nothing, and still names a trial of the run.
    actors = list_actors(address=ray_with_dashboard, detail=True, limit=1000)
    named = {actor.pid: actor.repr_name for actor in actors if actor.repr_name.startswith("trial ")}
    first: dict[int, str] = {}
    for line in lines:
        first.setdefault(int(line["pid"]), line["trial"])
    assert {pid: named.get(pid) for pid in first} == {pid: f"trial {trial}" for pid, trial in first.items()}
    assert {name.removeprefix("trial ") for name in named.values()} <= set(word_of), named
