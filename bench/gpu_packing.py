"""Trials packed on one GPU: aggregate samples/s of 1, 2, 4, 8 trials at once, through `tuner run` and as
the same number of bare torch processes, side by side in one run.

    python bench/gpu_packing.py [--counts 1,2,4,8] [--models cnn,resnet18] [--epochs N] [--budget-s 300]
    python bench/gpu_packing.py --cpu-check     # the code paths on the CPU, tiny sizes (no figures)

Models: a small CNN (two conv blocks, the kind the issue measured at 106k samples/s alone) and
torchvision's ResNet-18, both on synthetic 32x32 images, 10 classes, Adam, batch 128.

  tuner  `python -m tuner run <generated space> --gpus-per-worker 1/N --max-concurrent N`: real Ray,
         fractional GPUs, N configs (a grid of N learning rates), each trial's data put in the object
         store once. A timed epoch runs from the previous epoch's `reported_at` to its own (its
         training, evaluation and checkpoint: what a trial costs).
  bare   N processes started together (a barrier after one warm-up epoch), each a plain torch loop with
         its data already on the GPU; a timed epoch is its training batches, synchronised.

Aggregate samples/s, for both: over the shared window, the span in which every trial was in a timed
epoch (the first epoch is warm-up), each trial's samples inside it (its epochs' rates, prorated) over
the window's length. Trials that start seconds apart are so measured only while all of them run; each
row also prints `skew %`, the spread of the trials' first timed starts against a trial's timed run,
and a row over 10 % says to lengthen the run (--epochs), since its window then covers too little of it.

Printed: each row as it is measured, then the ratios (tuner / bare at the same N; N / 1 of each)
against the issue's targets: tuner >= 0.85x bare at every N, 8 small trials on one GPU >= 5x one, and
`--gpus-per-worker auto` (its smoke step measuring the trial, then packing by it) >= 0.9x the best fixed
N. Then precision rows per model, one trial each, bare and through `tuner run --precision`: fp32 (TF32
off), tf32, bf16 autocast (TF32 on).

Without CUDA (and without --cpu-check) it prints one line saying it needs a GPU and exits 0: nothing
to measure is no failure (as `python tests/training/test_gpu.py` does). `--budget-s` bounds the run:
no row starts after it (listed as skipped) and a running row is stopped at it, so a run under
`timeout` still prints its table. A failed row (a child process's error, a `tuner run` that exits
non-zero) prints why and leaves the other rows theirs.
"""

import argparse
import json
import multiprocessing as mp
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch
from bare_torch import train_epoch  # bench/, beside this script

REPO = Path(__file__).resolve().parents[1]
NUM_CLASSES = 10
PRECISIONS = ("fp32", "tf32", "bf16")
TARGET_VS_BARE, TARGET_EIGHT_VS_ONE, TARGET_AUTO = 0.85, 5.0, 0.9
MAX_SKEW = 0.10  # of a trial's timed run: beyond it the shared window is too small a part of the run

# The models as source text: the bare processes exec it, and the generated space module embeds it, so a
# trial needs nothing of this file (Ray pickles a space's functions by value, not this module).
MODEL_SOURCE = """
import torch
from torch import nn


def build(name):
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
            nn.Flatten(), nn.Linear(64 * 16, 128), nn.ReLU(), nn.Linear(128, 10),
        )
    from torchvision.models import resnet18

    return resnet18(num_classes=10)


def synthetic(samples, image_size):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(samples, 3, image_size, image_size, generator=generator)
    return x, torch.randint(0, 10, (samples,), generator=generator)
"""
_models: dict[str, Any] = {}
exec(MODEL_SOURCE, _models)
build, synthetic = _models["build"], _models["synthetic"]


@dataclass(frozen=True)
class Spec:
    model: str
    samples: int  # training samples per trial
    epochs: int  # the first is warm-up
    batch_size: int = 128
    image_size: int = 32


# Epochs long enough that trials starting a second or two apart still overlap for most of their run.
SIZES = {"cnn": Spec("cnn", 65536, 8), "resnet18": Spec("resnet18", 8192, 8)}
CPU_CHECK = {"cnn": Spec("cnn", 256, 3, 64, 16), "resnet18": Spec("resnet18", 128, 3, 64, 16)}


@dataclass(frozen=True)
class Span:
    """One timed epoch of one trial: wall-clock start and end (time.time()), and its training samples."""

    start: float
    end: float
    samples: int


def shared_window(trials: list[list[Span]]) -> dict[str, float]:
    """Aggregate samples/s while every trial was in a timed epoch, the window's length, and the trials'
    start skew as a percentage of a trial's (the median) timed run."""
    start, end = max(spans[0].start for spans in trials), min(spans[-1].end for spans in trials)
    if end <= start:
        raise RuntimeError("the trials never all trained at once: lengthen the run (--epochs)")
    inside = 0.0
    for spans in trials:
        for span in spans:
            overlap = min(span.end, end) - max(span.start, start)
            if overlap > 0:
                inside += span.samples * overlap / (span.end - span.start)
    firsts = [spans[0].start for spans in trials]
    run = statistics.median(spans[-1].end - spans[0].start for spans in trials)
    return {
        "samples/s": inside / (end - start),
        "window s": end - start,
        "skew %": 100 * (max(firsts) - min(firsts)) / run,
    }


def set_precision(precision: str) -> Any:
    """TF32 on or off as `precision` says; the autocast context for its forwards."""
    tf32 = precision != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16")


def _bare_process(
    index: int, spec: Spec, device_name: str, precision: str, threads: int, barrier: Any, out: Any, wait_s: float
) -> None:
    torch.set_num_threads(threads)
    device = torch.device(device_name)
    autocast = set_precision(precision) if device.type == "cuda" else torch.autocast("cpu", enabled=False)
    torch.manual_seed(index)
    model = build(spec.model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (t.to(device) for t in synthetic(spec.samples, spec.image_size))
    spans: list[Span] = []
    for epoch in range(spec.epochs):
        if epoch == 1:
            barrier.wait(timeout=wait_s)  # every process warmed up: the timed epochs overlap
        started = time.time()
        train_epoch(model, optimizer, x, y, spec.batch_size, autocast)
        spans.append(Span(started, time.time(), spec.samples))
    out.put((index, spans[1:]))


def bare(spec: Spec, count: int, device: str, precision: str, wait_s: float) -> dict[str, float]:
    """`count` plain torch processes training `spec` at once on `device`, over their shared window; a
    process that fails or a row that runs past `wait_s` ends the row with the reason."""
    context = mp.get_context("spawn")
    barrier, out = context.Barrier(count), context.Queue()
    threads = max(1, (os.cpu_count() or 1) // count)
    processes = [
        context.Process(target=_bare_process, args=(i, spec, device, precision, threads, barrier, out, wait_s))
        for i in range(count)
    ]
    for process in processes:
        process.start()
    deadline = time.monotonic() + wait_s
    found: list[tuple[int, list[Span]]] = []
    try:
        while len(found) < count:
            try:
                found.append(out.get(timeout=1))
            except queue.Empty:
                failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if failed or time.monotonic() > deadline:
                    why = f"exit codes {failed}" if failed else f"not done after {wait_s:.0f} s"
                    raise RuntimeError(f"{count} bare processes: {why}") from None
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    return shared_window([spans for _, spans in found])


def space_source(spec: Spec, count: int) -> str:
    """A space module of `count` trials (a grid of learning rates) of `spec` on synthetic data."""
    validation = max(spec.batch_size, spec.samples // 16)
    return MODEL_SOURCE + textwrap.dedent(f"""
        from ray import tune

        metric, mode, epochs = "val_acc", "max", {spec.epochs}
        param_space = {{"lr": tune.grid_search([1e-3 * (1 + i / 10) for i in range({count})]),
                       "batch_size": {spec.batch_size}}}


        def model(config):
            return build({spec.model!r})


        def dataset():
            x, y = synthetic({spec.samples + validation}, {spec.image_size})
            return (x[:{spec.samples}], y[:{spec.samples}]), (x[{spec.samples}:], y[{spec.samples}:])
        """)


def through_tuner(
    spec: Spec, count: int, gpus: str, workdir: str, wait_s: float, extra: tuple[str, ...] = ()
) -> dict[str, float]:
    """`tuner run` of `count` trials of `spec` at once, each with `gpus` GPUs (`auto`, with its smoke step
    to measure the trial, or a number, without one), over their shared window."""
    from tuner.results.report import read_tables  # here: --cpu-check's bare rows need no Ray

    name = f"{spec.model}-{count}-{gpus.replace('/', '_')}-{'-'.join(extra) or 'default'}".replace("--", "")
    space = Path(workdir) / f"{name.replace('-', '_').replace('.', '_')}.py"
    space.write_text(space_source(spec, count))
    command = [sys.executable, "-m", "tuner", "run", str(space), "--gpus-per-worker", gpus]
    command += ["--max-concurrent", str(count), "-q", "--storage-path", workdir, "--name", name, *extra]
    command += [] if gpus == "auto" else ["--no-smoke"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=wait_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"tuner run: not done after {wait_s:.0f} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"tuner run exited {done.returncode}: {(done.stderr or done.stdout).strip()[-800:]}")
    trials, history = read_tables(f"{workdir}/{name}")
    if len(trials) != count or (trials["status"] != "finished").any():
        raise RuntimeError(f"tuner run: expected {count} finished trials, got {trials['status'].tolist()}")
    spans = []
    for _, epochs in history.sort_values("epoch").groupby("trial_id"):
        ends = epochs["reported_at"].tolist()  # epoch 1 (warm-up) ends where the timed ones begin
        spans.append([Span(start, end, spec.samples) for start, end in zip(ends, ends[1:])])
    return shared_window(spans)


class Rows:
    """The rows measured so far, printed as they come, and the run's deadline."""

    def __init__(self, budget_s: float):
        self.rows: list[dict[str, Any]] = []
        self.deadline = time.perf_counter() + budget_s

    def measure(self, label: dict[str, Any], how: Any, *args: Any) -> dict[str, Any] | None:
        """Runs `how(*args, wait_s)`, where wait_s is what is left of the budget."""
        left = self.deadline - time.perf_counter()
        if left <= 0:
            row = {**label, "note": "skipped: --budget-s spent"}
        else:
            try:
                row = {**label, **{key: round(value, 1) for key, value in how(*args, left).items()}}
            except Exception as error:  # a failed row is reported, and the other rows still run
                row = {**label, "note": f"FAILED {type(error).__name__}: {error}"}
        if row.get("skew %", 0) > 100 * MAX_SKEW:
            row["note"] = f"skew over {100 * MAX_SKEW:.0f}% of the run: lengthen it (--epochs)"
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        return row if "samples/s" in row else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1,2,4,8", help="trials per GPU to measure (comma-separated)")
    parser.add_argument("--models", default="cnn,resnet18")
    parser.add_argument("--epochs", type=int, help="epochs per trial, the first of them warm-up (default: by model)")
    parser.add_argument("--budget-s", type=float, default=330, help="start no row after this many seconds")
    parser.add_argument("--no-tuner", action="store_true", help="bare torch rows only (no Ray needed)")
    parser.add_argument("--no-precision", action="store_true", help="leave out the precision rows")
    parser.add_argument("--cpu-check", action="store_true", help="run the code paths on the CPU, tiny sizes")
    args = parser.parse_args()
    counts = [int(n) for n in args.counts.split(",")]
    models = args.models.split(",")
    if not torch.cuda.is_available() and not args.cpu_check:
        print("bench/gpu_packing.py needs a CUDA GPU and sees none: nothing measured (bench/gpu_check.sh runs it)")
        return
    device, sizes = ("cpu", CPU_CHECK) if args.cpu_check else ("cuda", SIZES)
    if args.epochs:
        sizes = {model: replace(spec, epochs=max(2, args.epochs)) for model, spec in sizes.items()}
    gpus_per = (lambda n: "0") if args.cpu_check else (lambda n: f"{1 / n:.6g}")
    if not args.cpu_check:
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {os.cpu_count()} CPUs", flush=True)
    rows = Rows(args.budget_s)
    table: dict[tuple[str, str, int], dict[str, Any]] = {}

    def measure(model: str, run: str, trials: int, how: Any, *how_args: Any) -> None:
        if found := rows.measure({"model": model, "run": run, "trials": trials}, how, *how_args):
            table[(model, run, trials)] = found

    with tempfile.TemporaryDirectory() as workdir:
        # Counts outer, models inner: a run cut short by --budget-s still has both models at the first
        # counts (give them as 1,8,4,2 to have the 8-vs-1 ratio early).
        for n in counts:
            for model in models:
                measure(model, "bare", n, bare, sizes[model], n, device, "tf32")
                if not args.no_tuner:
                    measure(model, "tuner", n, through_tuner, sizes[model], n, gpus_per(n), workdir)
        if not args.no_tuner:
            for model in models:  # on the CPU, auto finds no GPU and trains there: the code path only
                measure(model, "tuner auto", max(counts), through_tuner, sizes[model], max(counts), "auto", workdir)
        print_ratios(table, models, counts)
        for model in [] if args.no_precision else models:
            for precision in PRECISIONS:
                measure(model, f"bare, {precision}", 1, bare, sizes[model], 1, device, precision)
                if not args.no_tuner:
                    with_precision = partial(through_tuner, extra=("--precision", precision))
                    measure(model, f"tuner, {precision}", 1, with_precision, sizes[model], 1, gpus_per(1), workdir)


def print_ratios(table: dict[tuple[str, str, int], dict[str, Any]], models: list[str], counts: list[int]) -> None:
    print("\nratios (aggregate samples/s over the window in which every trial trained)")
    for model in models:
        for n in counts:
            tuner, bare_row = table.get((model, "tuner", n)), table.get((model, "bare", n))
            if tuner and bare_row:
                ratio = tuner["samples/s"] / bare_row["samples/s"]
                verdict = "ok" if ratio >= TARGET_VS_BARE else "BELOW TARGET"
                print(f"  {model}, {n} per GPU: tuner / bare = {ratio:.2f} (target >= {TARGET_VS_BARE}) {verdict}")
        for run in ("bare", "tuner"):
            one = table.get((model, run, 1))
            for n in counts[1:]:
                if one and (many := table.get((model, run, n))):
                    ratio = many["samples/s"] / one["samples/s"]
                    target = (
                        f" (target >= {TARGET_EIGHT_VS_ONE} for 8 small trials)" if n == 8 and model == "cnn" else ""
                    )
                    print(f"  {model}, {run}: {n} per GPU / 1 = {ratio:.2f}{target}")
        fixed = [table[(model, "tuner", n)]["samples/s"] for n in counts if (model, "tuner", n) in table]
        if (auto := table.get((model, "tuner auto", max(counts)))) and fixed:
            ratio = auto["samples/s"] / max(fixed)
            print(f"  {model}: auto / best fixed count = {ratio:.2f} (target >= {TARGET_AUTO})")
    print(flush=True)


if __name__ == "__main__":
    main()
