"""How trials share the cluster's GPUs, the rule stated once: what `gpus_per_worker = auto` resolves to,
from what the cluster has and what the smoke step measured, and how much of its GPU a packed trial's
process may take.

Ray's fractional GPUs are logical only (ray-project/ray#13680): four trials at 0.25 GPU each share one
GPU's memory with nothing to keep one from taking the others'. So `auto` packs by measurement (the
trial's peak GPU memory in the smoke step, with headroom), never more than the cluster's CPUs can feed,
and each packed trial's process caps its allocator at its share (`memory_fraction`), so a trial that
outgrows its share fails alone.

Pure arithmetic, no Ray or torch: the driver reads the cluster and the measurement, and the tests
check the rule over many cases in milliseconds.
"""

import math
from dataclasses import dataclass

from tuner.storage.meta import GpuRecord

GIB = 2**30
# The smoke step runs one batch: later batches, evaluation and the caching allocator's fragmentation
# take more than its peak, so a trial is planned at this multiple of it.
HEADROOM = 1.5
# Each process's CUDA context and cuBLAS/cuDNN workspaces, which the allocator's peak does not count.
CUDA_CONTEXT_BYTES = GIB // 2
USABLE_FRACTION = 0.9  # of a GPU's memory; the rest for the driver, other processes and the unexpected
MAX_TRIALS_PER_GPU = 8  # beyond this the GPU's time, not its memory, is what trials wait for
# Nothing measured (the driver has no GPU, or --no-smoke): a trial has a GPU to itself, which cannot
# run out of memory for sharing; the line says how to share it instead.
DEFAULT_TRIALS_PER_GPU = 1
RAY_RESOURCE_STEP = 1e-4  # Ray keeps resource quantities to 4 decimal places


@dataclass(frozen=True)
class Measured:
    """What the smoke step measured on the driver's GPU."""

    peak_bytes: int  # torch.cuda.max_memory_allocated over the step
    gpu_bytes: int  # the GPU's total memory
    step_s: float  # the step's time (one batch of the first config, model built and first call included)


@dataclass(frozen=True)
class ClusterGpus:
    gpus: float  # ray.cluster_resources()["GPU"]
    cpus: float
    gpus_per_node: float  # the most GPUs one node has: what one dp trial can get


@dataclass(frozen=True)
class GpuPlan:
    """gpus_per_worker as the trials run with it, and why, in one line."""

    gpus_per_worker: float
    trials_per_gpu: int  # trials sharing one GPU; 0: the trials train on the CPU, 1: one GPU or more each
    line: str  # the decision as the driver logs it before the first trial
    setting: float | str  # what was asked for: "auto" or the number given
    measured: Measured | None = None

    def record(self) -> GpuRecord:
        """As tuner.json keeps it (beside the resolved resources)."""
        return GpuRecord(
            setting=self.setting,
            gpus_per_worker=self.gpus_per_worker,
            trials_per_gpu=self.trials_per_gpu,
            why=self.line,
            peak_gib=round(self.measured.peak_bytes / GIB, 4) if self.measured else None,
            gpu_gib=round(self.measured.gpu_bytes / GIB, 2) if self.measured else None,
            step_s=round(self.measured.step_s, 4) if self.measured else None,
        )


def trials_per_gpu(peak_bytes: int, gpu_bytes: int, cpus_per_gpu: float, cpus_per_worker: float) -> tuple[int, str]:
    """min(floor(usable memory / (peak x headroom + context)), floor(CPUs per GPU / cpus_per_worker),
    MAX_TRIALS_PER_GPU), at least 1; and what bound it, in words."""
    by_memory = math.floor(gpu_bytes * USABLE_FRACTION / (peak_bytes * HEADROOM + CUDA_CONTEXT_BYTES))
    by_cpus = how_many_fit(cpus_per_gpu, cpus_per_worker)
    count = max(1, min(by_memory, by_cpus, MAX_TRIALS_PER_GPU))
    if count == by_cpus and by_cpus < min(by_memory, MAX_TRIALS_PER_GPU):
        bound = f"the cluster's {cpus_per_gpu:g} CPUs per GPU feed {count} at {cpus_per_worker:g} each"
    elif count == by_memory and by_memory < MAX_TRIALS_PER_GPU:
        bound = f"as many as its memory holds at {HEADROOM:g}x the peak"
    else:
        bound = f"{MAX_TRIALS_PER_GPU} at most"
    return count, bound


def how_many_fit(have: float, need: float) -> int:
    """How many requests of `need` fit in `have` of a resource, counted as Ray counts: in its fixed-point
    steps, so one GPU holds five trials at 0.2 (where float division gives 4.999... and floor 4)."""
    return round(have / RAY_RESOURCE_STEP) // max(1, round(need / RAY_RESOURCE_STEP))


def share_of(count: int) -> float:
    """gpus_per_worker for `count` trials per GPU, rounded down to Ray's step so that `count` fit."""
    return math.floor(1 / count / RAY_RESOURCE_STEP) * RAY_RESOURCE_STEP if count > 1 else 1.0


def plan(
    setting: float | str,
    *,
    workers: int,
    parallel: str,
    cpus_per_worker: float,
    cluster: ClusterGpus,
    measured: Measured | None,
    unmeasured: str = "the driver has no GPU to measure a trial on",
) -> GpuPlan:
    """What gpus_per_worker the trials get. `unmeasured` says why `measured` is None."""
    gpus = f"{cluster.gpus:g} GPU{'s' if cluster.gpus != 1 else ''}"
    if not isinstance(setting, str):  # a number given: it wins
        if setting <= 0:
            return GpuPlan(0.0, 0, "trials train on the CPU (gpus_per_worker = 0)", setting)
        count = how_many_fit(1, setting) if setting < 1 else 1
        each = f"{count} trials per GPU" if count > 1 else f"{setting:g} GPU{'s' if setting > 1 else ''} per worker"
        return GpuPlan(float(setting), count, f"{each} on {gpus} (gpus_per_worker = {setting:g}, as set)", setting)
    if cluster.gpus <= 0:
        return GpuPlan(0.0, 0, "no GPU in the cluster: trials train on the CPU", setting)
    if parallel == "dp":
        whole = max(1, math.floor(cluster.gpus_per_node))
        return GpuPlan(float(whole), 1, f"a dp trial gets the {whole} GPUs of a node, of {gpus}", setting)
    if workers > 1:
        return GpuPlan(
            1.0,
            1,
            f"each of a trial's {workers} workers gets a whole GPU of {gpus} (NCCL takes one rank per GPU)",
            setting,
        )
    if measured is None:
        count = DEFAULT_TRIALS_PER_GPU
        return GpuPlan(
            share_of(count),
            count,
            f"1 trial per GPU on {gpus} ({unmeasured}; to share each GPU between 4 trials: --gpus-per-worker 0.25)",
            setting,
        )
    cpus_per_gpu = cluster.cpus / cluster.gpus
    count, bound = trials_per_gpu(measured.peak_bytes, measured.gpu_bytes, cpus_per_gpu, cpus_per_worker)
    peak = f"peak {measured.peak_bytes / GIB:.2g} GiB each, measured in the smoke step"
    trials = f"{count} trials per GPU" if count > 1 else "1 trial per GPU"
    return GpuPlan(share_of(count), count, f"{trials} on {gpus} ({peak}; {bound})", setting, measured)


def memory_fraction(gpus_per_worker: float, gpu_bytes: int) -> float | None:
    """The fraction of its GPU a trial's process lets its allocator take
    (torch.cuda.set_per_process_memory_fraction), or None when the trial has a GPU or more to itself.
    Its share, less the CUDA context the share must also hold (never below half the share)."""
    if not 0 < gpus_per_worker < 1:
        return None
    return max(gpus_per_worker - CUDA_CONTEXT_BYTES / gpu_bytes, gpus_per_worker / 2)
