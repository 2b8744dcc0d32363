"""What tuner's Ray metrics cost the driver per trial, and whether that cost grows with the experiment.

    python bench/ray_metrics.py [--trials 10000] [--concurrent 8]

Drives tuner's Tune callback (tuner/execution/ray_metrics.py) as Tune does, on a real local Ray that
exports the metrics, with real Tune Trial objects of the cheapest kind (one epoch): each trial starts,
reports once and ends, `--concurrent` at a time, with a step's refresh every REFRESH_S of the bench's own
clock. Printed at 1,000, 5,000 and the last size: ms per trial so far (its start, result and end), one
refresh of all the series at that size (what the driver pays every REFRESH_S), and how many series the
refresh sets (bounded: it must not grow with the trials). Targets: flat ms per trial; a refresh that
stays in milliseconds at 10,000 trials.
"""

import argparse
import time

import ray
from ray.tune.experiment import Trial

from tuner.execution import ray_metrics
from tuner.execution.ray_metrics import RayMetrics


class CountingGauge:
    """Counts the series a refresh sets, then sets it on Ray's own gauge."""

    def __init__(self, gauge, seen: set) -> None:
        self.gauge, self.seen = gauge, seen

    def set(self, value, tags):
        self.seen.add((self.gauge._name, tuple(sorted(tags.items()))))
        self.gauge.set(value, tags)

    def inc(self, value, tags):
        self.gauge.inc(value, tags)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10000)
    parser.add_argument("--concurrent", type=int, default=8)
    args = parser.parse_args()
    ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")
    callback = RayMetrics("bench", [("score", "max"), ("cost", "min")], epochs=1)
    callback.setup(total_num_samples=args.trials)
    trials: list[Trial] = []
    running: list[Trial] = []
    spent = 0.0
    last_refresh = time.monotonic()
    for number in range(1, args.trials + 1):
        trial = Trial("bench", config={"x": number}, trial_id=f"bench_{number:05d}", stub=True)
        trial.set_status(Trial.RUNNING)
        trials.append(trial)
        running.append(trial)
        result = {"score": number % 997 / 997, "cost": 1.0, "epoch": 1, "training_iteration": 1}
        trial.update_last_result(result)  # as Tune does before its callbacks see the result
        started = time.perf_counter()
        callback.on_trial_start(number, trials, trial)
        callback.on_trial_result(number, trials, trial, result)
        spent += time.perf_counter() - started
        if len(running) > args.concurrent:
            ended = running.pop(0)
            ended.set_status(Trial.TERMINATED)
            started = time.perf_counter()
            callback.on_trial_complete(number, trials, ended)
            spent += time.perf_counter() - started
        if time.monotonic() - last_refresh >= ray_metrics.REFRESH_S:
            started = time.perf_counter()
            callback.on_step_end(number, trials)
            spent += time.perf_counter() - started
            last_refresh = time.monotonic()
        if number in (1000, 5000, args.trials):
            seen: set = set()
            assert callback._gauges is not None
            real = callback._gauges
            callback._gauges = {name: CountingGauge(gauge, seen) for name, gauge in real.items()}
            started = time.perf_counter()
            callback._refresh(trials)
            refresh_ms = (time.perf_counter() - started) * 1000
            callback._gauges = real
            per_trial = spent / number * 1000
            refresh = f"a refresh {refresh_ms:.2f} ms, {len(seen)} series"
            print(f"{number:>6} trials: {per_trial:.3f} ms per trial, {refresh}")
    ray.shutdown()


if __name__ == "__main__":
    main()
