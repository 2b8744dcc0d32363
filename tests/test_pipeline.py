import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models import resnet50

from tuner.models import small_image_resnet18
from tuner.parallel import PipelineResNet

BATCH = 7  # divisible by neither 2 nor 3
# Micro-batches change the batch size each convolution sees, and with it the CPU kernel and its
# summation order, and weight gradients are summed over micro-batches, so results agree to float32
# rounding rather than bit for bit (chunks=1 is exact).
TIGHT = {"rtol": 1e-5, "atol": 1e-5}


@pytest.fixture(scope="module")
def model() -> nn.Module:
    torch.manual_seed(0)
    return small_image_resnet18(3, num_classes=10)


@pytest.fixture(scope="module")
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 3, 16, 16, generator=generator), torch.randint(0, 10, (BATCH,), generator=generator)


def split(model: nn.Module, stages: int, chunks: int) -> PipelineResNet:
    return PipelineResNet(copy.deepcopy(model), ["cpu"] * stages, chunks)


def eval_batchnorm(module: nn.Module) -> nn.Module:
    """Train mode, except that BatchNorm uses its running statistics, which micro-batching cannot change."""
    module.train()
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eval()
    return module


def assert_matches(actual: torch.Tensor, expected: torch.Tensor, chunks: int) -> None:
    if chunks == 1:
        assert torch.equal(actual, expected)
    else:
        # Relative to the tensor's largest entry, so tensors of small values are held as tightly.
        scale = expected.abs().max().item()
        torch.testing.assert_close(actual, expected, rtol=TIGHT["rtol"], atol=TIGHT["atol"] * scale)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("chunks", [1, 2, 3])
@pytest.mark.parametrize("mode", ["eval", "train with eval batchnorm"])
def test_outputs_equal_the_unsplit_model(model, batch, stages, chunks, mode):
    prepare = (lambda m: m.eval()) if mode == "eval" else eval_batchnorm
    reference, pipe = prepare(copy.deepcopy(model)), prepare(split(model, stages, chunks))
    x, _ = batch
    with torch.no_grad():
        assert_matches(pipe(x), reference(x), chunks)


@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_gradients_equal_the_unsplit_model(model, batch, chunks):
    reference, pipe = copy.deepcopy(model).eval(), split(model, 2, chunks).eval()
    x, y = batch
    F.cross_entropy(reference(x), y).backward()
    F.cross_entropy(pipe(x), y).backward()
    expected = {name: p.grad for name, p in reference.named_parameters()}
    # A stage's parameters are named "stages.<i>.<the ResNet's own name>".
    actual = {name.split(".", 2)[2]: p.grad for name, p in pipe.named_parameters()}
    assert actual.keys() == expected.keys()
    for name, grad in expected.items():
        assert grad.abs().sum() > 0, name  # a gradient that is all zeros would match anything
        assert_matches(actual[name], grad, chunks)


def test_train_mode_batchnorm_sees_micro_batch_statistics(model, batch):
    """Documents the one way a pipeline differs in train mode, so a change to it is noticed."""
    x, _ = batch
    reference = copy.deepcopy(model).train()
    whole, micro = split(model, 2, 1).train(), split(model, 2, 2).train()
    expected = reference(x)
    assert torch.equal(whole(x), expected)
    assert not torch.allclose(micro(x), expected, **TIGHT)
    running_mean = reference.bn1.running_mean
    assert torch.equal(whole.stages[0].bn1.running_mean, running_mean)
    assert not torch.allclose(micro.stages[0].bn1.running_mean, running_mean, **TIGHT)


def test_batch_smaller_than_chunks(model, batch):
    x = batch[0][:2]
    with torch.no_grad():
        torch.testing.assert_close(split(model, 2, 4).eval()(x), copy.deepcopy(model).eval()(x), **TIGHT)


def test_two_stages_are_the_classic_resnet50_split():
    torch.manual_seed(0)
    reference = resnet50(num_classes=10).eval()
    pipe = PipelineResNet(copy.deepcopy(reference), ["cpu", "cpu"], chunks=2).eval()
    assert [list(dict(stage.named_children())) for stage in pipe.stages] == [
        ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2"],
        ["layer3", "layer4", "avgpool", "flatten", "fc"],
    ]
    x = torch.randn(3, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(pipe(x), reference(x), **TIGHT)


def test_stages_split_the_parts_evenly(model):
    names = [[n for n, _ in stage.named_children()] for stage in split(model, 3, 1).stages]
    assert names == [["conv1", "bn1", "relu", "maxpool", "layer1"], ["layer2", "layer3"],
                     ["layer4", "avgpool", "flatten", "fc"]]
    assert len(split(model, 6, 1).stages) == 6


def test_bad_arguments(model):
    with pytest.raises(ValueError, match="chunks must be >= 1, got 0"):
        split(model, 2, 0)
    with pytest.raises(ValueError, match="chunks must be >= 1, got -1"):
        split(model, 2, -1)
    with pytest.raises(ValueError, match=r"splits into 1 to 6 stages .* got 7 devices"):
        split(model, 7, 1)
    with pytest.raises(ValueError, match="got 0 devices"):
        split(model, 0, 1)
    with pytest.raises(TypeError, match="must be a torchvision ResNet, got Sequential"):
        PipelineResNet(nn.Sequential(nn.Linear(2, 2)), ["cpu"], 1)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_stages_land_on_their_gpus(model, batch):
    pipe = PipelineResNet(copy.deepcopy(model), ["cuda:0", "cuda:1"], chunks=3).eval()
    for stage, device in zip(pipe.stages, ["cuda:0", "cuda:1"]):
        assert {p.device for p in stage.parameters()} == {torch.device(device)}
        assert {b.device for b in stage.buffers()} == {torch.device(device)}
    reference = copy.deepcopy(model).eval().to("cuda:0")
    x, _ = batch
    # TF32 convolutions would differ from each other by more than float32 rounding.
    with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        out = pipe(x)  # a CPU input is moved to the first stage's device
        expected = reference(x.to("cuda:0"))
    assert out.device == torch.device("cuda:1")
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=1e-4, atol=1e-4)
