"""What the live study costs the driver per trial, and whether that cost grows with the experiment.

    python bench/study_journal.py [--trials 10000]

The driver writes each trial into Optuna's journal as tuner/execution/live_study.py does for the cheapest
trial (one epoch): the trial with two params, one intermediate value, its status attribute and its end,
each an append with its fsync, through the same storage (tuner/storage/study_journal.py). Printed at
1,000, 5,000 and the last size: ms per trial so far, and the process's peak RSS over its start (what
Optuna's in-memory replay of the study holds). Targets: flat ms per trial; RSS within tens of MiB at
10,000 trials (the driver's own is ~1.5 GiB there, bench/scale.py).
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

import optuna

from tuner.storage.study_journal import journal_storage, running_trial


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10000)
    trials = parser.parse_args().trials
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        storage = journal_storage(Path(folder) / "optuna.journal")
        study_id = storage.create_new_study([optuna.study.StudyDirection.MAXIMIZE], "bench")
        distributions = {name: optuna.distributions.FloatDistribution(0, 1) for name in ("x", "y")}
        before, started = peak_rss_mib(), time.perf_counter()
        for number in range(1, trials + 1):
            template = running_trial(f"bench_{number:05d}", {"x": 0.5, "y": 0.5}, distributions)
            trial_id = storage.create_new_trial(study_id, template_trial=template)
            storage.set_trial_intermediate_value(trial_id, 1, 0.3)
            storage.set_trial_user_attr(trial_id, "tuner_status", "finished")
            storage.set_trial_state_values(trial_id, optuna.trial.TrialState.COMPLETE, [0.3])
            if number in (1000, 5000, trials):
                per_trial = (time.perf_counter() - started) / number * 1000
                size = (Path(folder) / "optuna.journal").stat().st_size / 2**20
                grown = peak_rss_mib() - before
                print(f"{number:>6} trials: {per_trial:.2f} ms per trial, +{grown:.0f} MiB RSS, journal {size:.1f} MiB")


if __name__ == "__main__":
    main()
