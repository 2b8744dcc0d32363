"""The least any Ray Tune run pays on this machine, tuner or not: the floor under `tuner run`'s time to its
first report on a warm instance, to hold against Optuna's whole time to target (bench/time_to_target.py).

    python bench/ray_tune_floor.py [--runs 3]

A local Ray instance is started once and kept (a child process, as `tuner run --keep-ray` keeps one).
Then each run is a fresh driver process doing only what any Ray Tune search of a torch model must:
import ray, ray.tune and torch, connect, fit 2 trials at once whose function imports torch and takes one
Adam step (a fresh process's first optimizer step imports torch._dynamo) and reports. Nothing of
tuner's runs. Printed, in seconds after the driver process started: its imports done, connected, the
trial process born (from /proc, to the clock tick), the trial function entered, the first report, exit.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

# The instance and its drivers without token authentication: the floor of Ray Tune itself, not of the
# sign-in (tuner's local instances keep it).
ENVIRONMENT = {**os.environ, "RAY_AUTH_MODE": "disabled"}

INSTANCE = """
import sys, ray
ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # up until the benchmark closes the pipe
"""

DRIVER = """
import os, sys, time
started = float(sys.argv[1])
import ray
import torch
from ray import tune
imported = time.time() - started
ray.init(address=sys.argv[2], logging_level="ERROR")
connected = time.time() - started


def process_start() -> float:  # as tuner/execution/trial_phases.py reads it; written out: no tuner here
    with open("/proc/self/stat") as stat:
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))


def trial(config):
    entered = time.time()
    import torch

    net = torch.nn.Linear(64, 10)
    optimizer = torch.optim.Adam(net.parameters())
    net(torch.randn(8, 64)).sum().backward()
    optimizer.step()
    tune.report({"born": process_start(), "entered": entered, "reported": time.time()})


results = tune.Tuner(
    trial,
    param_space={"x": tune.grid_search([1, 2])},
    tune_config=tune.TuneConfig(max_concurrent_trials=2),
    run_config=tune.RunConfig(verbose=0),
).fit()
first = min(results, key=lambda r: r.metrics["reported"]).metrics
print(imported, connected, first["born"] - started, first["entered"] - started, first["reported"] - started,
      time.time() - started)
"""

COLUMNS = ("driver imports", "connected", "trial process born", "trial entered", "first report", "exit")


def measure(runs: int) -> list[list[float]]:
    """COLUMNS of `runs` fresh drivers, one after another, on one instance started for them."""
    instance = subprocess.Popen(
        [sys.executable, "-c", INSTANCE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENVIRONMENT
    )
    try:
        address = instance.stdout.readline().strip() if instance.stdout else ""
        if not address:
            sys.exit("the local Ray instance did not start")
        rows = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", DRIVER, repr(time.time()), address],
                capture_output=True,
                text=True,
                env=ENVIRONMENT,
                check=True,
            ).stdout
            rows.append([float(value) for value in out.split()[-len(COLUMNS) :]])
        return rows
    finally:
        if instance.stdin:
            instance.stdin.close()
        instance.wait(timeout=60)


def show(rows: list[list[float]]) -> list[float]:
    """Prints the table; returns the medians."""
    print(f"Ray Tune's floor on a warm local instance ({len(rows)} fresh drivers; seconds after each started):")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + " ---: |" * len(COLUMNS))
    medians = [statistics.median(column) for column in zip(*rows)]
    for row in [*rows, medians]:
        print("| " + " | ".join(f"{value:.2f}" for value in row) + " |")
    print("(the last row: medians)")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    show(measure(parser.parse_args().runs))


if __name__ == "__main__":
    main()
