"""What `tuner.run`, `tuner.resume` and `tuner.extend` return: the experiment as the run left it."""

from dataclasses import dataclass

import pandas as pd

from tuner.storage.meta import ExperimentMeta


@dataclass(frozen=True)
class Outcome:
    """What `tuner.run`, `resume` and `extend` return: the experiment as the run left it."""

    experiment_path: str
    trials: pd.DataFrame
    metric: str
    params: list[str]
    meta: ExperimentMeta  # as the run left it: its total of trials, and what stopped it
    unread: str | None = None  # the warning naming param_space keys no trial read
    nothing_to_resume: str | None = None  # why `resume` ran nothing: every trial had ended
