"""How to type `tuner` in the user's shell, for the commands tuner prints as next steps.

A printed hint is pasted as printed, often from another folder or a shell where tuner's virtualenv is
not active; `python -m tuner` there reaches the system Python (`No module named 'ray'`). So a hint
names the plain `tuner` command only when that is the one on PATH, and otherwise the installed
script's (or this interpreter's) absolute path.
"""

import os
import shlex
import shutil
import sys
from functools import cache
from pathlib import Path


@cache
def tuner_command() -> str:
    """`tuner`, `/abs/.venv/bin/tuner` or `/abs/python -m tuner`: whichever runs this installation."""
    installed = Path(sys.executable).parent / "tuner"
    on_path = shutil.which("tuner")
    if installed.is_file():
        if on_path and os.path.samefile(on_path, installed):
            return "tuner"
        return shlex.quote(str(installed.absolute()))
    return f"{shlex.quote(str(Path(sys.executable).absolute()))} -m tuner"
