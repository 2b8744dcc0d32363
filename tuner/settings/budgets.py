"""The two small languages of budgets beyond `num_samples`: `--time-budget 30m` and `--stop "val_acc>=0.98"`.
Read here without Ray; `tuner/execution/stopper.py` makes a stop condition Ray Tune's Stopper."""

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from tuner.errors import TunerError

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}


def parse_duration(text: str, what: str = "time budget", option: str = "--time-budget") -> float:
    """Seconds in `90`, `90s`, `30m`, `2h` or `1h30m`; `what` and `option` name it in an error."""
    cleaned = text.strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", cleaned)
    if not cleaned or parts is None or not any(parts.groups()):
        raise TunerError(f"{what} {text!r} is not a duration; write e.g. 90s, 30m, 2h or 1h30m")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise TunerError(f"{what} {text!r} must be longer than zero")
    if total > MAX_TIME_BUDGET_S:
        raise TunerError(
            f"{what} {text!r} is longer than a year ({MAX_TIME_BUDGET_S / 3600:g}h), the longest it may be: "
            f"nothing lasts that long; leave {option} out to run without one"
        )
    return total


def parse_keep(text: str) -> float:
    """`--keep-ray 10m`: how long a kept local Ray instance waits, idle, for the next run."""
    return parse_duration(text, "--keep-ray", "--keep-ray")


MAX_TIME_BUDGET_S = 365 * 24 * 3600


def stop_reached(stop: str, trial_id: str) -> str:
    """What ended a run, in the words the live view, the summary and tuner.json share."""
    return f"{stop} reached by trial {trial_id}"


def time_budget_reached(time_budget: str) -> str:
    return f"time budget {time_budget} reached"


def format_duration(seconds: float) -> str:
    """`m:ss`, or `h:mm:ss` from an hour on: how the live view and `tuner list` show elapsed times."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass(frozen=True)
class StopCondition:
    """`metric op value`: the experiment ends once any trial's metric crosses the threshold."""

    metric: str
    op: str
    value: float

    def reached(self, score: float) -> bool:
        return OPERATORS[self.op](score, self.value)


def parse_stop(text: str) -> StopCondition:
    match = re.fullmatch(r"\s*(\w+)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*", text)
    if match is None:
        raise TunerError(f'stop condition {text!r} is not METRIC OP NUMBER; write e.g. "val_acc>=0.98"')
    metric, op, raw = match.groups()  # whether the loop reports `metric` is known after the smoke step
    try:
        value = float(raw)
    except ValueError:
        raise TunerError(f"stop condition {text!r}: {raw!r} is not a number") from None
    return StopCondition(metric, op, value)
