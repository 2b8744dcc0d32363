"""A Ctrl-C that lands in a finalizer (tuner/ray_compat/logs.py, ctrl_c_outside_finalizers): Python cannot
raise it there, prints a traceback and drops it; within a run it is delivered again, without one."""

import signal
import sys
import time
from collections.abc import Iterator

import pytest

from tuner.ray_compat import logs


class _InterruptedWhileFinalized:
    def __del__(self) -> None:
        raise KeyboardInterrupt  # as a Ctrl-C does when its signal lands in a finalizer


def _drop_one_and_wait() -> None:
    _InterruptedWhileFinalized()  # finalized at once
    for _ in range(200):  # a redelivered Ctrl-C arrives between these
        time.sleep(0.005)


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT handled as in a `tuner` process (pytest-xdist's workers ignore it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_that_lands_in_a_finalizer_is_delivered_again_without_a_traceback(ctrl_c_raises, capsys):
    before = sys.unraisablehook
    with logs.ctrl_c_outside_finalizers():
        with pytest.raises(KeyboardInterrupt):
            _drop_one_and_wait()
    assert "Exception ignored" not in capsys.readouterr().err
    assert sys.unraisablehook is before  # only within the block


def test_other_errors_in_finalizers_still_reach_pythons_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(type(unraisable.exc_value)))

    class Broken:
        def __del__(self) -> None:
            raise ValueError("a finalizer's own bug")

    with logs.ctrl_c_outside_finalizers():
        Broken()
    assert seen == [ValueError]
