"""The command line's parsing on its own (no run): every option that takes a value refuses `--opt=--`
in one line, where Python before 3.12 would hand the option an empty list past its type check."""

import argparse
import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tuner import cli
from tuner.command import tuner_command


def _valued_options() -> list[tuple[str, str]]:
    parser = cli._parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return [
        (command, action.option_strings[-1])
        for command, sub in commands.items()
        for action in sub._actions
        if action.option_strings and action.nargs != 0 and action.dest != "help"
    ]


@pytest.mark.parametrize("command, flag", _valued_options())
def test_an_option_given_the_value_dashes_is_one_line(command, flag):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as exit_:
        cli._parser().parse_args([command, f"{flag}=--"])
    assert exit_.value.code == cli.USAGE_ERROR
    assert stderr.getvalue().strip().splitlines() == [
        f"tuner: error: argument {flag}: expected a value, not '--' (see {tuner_command()} --help)"
    ]


def test_pip_install_puts_a_tuner_command_beside_python():
    """The console script of pyproject.toml, in the environment tuner is installed in."""
    command = Path(sys.executable).parent / "tuner"
    assert command.is_file(), f"no {command}: reinstall with pip install -e ."
    result = subprocess.run([str(command), "run", "--epochs", "0"], capture_output=True, text=True, timeout=60)
    assert result.returncode == cli.USAGE_ERROR
    assert result.stderr.startswith("tuner: error: argument --epochs: must be an integer from 1 to 100000, not 0")
