"""What measuring a trial's model costs costs: the share of a trial's wall time spent in
`ctx.measure_model` (the `latency_ms` forwards; `params` is a sum over the parameters), in tuner's own
loop, in this process, without Ray.

    python bench/model_costs.py [--epochs 10] [--threads 1]

Trials: the digits MLP and CNN for --epochs epochs, and ResNet-18 for one epoch of 2000 random 32x32
images (validation 500), a short trial of a large model, the worst case for a once-per-trial cost.
Prints each trial's wall time, the time in measure_model and its share, and what was measured.
Target: at most 2 % of a trial for the digits models.
"""

import argparse
import time
from typing import Any
from unittest import mock

import torch

from tuner.data.splits import Splits
from tuner.training.context import LoopSetup, TrialContext
from tuner.training.trial import Parts, run_trial_loop


def trial(parts: Parts, config: dict[str, Any], data: Splits, epochs: int) -> tuple[float, float, dict[str, Any]]:
    """(wall s, s in measure_model, the last report) of one trial."""
    spent: list[float] = []
    measure = TrialContext.measure_model

    def timed(ctx: TrialContext, model: Any, inputs: Any) -> Any:
        started = time.perf_counter()
        try:
            return measure(ctx, model, inputs)
        finally:
            spent.append(time.perf_counter() - started)

    rows: list[dict[str, Any]] = []
    setup = LoopSetup(epochs=epochs, seed=0, device=torch.device("cpu"), parallel="ddp")
    started = time.perf_counter()
    with mock.patch.object(TrialContext, "measure_model", timed):
        run_trial_loop(parts, config, setup, data=data, trial_id="t", report=lambda row, _: rows.append(row))
    return time.perf_counter() - started, sum(spent), rows[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="torch threads, as a trial with cpus_per_worker=1")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(2500, 3, 32, 32, generator=generator), torch.randint(0, 10, (2500,), generator=generator)
    cases = [
        (f"digits mlp, {args.epochs} epochs", Parts.of(model="mlp", dataset="digits"), {"batch_size": 64}, args.epochs),
        (f"digits cnn, {args.epochs} epochs", Parts.of(model="cnn", dataset="digits"), {"batch_size": 64}, args.epochs),
        ("resnet18, 1 epoch of 2000 32x32", Parts.of(model="resnet18"), {"batch_size": 128}, 1),
    ]
    for name, parts, config, epochs in cases:
        data = parts.load_data() or Splits((x[:2000], y[:2000]), (x[2000:], y[2000:]))
        trial(parts, config, data, 1)  # warm: imports, allocator, the data on the device
        wall, measuring, last = trial(parts, config, data, epochs)
        print(
            f"{name}: {wall:.2f} s, measure_model {measuring * 1000:.1f} ms = {100 * measuring / wall:.2f} % "
            f"(params={last['params']}, latency_ms={last['latency_ms']:.3g} at batch_size={config['batch_size']})"
        )


if __name__ == "__main__":
    main()
