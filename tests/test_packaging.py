"""What a wheel of tuner holds: every package, the notebooks where the run's summary names them, and
tuner's Grafana dashboard.
The notebooks live at the top level (notebooks/) and install as tuner/notebooks, a mapping that
pyproject.toml's package list makes by hand."""

import shutil
import subprocess
import sys
import zipfile

import pytest
from setuptools import find_packages
from setuptools.config.pyprojecttoml import read_configuration

from tests.conftest import REPO

SHIPPED = ("pyproject.toml", "README.md", "tuner", "search_spaces", "notebooks")


def test_the_listed_packages_are_every_package_folder_and_the_notebooks():
    listed = read_configuration(REPO / "pyproject.toml")["tool"]["setuptools"]["packages"]
    found = find_packages(REPO, include=["tuner*", "search_spaces*"])
    assert sorted(listed) == sorted([*found, "tuner.notebooks"]), "a package folder is missing from pyproject.toml"


@pytest.mark.slow
def test_a_wheel_installs_the_notebooks_and_the_grafana_dashboard_where_tuner_finds_them(tmp_path):
    source = tmp_path / "source"  # a copy: a build in the checkout would leave build/ behind
    source.mkdir()
    for name in SHIPPED:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source)]
    built = subprocess.run([*build, "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    shipped = sorted(path.name for path in (REPO / "notebooks").glob("*.ipynb"))
    assert sorted(path.name for path in (site / "tuner" / "notebooks").glob("*.ipynb")) == shipped
    # The installed package, not the checkout: from a folder of its own, with only the wheel's files on
    # the path before the environment's.
    ask = "from tuner.results.summary import NOTEBOOKS; print(NOTEBOOKS)"
    answer = subprocess.run(
        [sys.executable, "-c", ask], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True
    )
    assert answer.returncode == 0, answer.stderr[-3000:]
    assert answer.stdout.strip() == str(site / "tuner" / "notebooks")
    # The dashboard a run copies beside Ray's (tuner/execution/ray_metrics.py).
    dashboard = site / "tuner" / "execution" / "grafana_dashboard.json"
    assert dashboard.read_text() == (REPO / "tuner" / "execution" / "grafana_dashboard.json").read_text()
