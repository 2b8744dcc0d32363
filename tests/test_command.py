"""The command a printed hint names runs this installation from any folder and any shell."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuner.command import tuner_command
from tuner.execution import cluster_token
from tuner.results import summary

INSTALLED = Path(sys.executable).parent / "tuner"


def _command_with_path(monkeypatch: pytest.MonkeyPatch, path: str) -> str:
    monkeypatch.setenv("PATH", path)
    return tuner_command.__wrapped__()


def test_the_plain_command_where_it_is_the_one_on_path(monkeypatch):
    assert _command_with_path(monkeypatch, f"{INSTALLED.parent}{os.pathsep}/usr/bin") == "tuner"


def test_the_installed_script_by_its_absolute_path_where_another_or_none_is_on_path(monkeypatch, tmp_path):
    impostor = tmp_path / "tuner"
    impostor.write_text("#!/bin/sh\nexit 1\n")
    impostor.chmod(0o755)
    assert _command_with_path(monkeypatch, f"{tmp_path}{os.pathsep}/usr/bin") == str(INSTALLED.absolute())
    assert _command_with_path(monkeypatch, "/usr/bin") == str(INSTALLED.absolute())


def test_the_printed_command_runs_from_another_folder_in_a_bare_shell(monkeypatch, tmp_path):
    command = _command_with_path(monkeypatch, "/usr/bin:/bin")
    result = subprocess.run(
        f"{command} list {tmp_path}",
        shell=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"no experiments under {tmp_path}")


@pytest.fixture
def uncached():
    """tuner_command() remembers its answer; one computed for a test's installation must not outlive it."""
    tuner_command.cache_clear()
    yield
    tuner_command.cache_clear()


def _installation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scripts: tuple[str, ...]) -> Path:
    """An installation's bin folder with `scripts` in it (this interpreter as its python), and PATH
    without it: a shell where the virtualenv is not active."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    for name in scripts:
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return bin_dir


def test_the_next_steps_name_each_tool_or_the_extra_that_installs_it(monkeypatch, tmp_path, capsys, uncached):
    bin_dir = _installation(monkeypatch, tmp_path, ("pip", "tensorboard"))
    summary.next_steps("/results/my run", {"lr": 0.01})
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.strip().splitlines()[1:])
    notebook = summary.NOTEBOOKS / "quick_look.ipynb"
    assert notebook.is_file()  # package data: where the package is, not where the user is
    # This checkout runs from its folder, so the extra goes into it editably, with this installation's pip.
    as_root = " --allow-root" if os.geteuid() == 0 else ""  # Jupyter refuses root without it
    notebook_line = f"TUNER_EXPERIMENT='/results/my run' {bin_dir}/jupyter-lab{as_root} {notebook}"
    assert lines["notebook"].strip() == f"{bin_dir}/pip install -e '{REPO}[notebook]', then {notebook_line}"
    assert lines["tensorboard"].strip() == f"{bin_dir}/tensorboard --logdir '/results/my run'"

    # Installed, and the virtualenv active: the same command as after the install, by its path still.
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin")
    (bin_dir / "jupyter-lab").write_text("#!/bin/sh\n")
    (bin_dir / "jupyter-lab").chmod(0o755)
    summary.next_steps("/results/my run", {"lr": 0.01})
    out = capsys.readouterr().out
    assert f"notebook:     {notebook_line}\n" in out
    assert f"tensorboard:  {bin_dir}/tensorboard --logdir '/results/my run'\n" in out


def test_a_bucket_experiment_gets_quoted_commands_and_no_tensorboard_line(capsys):
    uri = "s3://bucket/results/run?endpoint_override=127.0.0.1:9000&scheme=http"
    summary.next_steps(uri, {"lr": 0.01})
    out = capsys.readouterr().out
    assert f"html report:  {tuner_command()} report '{uri}' --html\n" in out
    assert f"TUNER_EXPERIMENT='{uri}' " in out
    assert "tensorboard" not in out  # it reads no bucket through pyarrow's URI form


def test_every_extra_a_hint_names_exists():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"notebook", "tensorboard", "mlflow"} <= set(extras)
    assert any(requirement.startswith("mlflow>") for requirement in extras["mlflow"])  # not -skinny: no UI


def test_a_printed_ray_command_sends_the_token_that_tuner_found(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    assert cluster_token.cli_prefix() == ""  # no token: nothing to send
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("secret")
    assert cluster_token.cli_prefix() == "RAY_AUTH_MODE=token "  # Ray's CLI would not send it by itself
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    assert cluster_token.cli_prefix() == ""  # the user's shell already says so
