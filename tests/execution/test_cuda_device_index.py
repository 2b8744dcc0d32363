"""The devices tuner hands to torch's CUDA memory calls, checked against torch's own index rule, without a
GPU. `torch.cuda.get_per_process_memory_fraction` and `set_per_process_memory_fraction` look a device's
index up with no default (`torch.cuda._utils._get_device_index(device)`), so a bare `cuda` device fails
every GPU trial on its first batch and every trial sharing a GPU before it trains. Here each CUDA call
tuner makes is replaced by one that applies torch's lookup to its argument exactly as torch's own function
does (read from torch's source, since that lookup runs on the CPU build) and answers like a GPU would;
`bench/gpu_check.sh` runs the real calls on a GPU."""

import inspect
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch.cuda._utils import _get_device_index

from tuner.execution import packing
from tuner.execution.trainable import _cap_gpu_memory, device_for
from tuner.settings import Resources
from tuner.training.config_reads import ReadTrackingConfig
from tuner.training.context import LoopSetup, TrialContext, _free_bytes

GPU_BYTES = 80 * packing.GIB
ANSWERS: dict[str, Any] = {
    "get_per_process_memory_fraction": 0.5,  # a packed trial's cap, so the cap's branch runs too
    "set_per_process_memory_fraction": None,
    "mem_get_info": (GPU_BYTES // 2, GPU_BYTES),
    "memory_reserved": 0,
    "max_memory_allocated": 0,
    "reset_peak_memory_stats": None,
    "get_device_properties": SimpleNamespace(total_memory=GPU_BYTES),
    "synchronize": None,
    "empty_cache": None,
}


def _strict(name: str) -> bool:
    """Whether torch's own function looks the index up with no default: what makes a bare `cuda` fail."""
    return "_get_device_index(device)" in inspect.getsource(getattr(torch.cuda, name))


@pytest.fixture
def cuda_calls(monkeypatch) -> list[tuple[str, torch.device]]:
    """torch.cuda as on a one-GPU machine; returns the calls made, each with the device it was given."""
    calls: list[tuple[str, torch.device]] = []

    def stand_in(name: str, strict: bool):
        def call(*args: Any, **kwargs: Any) -> Any:
            device = kwargs.get("device", next((a for a in args if isinstance(a, (torch.device, str, int))), None))
            _get_device_index(device, optional=not strict)  # raises as torch's own function would
            calls.append((name, device))
            return ANSWERS[name]

        return call

    for name in ANSWERS:
        monkeypatch.setattr(torch.cuda, name, stand_in(name, _strict(name)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    return calls


def test_torchs_rule_is_read_from_its_source():
    """The reading above finds the strict lookups (else the stand-ins would let everything pass)."""
    assert _strict("get_per_process_memory_fraction") and _strict("set_per_process_memory_fraction")
    assert not _strict("mem_get_info")
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index"):
        _get_device_index(torch.device("cuda"))


def test_a_loop_given_a_bare_cuda_device_hands_torch_its_index(cuda_calls):
    """A test, a bench or a user's code may build the loop's setup with `torch.device("cuda")`: the
    context's device, and so every call the loop makes, names the GPU."""
    ctx = TrialContext(
        config=ReadTrackingConfig({}),
        setup=LoopSetup(epochs=1, seed=0, device=torch.device("cuda"), parallel="ddp"),
        data=None,
        trial_id="t",
        report=lambda metrics, checkpoint: None,
    )
    # What deciding whether a tensor split goes to the GPU asks (every batch of tuner's loop).
    assert _free_bytes(ctx.device) == int(0.5 * GPU_BYTES)
    ctx.synchronize()
    assert ctx.device == torch.device("cuda", 0)
    assert {name for name, _ in cuda_calls} >= {"get_per_process_memory_fraction", "mem_get_info", "synchronize"}


def test_a_trial_sharing_a_gpu_caps_its_allocator_on_the_indexed_device(cuda_calls):
    device = device_for(Resources(gpus_per_worker=0.25))
    fraction = _cap_gpu_memory(device, 0.25)
    assert device == torch.device("cuda", 0)
    assert fraction == packing.memory_fraction(0.25, GPU_BYTES)
    assert ("set_per_process_memory_fraction", device) in cuda_calls


def test_a_trial_without_a_gpu_asks_cuda_nothing(cuda_calls):
    device = device_for(Resources(gpus_per_worker=0))
    assert device == torch.device("cpu") and _cap_gpu_memory(device, 0) is None and _free_bytes(device) is None
    assert cuda_calls == []
