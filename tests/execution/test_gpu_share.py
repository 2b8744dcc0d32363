"""`gpus_per_worker = auto` on a real GPU: the smoke step measures the trial's peak GPU memory, `auto`
packs trials by it, a trial sharing the GPU caps its allocator at its share, and one that outgrows it
fails alone with a message naming its share and a larger one, while the others finish. Skipped without
CUDA (tests/execution/test_gpu_auto.py checks the same decisions with Ray's fake GPUs on the CPU);
`bench/gpu_check.sh` should run it on a GPU machine."""

import math
import re
import textwrap

import pytest
import torch

from tuner.execution import packing, preparation
from tuner.spec import space as spaces

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

SPACE = """
import torch
from ray import tune

metric, mode = "score", "max"
# The first config (the smoke step's) takes little; the second more than any shared trial may.
param_space = {"fraction_of_gpu": tune.grid_search([0.0005, 0.6])}
epochs = 1
num_samples = 1


def train_loop(config, ctx):
    total = torch.cuda.get_device_properties(ctx.device).total_memory if ctx.device.type == "cuda" else 0
    held = torch.empty(int(config["fraction_of_gpu"] * total), dtype=torch.uint8, device=ctx.device)
    ctx.report({"score": float(held.numel() > 0)})
"""


def test_the_smoke_step_measures_the_trials_peak_gpu_memory_and_auto_packs_by_it():
    spec = spaces.load("digits_mlp").with_overrides(fixed={"lr": 0.01, "batch_size": 32, "hidden": 32})
    prepared = preparation.load_and_smoke(spec, 0, True)
    measured = prepared.measured
    assert measured is not None, prepared.unmeasured
    assert 0 < measured.peak_bytes < 1 * packing.GIB  # a small MLP's batch
    assert measured.gpu_bytes == torch.cuda.get_device_properties(0).total_memory and measured.step_s > 0
    decision = packing.plan(
        "auto",
        workers=1,
        parallel="ddp",
        cpus_per_worker=1,
        cluster=packing.ClusterGpus(gpus=1, cpus=16, gpus_per_node=1),
        measured=measured,
    )
    assert decision.trials_per_gpu == packing.MAX_TRIALS_PER_GPU, decision.line


@pytest.mark.slow
def test_a_trial_that_outgrows_its_share_of_the_gpu_fails_alone_with_the_fix(own_ray, tmp_path, caplog):
    import logging

    import tuner
    from tuner.settings import RunOptions

    (tmp_path / "greedy.py").write_text(textwrap.dedent(SPACE))
    spec = spaces.load(str(tmp_path / "greedy.py"))
    with caplog.at_level(logging.INFO, logger="tuner"):
        outcome = tuner.run(spec, RunOptions(storage_path=str(tmp_path / "results"), max_failures=0))
    line = next(record.getMessage() for record in caplog.records if "per GPU" in record.getMessage())
    count = int(re.match(r"tuner: (\d+) trials per GPU on \d+ GPUs? \(peak ", line).group(1))  # type: ignore[union-attr]
    assert count >= 2, line
    trials = outcome.trials.set_index("fraction_of_gpu")
    small, greedy = trials.loc[0.0005], trials.loc[0.6]
    assert small["status"] == "finished" and small["device"].startswith("cuda")
    assert 0 < small["gpu_peak_gib"] < 1
    assert greedy["status"] == "error"
    share = packing.share_of(count)
    assert f"ran out of its share of the GPU: gpus_per_worker = {share:g}" in greedy["error"], greedy["error"]
    assert "--gpus-per-worker" in greedy["error"] and not math.isnan(outcome.meta.resources.gpus)
