"""tuner at 1,000 to 10,000 trials, beside a plain Ray Tune script running the same trials, in one run.

    python bench/scale.py [--trials 1000 3000 10000] [--keep DIR] [--together 3 --together-trials 1000]
                          [--interrupted 10000]

The cheapest trial there is (one report, no torch work), random search over two floats. For each size:
(a) a plain Ray Tune script (`tune.Tuner`, a function trainable, `reuse_actors=True`, the same
num_samples, its own local Ray instance) and (b) `tuner run --no-smoke -q` of a space module with the
same trial, each a fresh process, whole-process wall time and the driver process's peak RSS (sampled
every 0.1 s). Then, on tuner's experiment: `tuner report`, `tuner report --html`, `tuner list` of its
storage path and `tuner resume` of the finished experiment, each timed as a user runs it, and the
experiment's size on disk beside Ray Tune's.

Printed: a row per size (walls, tuner / Ray Tune, peak RSS), the cost of each extra trial between
sizes for both, and the reading timings. Targets on 2 cores: tuner / Ray Tune <= 1.0 at each size;
<= 15 ms per extra trial; driver RSS from the smallest to the largest size grows <= 25 %;
at 10,000 trials `report` <= 3 s, `--html` <= 10 s, `resume` <= 15 s, `list` <= 1 s.

With --together N: N experiments of --together-trials trials started at the same moment on one kept
Ray instance (`tuner run --keep-ray`, default names), against one such experiment alone on it: each
must finish with all its trials, under its own name, in no more than N times the one alone's wall.

With --interrupted N: a run of N trials interrupted as a user does (SIGINT, Ctrl-C) once half its trials
are in storage, then `tuner resume` of it, timed, which must end with all N trials finished.
"""

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SPACE = '''"""The cheapest trial: one report, no torch work."""
from ray import tune

param_space = {"x": tune.uniform(0, 1), "y": tune.uniform(0, 1)}
metric, mode, epochs, search = "score", "max", 1, "random"


def train_loop(config, ctx):
    ctx.report({"score": config["x"] + config["y"]})
'''

RAY_TUNE = """
import sys
import ray
from ray import tune

trials, storage = int(sys.argv[1]), sys.argv[2]


def trial(config):
    tune.report({"score": config["x"] + config["y"]})


ray.init(logging_level="ERROR")
tune.Tuner(
    trial,
    param_space={"x": tune.uniform(0, 1), "y": tune.uniform(0, 1)},
    tune_config=tune.TuneConfig(metric="score", mode="max", num_samples=trials, reuse_actors=True),
    run_config=tune.RunConfig(name=f"ray-{trials}", storage_path=storage, verbose=0),
).fit()
"""


@dataclass
class Measured:
    wall_s: float
    peak_rss_mib: float
    returncode: int
    tail: str


def measure(command: list[str], cwd: Path) -> Measured:
    """Wall time of the whole process and the peak RSS of that process (the driver: Ray's own
    processes are its children, not counted)."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        watched = psutil.Process(process.pid)
        while not done.is_set():
            try:
                peak = max(peak, watched.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    return Measured(wall, peak / 2**20, process.returncode, output[-3000:])


def size_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def checked(what: str, measured: Measured) -> Measured:
    if measured.returncode != 0:
        sys.exit(f"{what} failed (exit {measured.returncode}):\n{measured.tail}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--keep", type=Path, help="keep the experiments in this directory")
    parser.add_argument("--together", type=int, default=0, help="also N experiments at once on one kept Ray")
    parser.add_argument("--together-trials", type=int, default=1000)
    parser.add_argument("--interrupted", type=int, default=0, help="also resume a run of N trials cut at half")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tuner-scale-") as temporary:
        work = args.keep or Path(temporary)
        if args.trials != [0]:
            measure_all(args.trials, work)
        if args.together:
            together(args.together, args.together_trials, work)
        if args.interrupted:
            interrupted(args.interrupted, work)
    if args.keep:
        print(f"experiments: {args.keep}")


def together(count: int, trials: int, work: Path) -> None:
    """`count` experiments started at once on one kept instance, against one alone on it."""
    folder = work / f"together-{count}x{trials}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "cheap.py").write_text(SPACE)

    def run(samples: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tuner",
            "run",
            "cheap.py",
            "--num-samples",
            str(samples),
            "--no-smoke",
            "-q",
            "--keep-ray",
        ]

    try:
        checked("the run that starts the kept instance", measure(run(2), folder))
        alone = checked("one experiment alone", measure(run(trials), folder))
        started = time.monotonic()
        processes = [
            subprocess.Popen(run(trials), cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(count)
        ]
        walls = []
        for process in processes:
            output, _ = process.communicate()
            walls.append(time.monotonic() - started)
            if process.returncode != 0:
                sys.exit(f"an experiment run together failed (exit {process.returncode}):\n{output[-3000:]}")
    finally:
        subprocess.run([sys.executable, "-m", "tuner", "down"], cwd=folder, capture_output=True)
    # Default names sort by start time: the last `count` are the experiments run together.
    experiments = sorted(p for p in (folder / "tuner_results").iterdir() if (p / "tuner.json").is_file())[-count:]
    finished = [len(list(p.glob("cheap_*/result.json"))) for p in experiments]
    print(
        f"\n{count} experiments of {trials} trials at once on one kept instance: walls "
        f"{', '.join(f'{w:.1f}' for w in walls)} s; one alone {alone.wall_s:.1f} s; the slowest / "
        f"({count} x alone) = {max(walls) / (count * alone.wall_s):.2f}; experiments {len(experiments)} "
        f"(names {', '.join(p.name for p in experiments)}), trials with results {finished}"
    )


def interrupted(trials: int, work: Path) -> None:
    """A run cut by SIGINT once half its trials reached storage, then resumed to the end."""
    import pandas as pd

    folder = work / f"interrupted-{trials}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "cheap.py").write_text(SPACE)
    experiment = folder / "store" / "cut"
    tuner = [sys.executable, "-m", "tuner"]
    run = [*tuner, "run", "cheap.py", "--num-samples", str(trials), "--no-smoke", "-q"]
    started = time.monotonic()
    process = subprocess.Popen(
        [*run, "--storage-path", str(folder / "store"), "--name", "cut"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    stored = 0
    while process.poll() is None and stored < trials // 2:
        time.sleep(1)
        stored = sum(1 for _ in experiment.glob("cheap_*/result.json")) if experiment.is_dir() else 0
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate()
    cut_after = time.monotonic() - started
    resumed = checked("tuner resume of the interrupted run", measure([*tuner, "resume", str(experiment), "-q"], folder))
    statuses = pd.read_parquet(experiment / "trials.parquet")["status"].value_counts().to_dict()
    print(
        f"\na run of {trials} trials cut by SIGINT after {cut_after:.1f} s with {stored} trials in storage "
        f"(exit {process.returncode}); `tuner resume` took {resumed.wall_s:.1f} s (peak RSS "
        f"{resumed.peak_rss_mib:.0f} MiB) and left {statuses}"
    )


def measure_all(sizes: list[int], work: Path) -> None:
    (work / "cheap.py").write_text(SPACE)
    tuner = [sys.executable, "-m", "tuner"]
    rows = []
    for trials in sizes:
        storage = work / f"store-{trials}"
        shutil.rmtree(storage, ignore_errors=True)
        ray_run = checked("Ray Tune", measure([sys.executable, "-c", RAY_TUNE, str(trials), str(storage)], work))
        print(f"{trials} trials: Ray Tune {ray_run.wall_s:.1f} s", flush=True)
        tuner_run = checked(
            "tuner run",
            measure(
                [
                    *tuner,
                    "run",
                    "cheap.py",
                    "--num-samples",
                    str(trials),
                    "--no-smoke",
                    "-q",
                    "--storage-path",
                    str(storage),
                    "--name",
                    f"tuner-{trials}",
                ],
                work,
            ),
        )
        experiment = storage / f"tuner-{trials}"
        print(f"{trials} trials: tuner {tuner_run.wall_s:.1f} s", flush=True)
        report = checked("tuner report", measure([*tuner, "report", str(experiment)], work))
        html = checked("tuner report --html", measure([*tuner, "report", str(experiment), "--html"], work))
        listing = checked("tuner list", measure([*tuner, "list", str(storage)], work))
        resume = checked("tuner resume", measure([*tuner, "resume", str(experiment), "-q"], work))
        rows.append(
            (
                trials,
                ray_run,
                tuner_run,
                report,
                html,
                listing,
                resume,
                size_mib(storage / f"ray-{trials}"),
                size_mib(experiment),
            )
        )

    print(
        f"\n{'trials':>7} {'Ray Tune s':>10} {'tuner s':>8} {'tuner/Ray':>9} {'Ray RSS MiB':>11} "
        f"{'tuner RSS MiB':>13} {'report s':>8} {'--html s':>8} {'list s':>6} {'resume s':>8} "
        f"{'Ray MiB':>7} {'tuner MiB':>9}"
    )
    for trials, ray_run, tuner_run, report, html, listing, resume, ray_size, tuner_size in rows:
        print(
            f"{trials:>7} {ray_run.wall_s:>10.1f} {tuner_run.wall_s:>8.1f} "
            f"{tuner_run.wall_s / ray_run.wall_s:>9.2f} {ray_run.peak_rss_mib:>11.0f} {tuner_run.peak_rss_mib:>13.0f} "
            f"{report.wall_s:>8.1f} {html.wall_s:>8.1f} {listing.wall_s:>6.1f} {resume.wall_s:>8.1f} "
            f"{ray_size:>7.0f} {tuner_size:>9.0f}"
        )
    for (n1, ray1, tuner1, *_), (n2, ray2, tuner2, *_) in zip(rows, rows[1:]):
        extra = n2 - n1
        print(
            f"each extra trial from {n1} to {n2}: Ray Tune {1000 * (ray2.wall_s - ray1.wall_s) / extra:.1f} ms, "
            f"tuner {1000 * (tuner2.wall_s - tuner1.wall_s) / extra:.1f} ms"
        )
    if len(rows) > 1:
        first, last = rows[0][2].peak_rss_mib, rows[-1][2].peak_rss_mib
        print(f"tuner's driver peak RSS from {rows[0][0]} to {rows[-1][0]} trials: {100 * (last / first - 1):+.0f} %")


if __name__ == "__main__":
    main()
