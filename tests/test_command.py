"""The command a printed hint names runs this installation from any folder and any shell."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.command import tuner_command

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
