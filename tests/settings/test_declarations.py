"""Every setting is declared once: it has a command-line option generated from its declaration, its
default lives in its field only, a bad value is refused by the same sentence everywhere, and the
experiment's settings round-trip through tuner.json."""

import dataclasses
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tuner import cli
from tuner.errors import TunerError
from tuner.settings import GROUPS, Budget, Cluster, Objective, Resources, RunOptions, Tuning
from tuner.settings.declaration import settings_of
from tuner.spec.space import ExperimentSpec
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta

EVERY_DECLARATION = [*GROUPS.values(), RunOptions, Cluster]
# The settings without an option of their own: -q and -v set verbose (tuner/cli.py); objectives is what
# --metric and --mode declare, as tuner.json records it.
WITHOUT_OPTION = {"verbose", "objectives"}
# A valid value other than the default for each declared setting, as command-line text.
OTHER_VALUES = {
    "metric": "val_loss",
    "mode": "min",
    "constraints": "val_loss<=1,val_acc>=0.5",
    "epochs": "7",
    "num_samples": "3",
    "time_budget": "30m",
    "stop": "val_acc>=0.9",
    "workers": "2",
    "parallel": "fsdp",
    "precision": "bf16",
    "cpus_per_worker": "0.5",
    "gpus_per_worker": "0.25",
    "max_concurrent": "4",
    "search": "random",
    "scheduler": "asha",
    "pbt_mutable": "lr,dropout",
    "asha_grace_period": "2",
    "asha_reduction_factor": "4",
    "storage_path": "/tmp/elsewhere",
    "name": "named",
    "seed": "5",
    "data_dir": "/data",
    "max_failures": "0",
    "smoke": None,  # a flag: --no-smoke
    "mlflow": "./other.db",
    "warm_start": "tuner_results/earlier",
    "address": "127.0.0.1:6379",
    "dashboard": None,
    "dashboard_port": "8266",
    "keep_ray": "5m",
}


def _options(command: str) -> dict[str, str]:
    """dest -> flag of every option `tuner <command>` has."""
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, cli.argparse._SubParsersAction)).choices[command]
    return {action.dest: action.option_strings[-1] for action in sub._actions if action.option_strings}


def test_every_setting_has_an_option_and_a_test_value():
    run = _options("run")
    for cls in EVERY_DECLARATION:
        for item, declared in settings_of(cls):
            if item.name in WITHOUT_OPTION:
                assert declared.option(item.name) is None
                continue
            assert item.name in OTHER_VALUES, f"{cls.__name__}.{item.name}: add it to OTHER_VALUES"
            assert run.get(item.name) == declared.option(item.name), f"tuner run lacks {item.name}"
            assert declared.help, f"{cls.__name__}.{item.name} has no help"


@pytest.mark.parametrize("name", [n for n in OTHER_VALUES if n not in WITHOUT_OPTION])
def test_the_option_gives_the_value_and_leaving_it_out_keeps_the_declared_default(name):
    cls = next(c for c in EVERY_DECLARATION if name in {item.name for item, _ in settings_of(c)})
    flag = _options("run")[name]
    text = OTHER_VALUES[name]
    args = cli._parser().parse_args(["run", flag] if text is None else ["run", flag, text])
    given = cli._given(args, cls)
    assert set(given) == {name}
    default = next(item for item, _ in settings_of(cls) if item.name == name)
    built = cls(**{**({"metric": "m", "mode": "max"} if cls is Objective else {}), **given})
    assert getattr(built, name) != (default.default if default.default is not dataclasses.MISSING else None)
    nothing = cli._given(cli._parser().parse_args(["run"]), cls)
    assert nothing == {}  # not given: the space's value, else the declared default


@pytest.mark.parametrize(
    "cls, field, bad, sentence",
    [
        (Budget, "epochs", 0, "epochs must be an integer from 1 to 100000, not 0"),
        (Resources, "cpus_per_worker", 0, "cpus_per_worker must be a number from 0.0001 to 4096, not 0"),
        (Resources, "parallel", "horovod", "parallel must be one of ddp, dp, fsdp, pipeline, not 'horovod'"),
        (Tuning, "scheduler", "pb2", "scheduler must be one of fifo, asha, hyperband, median, pbt, not 'pb2'"),
        (RunOptions, "seed", -1, "seed must be an integer from 0 to 4294967295, not -1"),
    ],
)
def test_a_bad_value_gets_the_same_sentence_from_python_and_the_command_line(cls, field, bad, sentence):
    with pytest.raises(TunerError, match=sentence.replace("(", "\\(").replace(")", "\\)")):
        cls(**{field: bad})
    flag = "--" + field.replace("_", "-")
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["run", flag, str(bad)])


def test_every_experiment_setting_round_trips_through_tuner_json(tmp_path):
    groups = {}
    for group, cls in GROUPS.items():
        values = {}
        for item, declared in settings_of(cls):
            if item.name in WITHOUT_OPTION:
                continue  # objectives: derived from metric and mode
            text = OTHER_VALUES[item.name]
            values[item.name] = declared.kind.parse(text)
        groups[group] = cls(**values)
    meta = ExperimentMeta(space="s", params=["lr"], seed=9, **groups)
    meta_file.write(str(tmp_path), meta)
    assert meta_file.read(str(tmp_path)) == meta
    for group in GROUPS:
        assert getattr(meta_file.read(str(tmp_path)), group) != GROUPS[group](
            **({"metric": "m", "mode": "max"} if group == "objective" else {})
        )


def test_a_tuner_json_from_before_the_groups_is_read_with_its_values():
    flat = {"space": "s", "metric": "val_acc", "mode": "max", "params": [], "epochs": 7, "workers": 2,
            "search": "random", "scheduler": "asha", "seed": 3, "from_a_newer_tuner": 1}  # fmt: skip
    meta = meta_file.from_json_record(flat)
    assert (meta.objective.metric, meta.budget.epochs, meta.resources.workers) == ("val_acc", 7, 2)
    assert (meta.tuning.search, meta.tuning.scheduler, meta.seed) == ("random", "asha", 3)
    assert meta.resources.parallel == Resources().parallel  # absent then: the declared default
    assert meta.unknown == {"from_a_newer_tuner": 1}


def test_the_spec_loads_and_refuses_a_bad_option_without_torch_or_ray():
    code = (
        "import sys\n"
        "from tuner.spec import space\n"
        "from tuner.errors import TunerError\n"
        "s = space.load('digits_mlp')\n"  # the module imports ray.tune itself: forget it to check tuner's part
        "[sys.modules.pop(m) for m in list(sys.modules) if m.split('.')[0] in ('ray', 'torch')]\n"
        "try:\n"
        "    s.with_overrides(epochs=0)\n"
        "except TunerError as e:\n"
        "    print(e)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'ray'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["space digits_mlp: epochs must be an integer from 1 to 100000, not 0", "[]"]


def test_tuner_run_refuses_a_bad_option_before_torch_loads():
    code = (
        "import sys\n"
        "from tuner import cli\n"
        "try:\n"
        "    cli.main(['run', '--epochs', '0'])\n"
        "except SystemExit as exit_:\n"
        "    code = exit_.code\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'ray'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "argument --epochs: must be an integer from 1 to 100000, not 0" in result.stderr
    assert result.stdout.strip() == "2 []"


def test_a_name_that_is_no_setting_is_one_line_not_a_type_error():
    valid = {"metric": "val_acc", "mode": "max", "param_space": {"lr": 0.1}, "model": "mlp", "dataset": "digits"}
    with pytest.raises(TunerError, match="space py: epoch is no name a space defines; those are .*epochs"):
        ExperimentSpec.of("py", epoch=3, **valid)
    with pytest.raises(TunerError, match="epoch: no such setting"):
        ExperimentSpec.of("py", **valid).with_overrides(epoch=3)


def test_gpus_per_worker_is_auto_by_default_and_auto_or_a_number_everywhere(tmp_path):
    assert Resources().gpus_per_worker == "auto" and Resources().gpus_auto
    args = cli._parser().parse_args(["run", "--gpus-per-worker", "auto"])
    assert cli._given(args, Resources) == {"gpus_per_worker": "auto"}
    assert cli._given(cli._parser().parse_args(["run", "--gpus-per-worker", "0.5"]), Resources) == {
        "gpus_per_worker": 0.5
    }
    valid = {"metric": "val_acc", "mode": "max", "param_space": {"lr": 0.1}, "model": "mlp", "dataset": "digits"}
    assert ExperimentSpec.of("py", gpus_per_worker="auto", **valid).resources.gpus_auto
    assert ExperimentSpec.of("py", gpus_per_worker=1, **valid).resources.gpus == 1.0
    for bad in ("some", -1, True, float("nan")):
        with pytest.raises(TunerError, match=r"gpus_per_worker must be 'auto' or 0 or a number from 0.0001 to 64, not"):
            Resources(gpus_per_worker=bad)
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["run", "--gpus-per-worker", "half"])
    meta = ExperimentMeta(space="s", params=[], objective=Objective("m", "max"), resources=Resources())
    meta_file.write(str(tmp_path), meta)
    assert meta_file.read(str(tmp_path)).resources.gpus_per_worker == "auto"


def test_auto_keeps_the_dp_and_fractional_gpu_checks_for_the_number_it_resolves_to():
    valid = {"metric": "val_acc", "mode": "max", "param_space": {"lr": 0.1}, "model": "mlp", "dataset": "digits"}
    for auto in (
        ExperimentSpec.of("py", parallel="dp", **valid),
        ExperimentSpec.of("py", workers=2, **valid),
    ):
        assert auto.resources.gpus_auto  # refused only once resolved to a number that does not fit
    dp = ExperimentSpec.of("py", parallel="dp", **valid)
    with pytest.raises(TunerError, match="parallel = 'dp' runs nn.DataParallel over GPUs"):
        dataclasses.replace(dp, resources=dataclasses.replace(dp.resources, gpus_per_worker=0.0))
    two = ExperimentSpec.of("py", workers=2, **valid)
    with pytest.raises(TunerError, match="would put several NCCL ranks on one GPU"):
        dataclasses.replace(two, resources=dataclasses.replace(two.resources, gpus_per_worker=0.5))
