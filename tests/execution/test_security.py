"""What tuner promises about untrusted strings and code: no shell ever interprets what the user typed,
and space modules come only from a path the user gave or from the shipped `search_spaces/`.
(Bind addresses and token authentication are checked against live servers in test_cluster.py.)"""

import ast
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY_GRID
from tuner.errors import TunerError
from tuner.execution.submission import FIND_RAY_PYTHON, JOB_MAIN, Job
from tuner.spec import space as spaces

HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "a; touch pwned",
    "x' ; touch pwned; '",
    'q"; touch pwned; "',
    "line\ntouch pwned",
    "* ?",
    "--name=evil && touch pwned",
]


def test_job_entrypoint_reaches_the_program_verbatim_through_a_real_shell(tmp_path):
    """Ray runs a job's entrypoint with a shell; every argument must arrive exactly as given."""
    job = Job(
        address="http://127.0.0.1:8265",
        space_ref=HOSTILE[0],
        name="n",
        storage_path=HOSTILE[1],
        run_arguments=[item for value in HOSTILE[2:] for item in ("--set", value)],
    )
    # The same shell line with tuner's program replaced by one that prints its arguments, run by the
    # Python the line finds.
    program = f'{FIND_RAY_PYTHON} exec "$py" -c {shlex.quote(JOB_MAIN)} '
    assert job.entrypoint.startswith(program)
    show = 'import sys; sys.stdout.write("".join(arg + chr(0) for arg in sys.argv[1:]))'
    line = f'{FIND_RAY_PYTHON} exec "$py" -c {shlex.quote(show)} ' + job.entrypoint[len(program) :]
    printed = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, check=True).stdout
    args = printed.decode().split("\0")[:-1]
    assert args == [
        "run",
        HOSTILE[0],
        "--name",
        "n",
        "--storage-path",
        HOSTILE[1],
        *[item for value in HOSTILE[2:] for item in ("--set", value)],
    ]
    assert not (tmp_path / "pwned").exists()


def _calls(tree: ast.AST):
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def test_no_shell_anywhere_in_the_package():
    offenders = []
    for path in sorted((REPO / "tuner").rglob("*.py")):
        for call in _calls(ast.parse(path.read_text())):
            name = ast.unparse(call.func)
            uses_shell = any(
                k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                for k in call.keywords
            )
            if uses_shell or name in ("os.system", "os.popen", "eval", "exec"):
                offenders.append(f"{path.relative_to(REPO)}:{call.lineno} {name}")
    assert offenders == []


@pytest.mark.parametrize("name", ["os", "json", "tuner", "sitecustomize", "__init__"])
def test_a_space_name_never_imports_a_module_from_sys_path(name):
    with pytest.raises(TunerError, match=f"unknown space '{name}'"):
        spaces.load(name)


def test_a_file_in_the_working_directory_cannot_shadow_a_shipped_space(tmp_path, monkeypatch):
    (tmp_path / "digits_mlp.py").write_text("raise SystemExit('the shadow was imported')\n")
    monkeypatch.chdir(tmp_path)
    loaded = spaces.load("digits_mlp")
    assert Path(loaded.source).resolve() == (REPO / "search_spaces" / "digits_mlp.py").resolve()


def test_a_path_is_loaded_only_as_the_file_given(tmp_path, monkeypatch):
    """Each refused path names, read another way, a real file that would be loaded: with `.py` added, by
    its file name in the working directory, or as a shipped space's file. Importing the decoys stops the
    test; the file a path does name is the one loaded."""
    decoy = "raise SystemExit('{} was imported')\n"
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "tuner").mkdir()
    (tmp_path / "tuner" / "cli.py").write_text(decoy.format("../tuner/cli.py"))
    (work / "space.py").write_text(decoy.format("./space.py"))
    monkeypatch.chdir(work)
    with pytest.raises(TunerError, match="does not exist"):
        spaces.load("../tuner/cli")  # looks like a path, names no .py file (../tuner/cli.py is one)
    with pytest.raises(TunerError, match="does not exist"):
        spaces.load("nowhere/space.py")  # not ./space.py
    assert (REPO / "search_spaces" / "digits_mlp.py").is_file()
    with pytest.raises(TunerError, match="does not exist"):
        spaces.load("digits_mlp.py")  # a path: not search_spaces/digits_mlp.py
    (work / "nowhere").mkdir()
    (work / "nowhere" / "space.py").write_text(textwrap.dedent(TINY_GRID))
    loaded = spaces.load("nowhere/space.py")
    assert Path(loaded.source).resolve() == (work / "nowhere" / "space.py").resolve()
    assert loaded.name == "space" and loaded.model == "mlp"
