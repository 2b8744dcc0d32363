"""Ray's tracebacks for failures of a storage that takes no writes become one tuner line each (uploads:
one in all); any other failure keeps Ray's line and its traceback (a bug in the user's code shows it)."""

import errno
import logging

import pytest

from tuner.ray_compat import logs


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def kept():
    """The lines of tuner's and those Ray loggers, at WARNING: an earlier ray.init(logging_level=ERROR)
    in the same session leaves Ray's loggers above it."""
    handler, names = _Kept(), ["tuner", logs.TRIAL_FAILED[0], *(name for name, _ in logs.UPLOAD_FAILED)]
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.WARNING)
    yield handler.lines
    for name in names:
        logging.getLogger(name).removeHandler(handler)
        logging.getLogger(name).setLevel(levels[name])


def _trial_failed(error: Exception) -> None:
    logging.getLogger(logs.TRIAL_FAILED[0]).error("Trial task failed for trial space_0001", exc_info=error)


def test_on_a_full_disk_ray_tracebacks_become_one_line_each(kept):
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: "no space left on device"):
        _trial_failed(OSError(errno.ENOSPC, "No space left on device"))
        for name, start in (*logs.UPLOAD_FAILED, *logs.UPLOAD_FAILED):
            logging.getLogger(name).warning(f"{start} '/results/x': Traceback ...")
    assert kept == [
        "tuner: trial space_0001 could not write to /results/x: no space left on device",
        "tuner: Ray's uploads to /results/x fail: no space left on device; it tries again at each save",
    ]


def test_a_users_bug_a_writable_storage_or_verbose_keeps_rays_line(kept):
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: "no space left on device"):
        _trial_failed(ValueError("the user's own bug"))
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: None):
        _trial_failed(OSError(errno.EIO, "Input/output error"))
    with logs.storage_failures_in_one_line(False, "/results/x", lambda: "no space left on device"):  # -v
        _trial_failed(OSError(errno.ENOSPC, "No space left on device"))
    assert kept == [f"{logs.TRIAL_FAILED[0]}: Trial task failed for trial space_0001"] * 3
