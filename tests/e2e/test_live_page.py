"""`tuner ui` as a user meets it: a page in a real browser (headless Chromium) follows a run while its
trial trains, the trial's list of epoch values longer at the second look than at the first. The second look is kept as a
screenshot beside the test's files."""

import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port, tuner_process
from tuner.storage.study_journal import JOURNAL_FILE, load_study

CHROMIUMS = ("chromium", "chromium-browser", "google-chrome")  # Debian's, Ubuntu's, Google's
CHROMIUM = next((found for name in CHROMIUMS if (found := shutil.which(name))), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on the PATH (Debian: apt-get install chromium)")

SLOW = """
import time
from ray import tune

param_space = {"lr": tune.choice([0.1])}
metric, mode, epochs = "score", "max", 120


def train_loop(config, ctx):
    for epoch in range(1, ctx.epochs + 1):
        time.sleep(0.5)
        ctx.report({"score": epoch * config["lr"]})
"""


def _start(workdir: Path, *args: str) -> subprocess.Popen:
    command, env = tuner_process(*args)
    return subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _stop(process: subprocess.Popen) -> str:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return process.communicate(timeout=60)[1]


def _epochs_in_study(experiment: Path) -> int:
    if not (experiment / JOURNAL_FILE).exists():
        return 0
    return max((len(trial.intermediate_values) for trial in load_study(str(experiment)).trials), default=0)


def _wait(condition, what: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"ended before {what}: {process.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.3)


def _epochs_shown(url: str, screenshot: Path | None = None) -> list[int]:
    """The epochs of the trial's intermediate values as the trial page lists them once Chromium has
    rendered it (the page is a script that draws after it fetched the study)."""
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000"]
    dom = subprocess.run([*browser, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    if screenshot is not None:
        shot = [*browser, "--hide-scrollbars", "--window-size=1400,1000", f"--screenshot={screenshot}", url]
        subprocess.run(shot, capture_output=True, timeout=120, cwd=screenshot.parent)
    shown = dom.find(">Intermediate Values</p>")
    assert shown >= 0, dom[-2000:]
    listed = dom[shown : dom.find("</div></div></div>", shown)]
    return [int(step) for step in re.findall(r">(\d+) [-0-9.e]+</p>", listed)]


def test_the_page_follows_a_running_trial(tmp_path):
    (tmp_path / "slow.py").write_text(textwrap.dedent(SLOW))
    experiment = tmp_path / "results" / "slow"
    run = _start(tmp_path, "run", "slow.py", "--no-smoke", "-q", "--storage-path", "results", "--name", "slow")
    page = None
    try:
        _wait(lambda: _epochs_in_study(experiment) >= 2, "two epochs in the study", run)
        port = free_port()
        page = _start(tmp_path, "ui", str(experiment), "--port", str(port))
        url = f"http://127.0.0.1:{port}/dashboard/studies/0/trials"

        def answers() -> bool:
            try:
                with urllib.request.urlopen(url, timeout=5):
                    return True
            except OSError:
                return False

        _wait(answers, "the page", page)
        first = _epochs_shown(url)
        time.sleep(3)  # six more epochs
        second = _epochs_shown(url, screenshot=tmp_path / "live_page.png")
        assert run.poll() is None, "the run ended before the second look: lengthen it"
        assert len(first) >= 2 and second[: len(first)] == first and len(second) > len(first), (first, second)
        assert second == list(range(1, len(second) + 1))  # each epoch once, in order
        assert (tmp_path / "live_page.png").stat().st_size > 10_000
    finally:
        said = _stop(page) if page is not None else ""
        _stop(run)
    assert "Traceback" not in said, said[-3000:]
