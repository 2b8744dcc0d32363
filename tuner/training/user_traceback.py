"""A failure in a space module's own code, shown as the user's traceback: their frames, not tuner's.

The smoke step calls the module's model, dataset, loss, metrics or loop from inside tuner's loop;
Python's full traceback would open with a dozen frames of tuner and torch internals. The frames that
matter are the user's own files; torch's and tuner's are left out, and the exception line is kept.
"""

import sysconfig
import traceback
from pathlib import Path

from tuner.errors import TunerError

TUNER_PACKAGE = Path(__file__).resolve().parents[1]
LIBRARY_DIRS = {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")}


def _is_users(filename: str) -> bool:
    path = Path(filename).resolve()
    return not any(path.is_relative_to(root) for root in (TUNER_PACKAGE, *LIBRARY_DIRS))


def _is_tuners(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(TUNER_PACKAGE)


def user_traceback(error: BaseException) -> str:
    """The traceback of `error` with only the user's frames. Where none is on the stack (a layer built
    by the user's model failing inside torch), the line of tuner's loop it came from says which step."""
    stack = traceback.extract_tb(error.__traceback__)
    frames = [frame for frame in stack if _is_users(frame.filename)]
    if frames:
        lines = ["Traceback (most recent call last), the space module's frames:\n", *traceback.format_list(frames)]
    else:
        tuners = [frame for frame in stack if _is_tuners(frame.filename)]
        lines = [f"In tuner's loop, at `{tuners[-1].line}`:\n"] if tuners and tuners[-1].line else []
    lines += traceback.format_exception_only(type(error), error)
    return "".join(lines).rstrip("\n")


class UserCodeError(TunerError):
    """The space module's code raised: `details` is its traceback, shown above the one-line message."""

    def __init__(self, message: str, error: BaseException):
        super().__init__(message)
        self.details = user_traceback(error)
