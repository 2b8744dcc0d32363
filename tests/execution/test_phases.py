"""The driver's phase lines (tuner/execution/phases.py): shown with -v only, one per phase as it ends."""

import logging
import re

import pytest

from tuner.execution.phases import Phases


def test_each_phase_is_one_line_with_its_seconds_and_when_it_ended(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="tuner.execution.phases"):
        phases = Phases(shown=True)
        phases.mark("ray start")
        phases.mark("trials")
    lines = [record.getMessage() for record in caplog.records]
    assert [line.split()[1:3] for line in lines][0] == ["ray", "start"]
    # The second phase took as long as one call to the next: well under a second, even on a loaded machine.
    assert lines[1].split()[1] == "trials" and float(lines[1].split()[2]) < 1.0, lines
    assert all(re.fullmatch(r"phase: .+ \d+\.\d\d s \(at \d+\.\d\d s\)", line) for line in lines), lines


def test_without_v_nothing_is_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="tuner.execution.phases"):
        Phases(shown=False).mark("ray start")
    assert not caplog.records
