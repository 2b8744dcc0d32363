"""How to type a command in the user's shell, for the commands tuner prints as next steps.

A printed hint is pasted as printed, often from another folder or a shell where tuner's virtualenv is
not active; `python -m tuner` there reaches the system Python (`No module named 'ray'`). So a hint
names a plain command (`tuner`, `ray`, `jupyter`) only when that is the one on PATH, and otherwise the
installed script's (or this interpreter's) absolute path. A tool that an optional extra provides is
named with the install command that adds it to this installation.
"""

import json
import os
import shlex
import shutil
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit


def script_command(name: str) -> str | None:
    """`name` when the one on PATH is this installation's script, else the script's absolute path;
    None when this installation has no such script (its extra is not installed)."""
    installed = Path(sys.executable).parent / name
    if not installed.is_file():
        return None
    on_path = shutil.which(name)
    if on_path and os.path.samefile(on_path, installed):
        return name
    return shlex.quote(str(installed.absolute()))


@cache
def tuner_command() -> str:
    """`tuner`, `/abs/.venv/bin/tuner` or `/abs/python -m tuner`: whichever runs this installation."""
    return script_command("tuner") or f"{shlex.quote(str(Path(sys.executable).absolute()))} -m tuner"


def ray_command() -> str:
    """Ray's CLI of this installation (Ray is a dependency, so its script sits beside tuner's)."""
    return script_command("ray") or f"{shlex.quote(str(Path(sys.executable).absolute()))} -m ray.scripts.scripts"


def _installed_from() -> tuple[str, bool] | None:
    """The folder this tuner comes from and whether it runs from there (a checkout, installed editably
    or on PYTHONPATH), or the folder pip installed it from (pip's direct_url.json); None if neither."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():
        return str(checkout), True
    try:
        recorded = metadata.distribution("tuner").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    origin = json.loads(recorded or "{}")
    url = urlsplit(origin.get("url", ""))
    if "dir_info" not in origin or url.scheme != "file":
        return None
    return unquote(url.path), bool(origin["dir_info"].get("editable"))


def install_command(extra: str) -> str:
    """The pip command that adds `extra` to this installation, from any folder: this interpreter's pip,
    and the folder tuner was installed from (editably where it runs from it), since tuner installs from
    source."""
    pip = script_command("pip") or f"{shlex.quote(str(Path(sys.executable).absolute()))} -m pip"
    source = _installed_from()
    if source is None:
        return f"{pip} install {shlex.quote(f'tuner[{extra}]')}"
    folder, editable = source
    return f"{pip} install {'-e ' if editable else ''}{shlex.quote(f'{folder}[{extra}]')}"
