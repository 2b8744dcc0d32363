"""Files go where they belong: the tools and benchmarks write under the experiment or a folder they are
given, never into the current folder (often a checkout, where they sit untracked or overwrite tracked
files), and leave no temporary folders behind. `--mlflow`'s default store: tests/execution/test_tracking.py."""

import ast
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import pages
from tests.conftest import REPO


def _screenshot_tool():
    spec = importlib.util.spec_from_file_location("screenshot_report", REPO / "bench" / "screenshot_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_screenshots_go_under_the_experiment_unless_a_folder_is_given(tmp_path):
    tool = _screenshot_tool()
    experiment = tmp_path / "tuner_results" / "digits_mlp-20261204-120000"
    assert tool.out_folder(str(experiment), None) == experiment / "screenshots"
    assert tool.out_folder(str(experiment) + "/", None) == experiment / "screenshots"
    assert tool.out_folder(str(experiment), str(tmp_path / "shots")) == tmp_path / "shots"


@pytest.mark.skipif(shutil.which("git") is None, reason="reads which files git tracks")
def test_no_benchmark_writes_over_a_tracked_file_or_leaves_a_temp_folder():
    """Static, since the benchmarks take minutes: a folder from tempfile.mkdtemp is never removed (60 MB
    of experiments per run were left in /tmp), and the docs' commands name no tracked file as output."""
    for script in sorted((REPO / "bench").glob("*.py")):
        calls = [
            node.func.attr
            for node in ast.walk(ast.parse(script.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        ]
        assert "mkdtemp" not in calls, f"{script.name}: tempfile.mkdtemp's folder outlives the run"
    tracked = set(subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split())
    for line in (line for page in pages.PAGES for line in page.read_text().splitlines()):
        if line.startswith("python bench/") and "--plot" in line:
            target = line.split("--plot", 1)[1].split()[0]
            assert Path(target).is_absolute() or target not in tracked, line
