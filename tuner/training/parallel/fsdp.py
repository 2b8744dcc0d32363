"""Fully sharded data parallelism (torch's FSDP2, `fully_shard`): for a model whose parameters,
gradients and optimizer state do not fit one device, each rank keeps a 1/N shard and gathers a
layer's parameters only while it runs.

Checkpoints hold the full, unsharded state, gathered into rank 0's host memory with torch's
distributed state-dict API, so a restore (a retry, `tuner resume`, a PBT exploit) loads into any
number of ranks and the checkpoint also loads into the unsplit model. A model too big for one host's
memory would need per-rank sharded checkpoints (torch.distributed.checkpoint); tuner does not write
those yet.
"""

from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard

from tuner.training import devices
from tuner.training.optimizers import load_optimizer_state
from tuner.training.parallel.strategy import Strategy

FULL_STATE = StateDictOptions(full_state_dict=True, cpu_offload=True)


class FSDPStrategy(Strategy):
    lockstep_evaluation = True  # each forward gathers parameters from every rank

    def mesh(self) -> DeviceMesh:
        """The ranks' mesh on this rank's device type. Never fully_shard's default: that mesh is on the
        host's accelerator whenever torch sees one, so gloo ranks of a CPU trial on a GPU host would
        gather onto cuda:0 ("Expected all tensors to be on the same device")."""
        if self.device.type == "cuda":
            # The mesh takes the current device as the rank's (else it guesses rank % GPUs).
            torch.cuda.set_device(devices.with_index(self.device))
        if dist.get_backend() == "gloo":
            # The ranks' own gloo group: where torch sees a GPU, init_device_mesh builds a new group over a
            # gloo one whose CUDA collectives go to NCCL, which refuses two ranks on one GPU.
            world = dist.group.WORLD
            assert world is not None, "a strategy over several ranks runs in an initialised process group"
            return DeviceMesh.from_group(world, self.device.type)
        return init_device_mesh(self.device.type, (self.world_size,))

    def prepare(self, model: nn.Module) -> nn.Module:
        model = model.to(self.device)
        mesh = self.mesh()
        # Each child with parameters is its own unit, so only one child's parameters are gathered at a
        # time; the root takes whatever is left.
        for child in model.children():
            if any(True for _ in child.parameters()):
                fully_shard(child, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model

    def get_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> Any:
        state: dict[str, Any] = {"model": get_model_state_dict(model, options=FULL_STATE)}
        if optimizer is not None:
            state["optimizer"] = get_optimizer_state_dict(model, optimizer, options=FULL_STATE)
        return state

    def set_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None, state: Any) -> None:
        options = StateDictOptions(full_state_dict=True)
        set_model_state_dict(model, state["model"], options=options)
        if optimizer is not None and "optimizer" in state:
            load_optimizer_state(
                optimizer,
                state["optimizer"],
                load=lambda saved: set_optimizer_state_dict(model, optimizer, saved, options=options),
            )
