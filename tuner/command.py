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
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Set by `tuner submit` for its job: the folder it ran in, of which the job's working dir is Ray's
# temporary copy (tuner/execution/submission.py).
SUBMITTED_FROM_ENV = "TUNER_SUBMITTED_FROM"


def as_submitted(path: Path) -> Path:
    """`path` as the user knows it: in a job that `tuner submit` started, a path inside the job's working
    dir (Ray's copy, deep in its session folder, gone when the job ends) is named in the folder submit ran
    in; anywhere else, as it is."""
    submitted_from = os.environ.get(SUBMITTED_FROM_ENV)
    if not submitted_from:
        return path
    try:
        return Path(submitted_from) / path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _python() -> str:
    return shlex.quote(str(Path(sys.executable).absolute()))


def _installed_script(name: str) -> Path:
    return Path(sys.executable).parent / name


def script_command(name: str) -> str | None:
    """`name` when the one on PATH is this installation's script, else the script's absolute path;
    None when this installation has no such script (its extra is not installed)."""
    installed = _installed_script(name)
    if not installed.is_file():
        return None
    on_path = shutil.which(name)
    if on_path and os.path.samefile(on_path, installed):
        return name
    return shlex.quote(str(installed.absolute()))


@cache
def tuner_command() -> str:
    """`tuner`, `/abs/.venv/bin/tuner` or `/abs/python -m tuner`: whichever runs this installation."""
    return script_command("tuner") or f"{_python()} -m tuner"


def tuner_hint(*arguments: str) -> str:
    """A tuner command as printed for pasting: this installation's `tuner`, and each argument quoted for
    the shell (an object store's URI holds `&` and `?`, a folder may hold a space)."""
    return f"{tuner_command()} {shlex.join(arguments)}"


def ray_command() -> str:
    """Ray's CLI of this installation (Ray is a dependency, so its script sits beside tuner's)."""
    return script_command("ray") or f"{_python()} -m ray.scripts.scripts"


def _installed_from() -> tuple[str, bool] | None:
    """The folder this tuner comes from and whether it runs from there (a checkout, installed editably
    or on PYTHONPATH), or the folder pip installed it from (pip's direct_url.json); None if neither."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():
        return str(as_submitted(checkout)), True
    try:
        recorded = metadata.distribution("tuner").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    origin = json.loads(recorded or "{}")
    url = urlsplit(origin.get("url", ""))
    if "dir_info" not in origin or url.scheme != "file":
        return None
    return unquote(url.path), bool(origin["dir_info"].get("editable"))


def _absolute_script(name: str) -> str:
    return shlex.quote(str(_installed_script(name).absolute()))


def install_command(extra: str) -> str:
    """The pip command that adds `extra` to this installation, from any folder and any shell: this
    interpreter's pip by its path (a bare `pip` would be another Python's where the virtualenv is not
    active), and the folder tuner was installed from (editably where it runs from it), since tuner
    installs from source."""
    pip = _absolute_script("pip") if _installed_script("pip").is_file() else f"{_python()} -m pip"
    source = _installed_from()
    if source is None:
        return f"{pip} install {shlex.quote(f'tuner[{extra}]')}"
    folder, editable = source
    return f"{pip} install {'-e ' if editable else ''}{shlex.quote(f'{folder}[{extra}]')}"


def with_extra(extra: str, script: str, command: Callable[[str], str], *, usable: bool = True) -> str:
    """`command(script)` for a tool that an optional extra provides, preceded by the extra's install
    command where this installation lacks it, or has it but cannot use it (`usable`: mlflow-skinny has
    an `mlflow` script whose UI fails). The script is named by its path in this installation, installed
    or not: the hint reads the same before and after the install, and runs in a shell where the
    virtualenv is not active."""
    shown = command(_absolute_script(script))
    if usable and _installed_script(script).is_file():
        return shown
    return f"{install_command(extra)}, then {shown}"
