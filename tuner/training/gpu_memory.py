"""A trial's peak GPU memory, read the same way by the smoke step (which packs trials by it,
tuner/execution/packing.py) and by every report (the `gpu_peak_gib` column). On the CPU nothing is
read: these never touch CUDA unless the device is a GPU."""

import math

import torch

GIB = 2**30


def reset_peak(device: torch.device) -> None:
    """Start counting the peak afresh: a process that ran another trial before (Tune reuses actors)
    must not report that one's peak."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_bytes(device: torch.device) -> int | None:
    """The most the allocator held for tensors since `reset_peak`; None on the CPU."""
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def peak_gib(device: torch.device) -> float:
    """`peak_bytes` in GiB as a report column has it: NaN on the CPU."""
    peak = peak_bytes(device)
    return round(peak / GIB, 4) if peak is not None else math.nan


def total_bytes(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).total_memory


def release_cache(device: torch.device) -> None:
    """Give the GPU memory the allocator keeps cached back, as the driver does after the smoke step so
    that the trials sharing its GPU have it."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
