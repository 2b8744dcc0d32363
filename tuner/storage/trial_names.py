"""What a trial and its directory are called, `<space>_<trial id>`, and the trial id read back from a
directory's name: one place for both directions, so that reading trial directories without Ray's
state (tuner/storage/trial_files.py) cannot drift from how they were named."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ray.tune.experiment import Trial


def trial_name(space: str, trial_id: str) -> str:
    """Short, and unique within the experiment: Ray's default adds the whole config."""
    return f"{space}_{trial_id}"


def trial_id_of(space: str, directory_name: str) -> str:
    return directory_name.removeprefix(trial_name(space, ""))


@dataclass(frozen=True)
class TrialNamer:
    """Tune's trial_name_creator and trial_dirname_creator: both `trial_name`."""

    space: str

    def __call__(self, trial: "Trial") -> str:
        return trial_name(self.space, trial.trial_id)
