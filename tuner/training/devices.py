"""A GPU device as torch's CUDA calls need it: always with its index; and waiting for one before a clock
is read.

To tensors `torch.device("cuda")` means the current GPU, but torch's per-process memory calls
(`torch.cuda.get_per_process_memory_fraction`, `set_per_process_memory_fraction`) look the index up
with no default and raise on a device without one. So every device a trial trains on passes through
`with_index` (the trainable's choice, and the context a loop gets, whatever its caller passed): a test,
a bench or a user's own code may say "cuda", and torch still gets `cuda:N`.
"""

import torch


def with_index(device: torch.device) -> torch.device:
    """`device` naming the current GPU's index when it is a GPU without one; any other device as given."""
    if device.type != "cuda" or device.index is not None:
        return device
    return torch.device("cuda", torch.cuda.current_device())


def synchronize(device: torch.device) -> None:
    """Wait until `device` has run everything queued on it (a no-op on the CPU): before a clock is read,
    or a GPU's queued work goes uncounted."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
