"""`gpus_per_worker = auto` through real runs on a Ray instance with fake GPUs (Ray hands out GPU
shares and sets CUDA_VISIBLE_DEVICES without CUDA): the one line before the first trial, the GPU each
trial gets, tuner.json's record, and no CUDA touched where there is none. What needs a real GPU (the
smoke step's measured peak, the memory cap, the out-of-memory message) runs in tests/training/test_gpu.py
style on a GPU machine."""

import json
import logging
import math
import textwrap
from pathlib import Path

import pytest
import ray

import tuner
from tests.conftest import shutdown_ray
from tuner.settings import RunOptions
from tuner.spec import space as spaces

pytestmark = pytest.mark.slow

SPACE = """
import ray
import torch
from ray import tune

metric, mode = "score", "max"
param_space = {"x": tune.grid_search([1, 2])}
epochs = 1
num_samples = 1


def train_loop(config, ctx):
    ctx.report(
        {
            "score": config["x"],
            "gpu_ids": ",".join(str(gpu) for gpu in ray.get_gpu_ids()),
            "cuda_used": int(torch.cuda.is_initialized()),
        }
    )
"""


def test_auto_gives_each_trial_a_gpu_of_the_cluster_and_says_so_in_one_line(own_ray, tmp_path, caplog):
    (tmp_path / "fake_gpus.py").write_text(textwrap.dedent(SPACE))
    spec = spaces.load(str(tmp_path / "fake_gpus.py"))
    assert spec.resources.gpus_auto
    ray.init(address="local", num_cpus=2, num_gpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        with caplog.at_level(logging.INFO, logger="tuner"):
            auto = tuner.run(spec, RunOptions(storage_path=str(tmp_path / "results"), name="auto"))
            halves = tuner.run(
                spec.with_overrides(gpus_per_worker=0.5),
                RunOptions(storage_path=str(tmp_path / "results"), name="half"),
            )
    finally:
        shutdown_ray()
    lines = [record.getMessage() for record in caplog.records if "GPU" in record.getMessage()]
    assert lines == [
        "tuner: 1 trial per GPU on 2 GPUs (the driver has no GPU to measure a trial on; to share each GPU "
        "between 4 trials: --gpus-per-worker 0.25)",
        "tuner: 2 trials per GPU on 2 GPUs (gpus_per_worker = 0.5, as set)",
    ]
    for outcome, resolved, setting in ((auto, 1.0, "auto"), (halves, 0.5, 0.5)):
        trials = outcome.trials
        assert (trials["status"] == "finished").all() and len(trials) == 2
        # Ray gave each trial one GPU of the two; without CUDA the trial trains on the CPU, untouched.
        assert all(str(ids).isdigit() and int(ids) in (0, 1) for ids in trials["gpu_ids"])
        assert (trials["cuda_used"] == 0).all()
        assert (trials["device"] == "cpu").all() and trials["gpu_peak_gib"].map(math.isnan).all()
        recorded = json.loads(Path(outcome.experiment_path, "tuner.json").read_text())
        assert recorded["resources"]["gpus_per_worker"] == resolved == outcome.meta.resources.gpus_per_worker
        assert recorded["gpus"]["setting"] == setting and recorded["gpus"]["gpus_per_worker"] == resolved
        assert recorded["gpus"]["why"] == lines[0 if setting == "auto" else 1].removeprefix("tuner: ")
