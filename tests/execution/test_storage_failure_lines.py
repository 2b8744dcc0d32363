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
    handler, names = _Kept(), list(dict.fromkeys(["tuner", logs.TRIAL_FAILED[0], *(n for n, _ in logs.SAVE_FAILED)]))
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


def _never_collected(cause: str) -> None:
    """Ray core's line for a trial's failure nobody collected: RayTaskError's text, ending in its cause."""
    logging.getLogger(logs.NEVER_COLLECTED[0]).error(
        "Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::ImplicitFunc.train() (pid=1, "
        f'repr=run_trial)\n  File "loop.py", line 3, in train\n{cause}'
    )


def test_on_a_full_disk_ray_tracebacks_become_one_line_each(kept):
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: "no space left on device"):
        _trial_failed(OSError(errno.ENOSPC, "No space left on device"))
        for name, start in (*logs.SAVE_FAILED, *logs.SAVE_FAILED):
            if (name, start) == logs.NEVER_COLLECTED:
                _never_collected("OSError: When getting information for key 'x/.validate_storage_marker'")
            else:
                logging.getLogger(name).warning(f"{start} '/results/x'", exc_info=OSError(errno.ENOSPC, "full"))
    assert kept == [
        "tuner: trial space_0001 could not write to /results/x: no space left on device",
        "tuner: Ray could not save to /results/x: no space left on device",
    ]


def test_a_users_bug_a_writable_storage_or_verbose_keeps_rays_line(kept):
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: "no space left on device"):
        _trial_failed(ValueError("the user's own bug"))
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: None):
        _trial_failed(OSError(errno.EIO, "Input/output error"))
        _never_collected("OSError: Input/output error")
    with logs.storage_failures_in_one_line(False, "/results/x", lambda: "no space left on device"):  # -v
        _trial_failed(OSError(errno.ENOSPC, "No space left on device"))
    with logs.storage_failures_in_one_line(True, "/results/x", lambda: "no space left on device"):
        _never_collected("ValueError: the user's own bug")
    assert kept[:2] == [f"{logs.TRIAL_FAILED[0]}: Trial task failed for trial space_0001"] * 2
    assert kept[2].startswith("ray._private.worker: Unhandled error") and kept[2].endswith("Input/output error")
    assert kept[3] == f"{logs.TRIAL_FAILED[0]}: Trial task failed for trial space_0001"
    assert kept[4].startswith("ray._private.worker: Unhandled error") and kept[4].endswith("own bug")
    assert len(kept) == 5
