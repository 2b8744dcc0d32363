"""Pipeline model parallelism: the model's layers split into one stage per rank, each batch cut into
micro-batches that flow through the stages so they work at once (GPipe).

The schedule is PyTorch's own (`torch.distributed.pipelining`: `PipelineStage` and `ScheduleGPipe`,
point-to-point sends over gloo on CPU or NCCL on GPU); tuner only decides where a model splits and
keeps one schedule per batch size, since a stage fixes its micro-batch shapes on first use. Every
rank reads the same batches (the pipeline is one data-parallel replica); the first stage feeds the
inputs, the last computes the loss and the outputs, and the metrics are summed across ranks, to
which the other stages add nothing.

Where a model splits: a model with a `pipeline_layers` attribute (a sequence of modules whose
composition, in order, is the model's forward) splits between those; an `nn.Sequential` between its
children, a torchvision ResNet among them between its stem, residual layers and head (the classic
conv1..layer2 | layer3..fc split for two stages). Stages get contiguous, equally many layers.

One process with several GPUs (`workers = 1`, `gpus_per_worker = 2`) splits the model the seed's way
(its ModelParallelResNet50): one stage per visible GPU, cuda:0 then cuda:1, activations copied
forward between them and gradients back by autograd, no schedule. Ranks over gloo with CUDA stages
(two ranks on one GPU, which NCCL refuses: how `tests/training/test_gpu.py` runs multi-rank code where
one GPU is lent) pass activations through the host, since gloo sends and receives CPU tensors only.
"""

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

from tuner.errors import TunerError
from tuner.training.optimizers import load_optimizer_state
from tuner.training.parallel.strategy import Strategy

MICROBATCHES = 4  # the most per batch; GPipe's idle share is (stages - 1) / (micro-batches + stages - 1)
# A torchvision ResNet's parts in forward order, by its own attribute names; ResNet.forward flattens
# inline, so the head gets an nn.Flatten.
RESNET_PARTS: tuple[tuple[str, ...], ...] = (
    ("conv1", "bn1", "relu", "maxpool"),
    ("layer1",),
    ("layer2",),
    ("layer3",),
    ("layer4",),
    ("avgpool", "fc"),
)


def _is_resnet(model: nn.Module) -> bool:
    try:
        from torchvision.models import (
            ResNet,  # optional where only the torch-level code runs (a GPU box)
        )
    except ImportError:
        return False
    return isinstance(model, ResNet)


def _resnet_layers(model: nn.Module) -> list[nn.Module]:
    layers: list[nn.Module] = []
    for part in RESNET_PARTS:
        modules = [getattr(model, name) for name in part]
        if part[-1] == "fc":
            modules.insert(-1, nn.Flatten(1))
        layers.append(modules[0] if len(modules) == 1 else nn.Sequential(*modules))
    return layers


def pipeline_layers(model: nn.Module) -> list[nn.Module]:
    """The layers a model may split between, in forward order (see the module's docstring)."""
    declared = getattr(model, "pipeline_layers", None)
    if declared is not None:
        layers = list(declared)
        if not layers or not all(isinstance(layer, nn.Module) for layer in layers):
            raise TunerError(
                "parallel = 'pipeline': the model's pipeline_layers must be a non-empty sequence of "
                "nn.Module, in forward order"
            )
        return layers
    if _is_resnet(model):
        return _resnet_layers(model)
    if isinstance(model, nn.Sequential):
        return [part for child in model for part in (_resnet_layers(child) if _is_resnet(child) else [child])]
    raise TunerError(
        f"parallel = 'pipeline' splits a model between its layers, and a {type(model).__name__} does "
        "not list them: build it as an nn.Sequential, or give it a `pipeline_layers` attribute (its "
        "layers in forward order)"
    )


def split(layers: Sequence[nn.Module], stages: int) -> list[nn.Sequential]:
    if len(layers) < stages:
        raise TunerError(
            f"parallel = 'pipeline' with {stages} workers needs at least {stages} layers to split "
            f"between; the model has {len(layers)}: use fewer workers"
        )
    bounds = [i * len(layers) // stages for i in range(stages + 1)]
    return [nn.Sequential(*layers[lo:hi]) for lo, hi in zip(bounds, bounds[1:])]


def _microbatches(batch_size: int) -> int:
    # A stage fixes its micro-batch shape, so every micro-batch of a batch must be equally large.
    return max(d for d in range(1, MICROBATCHES + 1) if batch_size % d == 0)


def local_devices(device: torch.device, layers: int) -> list[torch.device]:
    """The devices one process splits a model over: every GPU it sees (at most one per layer) when it
    trains on CUDA and sees several; else just `device`."""
    gpus = torch.cuda.device_count() if device.type == "cuda" else 0
    if min(gpus, layers) < 2:
        return [device]
    return [torch.device("cuda", index) for index in range(min(gpus, layers))]


class _ThroughHost(nn.Module):
    """A stage whose layers stay on their GPU while what crosses ranks is on the host: gloo sends and
    receives CPU tensors only."""

    def __init__(self, stage: nn.Sequential, device: torch.device):
        super().__init__()
        self.stage, self.device = stage, device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stage(x.to(self.device)).cpu()

    def to(self, *args: Any, **kwargs: Any) -> "_ThroughHost":
        return self  # PipelineStage moves its module to its device, the host here; the layers stay


class PipelineStages(nn.Module):
    """This rank's stage of the model. Calling it runs a forward through all stages (every rank calls
    together): the outputs on the last stage, None on the others. `train_step` adds the backward.

    In one process (`stages` = 1) the stage may span `devices`: each gets a contiguous, equal share of
    the stage's layers, and the outputs come back to the first device, where the batches are."""

    def __init__(
        self,
        stage: nn.Sequential,
        rank: int,
        stages: int,
        device: torch.device,
        devices: list[torch.device] | None = None,
    ):
        super().__init__()
        self.stage, self.rank, self.stages, self.device = stage, rank, stages, device
        self.devices = devices or [device]
        # Where each device's share of the layers begins; the module keeps one nn.Sequential of them all,
        # so its state dict is the unsplit stage's, whichever devices it was saved from.
        self._starts = [i * len(stage) // len(self.devices) for i in range(len(self.devices))]
        for start, end, on in zip(self._starts, [*self._starts[1:], len(stage)], self.devices):
            stage[start:end].to(on)
        self._schedules: dict[tuple[int, bool], ScheduleGPipe] = {}
        self._through_host = stages > 1 and device.type == "cuda" and dist.get_backend() == "gloo"

    def _local(self, x: torch.Tensor) -> torch.Tensor:
        if len(self.devices) == 1:
            return self.stage(x)
        for start, end, on in zip(self._starts, [*self._starts[1:], len(self.stage)], self.devices):
            x = self.stage[start:end](x.to(on, non_blocking=True))
        return x.to(self.device, non_blocking=True)

    @property
    def is_last(self) -> bool:
        return self.rank == self.stages - 1

    def _schedule(self, batch_size: int, loss_fn: Callable[..., torch.Tensor] | None) -> ScheduleGPipe:
        key = (batch_size, loss_fn is not None)
        if key not in self._schedules:
            module, device = (
                (_ThroughHost(self.stage, self.device), torch.device("cpu"))
                if self._through_host
                else (self.stage, self.device)
            )
            stage = PipelineStage(module, self.rank, self.stages, device)
            # Without a loss function the schedule only runs forwards; with one it scales each
            # micro-batch's gradient by 1/micro-batches, so a step equals the whole batch's.
            self._schedules[key] = ScheduleGPipe(stage, n_microbatches=_microbatches(batch_size), loss_fn=loss_fn)
        return self._schedules[key]

    def _host(self, x: Any) -> Any:
        return x.cpu() if self._through_host else x

    def _back(self, x: torch.Tensor | None) -> torch.Tensor | None:
        return x.to(self.device) if self._through_host and x is not None else x

    def forward(self, x: torch.Tensor) -> torch.Tensor | None:
        if self.stages == 1:
            return self._local(x)
        schedule = self._schedule(len(x), None)
        return self._back(schedule.step(self._host(x)) if self.rank == 0 else schedule.step())

    def train_step(
        self, x: torch.Tensor, y: torch.Tensor, loss_fn: Callable[[Any, Any], torch.Tensor], autocast: Any
    ) -> torch.Tensor | None:
        if self.stages == 1:
            with autocast:
                outputs = self._local(x)
            loss = loss_fn(outputs.float(), y)
            loss.backward()
            return loss

        def stage_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            return loss_fn(outputs.float(), targets)

        schedule = self._schedule(len(x), stage_loss)
        losses: list[torch.Tensor] = []
        with autocast:
            if self.rank == 0:
                schedule.step(self._host(x))
            elif self.is_last:
                schedule.step(target=self._host(y), losses=losses)
            else:
                schedule.step()
        return self._back(torch.stack(losses).mean().detach()) if self.is_last else None


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _to_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(item) for item in value)
    return value


class PipelineStrategy(Strategy):
    @property
    def data_shard(self) -> tuple[int, int]:
        return 0, 1  # every stage reads the same batches

    def prepare(self, model: nn.Module) -> nn.Module:
        layers = pipeline_layers(model)
        if self.world_size == 1:  # one process: all layers, over every GPU it sees
            devices = local_devices(self.device, len(layers))
            return PipelineStages(nn.Sequential(*layers), 0, 1, self.device, devices)
        stage = split(layers, self.world_size)[self.rank]
        return PipelineStages(stage.to(self.device), self.rank, self.world_size, self.device)

    def evaluation_model(self, model: nn.Module) -> nn.Module:
        return model  # every rank takes part in each forward

    def train_step(
        self, model: nn.Module, x: Any, y: Any, loss_fn: Callable[[Any, Any], torch.Tensor], autocast: Any
    ) -> torch.Tensor | None:
        assert isinstance(model, PipelineStages), "prepare the model with ctx.prepare_model first"
        return model.train_step(x, y, loss_fn, autocast)

    def get_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> Any:
        """Every stage's state (and its optimizer's), gathered on rank 0 in stage order."""
        assert isinstance(model, PipelineStages)
        own = _to_cpu(
            {"stage": model.stage.state_dict(), "optimizer": optimizer.state_dict() if optimizer is not None else None}
        )
        if self.world_size == 1:
            return {"stages": [own["stage"]], "optimizers": [own["optimizer"]]}
        gathered: list[Any] = [None] * self.world_size if self.rank == 0 else []
        dist.gather_object(own, gathered if self.rank == 0 else None, dst=0)
        if self.rank != 0:
            return None
        return {"stages": [part["stage"] for part in gathered], "optimizers": [part["optimizer"] for part in gathered]}

    def set_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None, state: Any) -> None:
        assert isinstance(model, PipelineStages)
        if len(state["stages"]) != self.world_size:
            raise ValueError(
                f"the checkpoint holds {len(state['stages'])} pipeline stages and this trial has "
                f"{self.world_size} workers; restore it with as many workers as it was saved with"
            )
        model.stage.load_state_dict(state["stages"][self.rank])
        if optimizer is not None and state["optimizers"][self.rank] is not None:
            load_optimizer_state(optimizer, state["optimizers"][self.rank])
