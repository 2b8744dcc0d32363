"""A `tuner` process ends once its atexit handlers ran, with its command's exit code and all of its
output, without the interpreter's teardown (tuner/cli.py, _exit_once_cleaned_up)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The command as the `tuner` script runs it (main() without argv), an atexit handler registered while it
# runs (as Ray and user code do), and an object that would speak during the interpreter's teardown.
SCRIPT = """
import atexit, sys
import tuner.cli as cli

class Teardown:
    def __del__(self):
        print("teardown ran", flush=True)

kept = Teardown()
listed = cli._list

def _list(args):
    atexit.register(lambda: print("handler ran", flush=True))
    return listed(args)

cli._list = _list
sys.argv = ["tuner", *sys.argv[1:]]
sys.exit(cli.main())
"""


def _tuner(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_command_exits_with_its_code_and_output_after_its_atexit_handlers(tmp_path: Path) -> None:
    listed = _tuner(tmp_path, "list", str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    # Piped stdout is block-buffered: all of it arrives, the handler ran, the teardown did not.
    assert listed.stdout.startswith(f"no experiments under {tmp_path}")
    assert listed.stdout.splitlines()[-1] == "handler ran"
    assert "teardown ran" not in listed.stdout


def test_a_refused_input_keeps_exit_code_2_and_its_line(tmp_path: Path) -> None:
    refused = _tuner(tmp_path, "report", str(tmp_path / "missing"))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith("tuner: error: ")
    assert "teardown ran" not in refused.stdout
