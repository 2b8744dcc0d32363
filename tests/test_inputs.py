"""Inputs none of the other tests use, tried as a new user would, each answered in one line before Ray
starts (exit 2, nothing written): numbers far past anything a run could finish, every search x scheduler
x parallel strategy, a space path that is no module, a storage path that cannot be written. In-process
through `tuner.cli.main`, with no Ray instance and no tuner process (the fast tier)."""

import errno
import itertools
import os
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray import tune
from ray.tune.search import Searcher, SearchGenerator

from tuner.cli import main
from tuner.errors import TunerError
from tuner.search.plan import plan
from tuner.settings import GROUPS, Cluster, RunOptions
from tuner.settings.declaration import settings_of
from tuner.settings.experiment import SCHEDULERS, SEARCHES, STRATEGIES
from tuner.settings.kinds import Number, Whole
from tuner.spec import space as spaces
from tuner.spec.space import ExperimentSpec

OPTIONED = [*GROUPS.values(), RunOptions, Cluster]
MODULE = {"model": "mlp", "dataset": "digits", "metric": "val_acc", "mode": "max"}


def _one_line(args: list[str], capsys) -> str:
    """Runs `tuner ARGS` in-process; asserts exit 2 with one line on stderr and returns it."""
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse exits by itself on a malformed option
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("tuner: error: ")
    return err[0]


def _numeric_settings():
    return [
        (cls, item, declared)
        for cls in OPTIONED
        for item, declared in settings_of(cls)
        if isinstance(declared.kind, (Whole, Number))
    ]


def test_every_numeric_setting_has_a_bound_and_says_why():
    """Bounds are declared once, with the setting: what the command line, a space module and Python get."""
    unbounded = [item.name for _, item, declared in _numeric_settings() if declared.kind.maximum is None]
    assert unbounded == []
    unsaid = [
        item.name for _, item, declared in _numeric_settings() if not declared.kind.why and item.name != "verbose"
    ]  # verbose has no option: -q and -v set it
    assert unsaid == []


@pytest.mark.parametrize(
    "item,declared",
    [(item, declared) for _, item, declared in _numeric_settings() if declared.option(item.name)],
    ids=lambda value: getattr(value, "name", ""),
)
def test_a_number_past_its_bound_is_one_line_naming_the_bound_and_why(tmp_path, monkeypatch, capsys, item, declared):
    monkeypatch.chdir(tmp_path)
    huge = str(declared.kind.maximum * 10**6 if isinstance(declared.kind, Whole) else "1e9")
    line = _one_line(["run", declared.option(item.name), huge], capsys)
    assert f"must be {declared.kind.expect}, not " in line and declared.kind.why in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "--epochs", str(10**12)], "epochs: must be an integer from 1 to 100000, not 1000000000000; no run"),
        (["run", "--num-samples", str(10**15)], "each trial is a Ray actor"),
        (["run", "--gpus-per-worker", "1e9"], "a worker is one process on one node, and no node has more"),
        (["run", "--cpus-per-worker", "inf"], "must be a number from 0.0001 to 4096, not inf"),
        (["run", "--cpus-per-worker", "0.00001"], "not 1e-05; Ray counts CPUs and GPUs in units of 0.0001"),
        (["run", "--dashboard-port", "70000"], "from 1 to 65535, not 70000; a TCP port is a 16-bit number"),
        (["run", "--time-budget", "1000000000000000000000000000000s"], "time budget"),
        (["extend", "x", "--num-samples", str(10**15)], "argument --num-samples: must be an integer from 1 to 100000"),
    ],
)
def test_absurd_but_well_formed_numbers(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert message in _one_line(args, capsys)


def test_a_space_module_value_past_its_bound_is_refused_with_the_same_words():
    with pytest.raises(TunerError, match=r"space s: epochs must be an integer from 1 to 100000, not 1000000; no run"):
        ExperimentSpec.of(
            "s", model="mlp", dataset="digits", metric="val_acc", mode="max", param_space={}, epochs=10**6
        )


def test_a_grid_of_more_trials_than_the_bound_is_refused_before_ray(tmp_path, monkeypatch, capsys):
    space = tmp_path / "huge.py"
    axes = ", ".join(f'"k{i}": tune.grid_search(list(range(10)))' for i in range(6))  # 10**6 grid points
    space.write_text(
        'from ray import tune\nmodel = "mlp"\ndataset = "digits"\nmetric = "val_acc"\nmode = "max"\n'
        f"param_space = {{{axes}}}\n"
    )
    monkeypatch.chdir(tmp_path)
    line = _one_line(["run", "huge.py"], capsys)
    assert "1000000 trials in all (1000000 grid points x 1 samples)" in line, line


# --- every searcher x scheduler x parallel strategy -------------------------------------------------

MATRIX_SPACE = {
    "lr": tune.loguniform(1e-3, 1e-1),
    "batch_size": tune.grid_search([32, 64]),
    "hidden": tune.choice([16, 32]),
}


def _ray_would_take(spec: ExperimentSpec) -> None:
    """What Ray Tune does with the plan before and as its first trial is added, without Ray running: the
    searcher and scheduler objects built, given the metric and mode (tune.py), and PBT's check of the
    searcher (PopulationBasedTraining.on_trial_add). Raises Ray's own error where Ray would."""
    planned = plan(spec, seed=0)
    searcher = planned.search_algorithm(max_concurrent=2)
    if isinstance(searcher, Searcher):
        searcher = SearchGenerator(searcher)
    searcher.set_search_properties(spec.objective.metric, spec.objective.mode, planned.param_space)
    if planned.scheduler is not None:
        assert planned.scheduler.set_search_properties(spec.objective.metric, spec.objective.mode)
        try:  # PBT's first check is of the searcher; past it, it reads the trial, which there is none of
            planned.scheduler.on_trial_add(SimpleNamespace(search_alg=searcher), None)
        except (AttributeError, TypeError):
            pass


REFUSED = {  # (search, scheduler): the words of the refusal
    **{("bohb", scheduler): "bohb runs with its own scheduler" for scheduler in ("asha", "median", "pbt")},
    **{
        (search, "pbt"): "Ray refuses it with a search algorithm such as"
        for search in ("optuna", "gp", "cmaes", "nsga2", "hyperopt")
    },
}


@pytest.mark.parametrize("parallel", STRATEGIES)
def test_every_search_scheduler_and_strategy_plans_or_is_refused_in_one_line(parallel):
    resources = {"workers": 1, "gpus_per_worker": 1} if parallel == "dp" else {"workers": 2}
    outcomes = {}
    for search, scheduler in itertools.product(SEARCHES, SCHEDULERS):
        spec = ExperimentSpec.of(
            "matrix",
            **MODULE,
            param_space=MATRIX_SPACE,
            epochs=9,
            num_samples=4,
            search=search,
            scheduler=scheduler,
            parallel=parallel,
            **resources,
        )
        try:
            _ray_would_take(spec)
            outcomes[search, scheduler] = "runs"
        except TunerError as error:
            assert "\n" not in str(error)
            outcomes[search, scheduler] = str(error)
    refused = {pair: said for pair, said in outcomes.items() if said != "runs"}
    assert set(refused) == set(REFUSED), refused
    assert all(REFUSED[pair] in said for pair, said in refused.items()), refused


# --- a space path that is no module ----------------------------------------------------------------


@pytest.mark.parametrize(
    "ref,make,message",
    [
        ("notes.txt", lambda p: p.write_text("lr = 0.1\n"), "is not a Python module (its name does not end in .py)"),
        ("./notes.txt", lambda p: p.write_text("lr = 0.1\n"), "is not a Python module"),
        ("spaces", lambda p: p.mkdir(), "unknown space 'spaces'; available: "),
        ("./spaces", lambda p: p.mkdir(), "space module ./spaces is a directory; pass the path of a .py file in it"),
        ("spaces.py", lambda p: p.mkdir(), "space module spaces.py is a directory"),
        ("random.py", lambda p: p.write_bytes(bytes(range(256))), "space module random.py is not Python source text"),
        ("nul.py", lambda p: p.write_bytes(b'x = "\0"\n'), "is binary (it holds NUL bytes), not Python source"),
        ("klingon.py", lambda p: p.write_text("# coding: klingon\n"), "(unknown encoding: klingon)"),
        ("pipe.py", lambda p: os.mkfifo(p), "is not a regular file (a device, a pipe, ...)"),
        ("absent.py", lambda p: None, "space module absent.py does not exist"),
    ],
)
def test_a_space_path_that_is_no_module_is_one_line(tmp_path, monkeypatch, capsys, ref, make, message):
    make(tmp_path / ref)
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    assert message in _one_line(["run", ref], capsys)
    assert set(tmp_path.iterdir()) == before


def test_a_device_as_the_space_is_one_line(capsys):
    assert "space module /dev/null is not a regular file" in _one_line(["run", "/dev/null"], capsys)


def test_an_unreadable_space_module_says_the_os_reason(tmp_path):
    """chmod 000: as root (the tests' user here) every file is readable, so the load runs in a child
    process that has given up root; its reason is the errno's, as the OS words it."""
    module = tmp_path / "secret.py"
    module.write_text("x = 1\n")
    module.chmod(0)
    tmp_path.chmod(stat.S_IRWXU | stat.S_IXOTH)  # others may pass through, not list or read
    if os.geteuid() != 0:
        with pytest.raises(TunerError) as raised:
            spaces.load(str(module))
        assert str(raised.value) == f"space module {module} cannot be read: permission denied"
        return
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        said = b""
        try:
            os.setgid(65534)
            os.setuid(65534)
            spaces.load(str(module))
        except TunerError as error:
            said = str(error).encode()
        except BaseException as error:  # noqa: BLE001 (anything else is the failure to report)
            said = f"{type(error).__name__}: {error}".encode()
        finally:
            os.write(writing, said)
            os._exit(0)
    os.close(writing)
    said = os.read(reading, 4096).decode()
    os.waitpid(child, 0)
    assert said == f"space module {module} cannot be read: {os.strerror(errno.EACCES).lower()}"


# --- a storage path that cannot be written ----------------------------------------------------------


def test_a_storage_path_under_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("")
    monkeypatch.chdir(tmp_path)
    line = _one_line(["run", "--storage-path", "file/results"], capsys)
    assert line == f"tuner: error: cannot write to --storage-path {tmp_path}/file/results: {tmp_path}/file is " + (
        "not a directory; pick another --storage-path"
    )


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/sys/kernel").is_dir(), reason="needs Linux's sysfs"
)
def test_a_storage_path_on_a_filesystem_without_free_blocks_says_the_real_reason(capsys):
    """sysfs, like read-only filesystems, reports no free space; the reason a write fails there is the
    errno's (permission denied, even for root), not "no space left"."""
    line = _one_line(["run", "--storage-path", "/sys/tuner_results"], capsys)
    assert line == (
        "tuner: error: cannot write to --storage-path /sys/tuner_results: "
        f"{os.strerror(errno.EACCES).lower()}; pick another --storage-path"
    )
