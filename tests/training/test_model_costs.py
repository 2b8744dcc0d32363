"""What a trial's model costs (`tuner/training/model_costs.py`): `params` and `latency_ms`, measured on
real torch models and carried by every report row of tuner's loop and of a loop of the user's own."""

import math
import time

import pytest
import torch
from torch import nn

from tuner.data.splits import Splits
from tuner.errors import TunerError
from tuner.training import model_costs
from tuner.training.context import LoopSetup
from tuner.training.smoke import check_reported
from tuner.training.trial import Parts, run_trial_loop

CPU = torch.device("cpu")


def data() -> Splits:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(200, 1, 8, 8, generator=generator)
    y = (x.mean((1, 2, 3)) > 0).long()
    return Splits((x[:150], y[:150]), (x[150:], y[150:]))


def cnn(config) -> nn.Module:
    width = config["width"]
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.Flatten(), nn.Linear(width * 64, 2)
    )


class Tied(nn.Module):
    """An embedding and an output layer sharing one weight, and a frozen layer."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.frozen = nn.Linear(4, 4).requires_grad_(False)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, x):
        return self.out(self.frozen(self.embed(x)))


class SeesMode(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.modes: list[tuple[bool, bool]] = []

    def forward(self, x):
        self.modes.append((self.training, torch.is_grad_enabled()))
        return self.linear(x)


def test_params_counts_every_parameter_once_frozen_ones_too():
    net = cnn({"width": 4})
    assert model_costs.count_params(net) == sum(p.numel() for p in net.parameters()) == 4 * 9 + 4 + 8 + 4 * 64 * 2 + 2
    assert model_costs.count_params(Tied()) == 10 * 4 + 4 * 4 + 4  # the tied weight once, the frozen layer in
    assert model_costs.count_params(nn.LazyLinear(3)) is None  # unknown until its first input


def test_latency_is_a_positive_median_of_forwards_in_eval_mode_without_grad():
    net = SeesMode().train()
    latency = model_costs.latency_ms(net, torch.randn(16, 3), CPU)
    assert latency is not None and math.isfinite(latency) and 0 < latency < 1000
    assert net.modes == [(False, False)] * (model_costs.WARMUP + model_costs.REPEATS)
    assert net.training  # put back as it was
    assert model_costs.latency_ms(net, None, CPU) is None  # nothing timed in one process


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        time.sleep(model_costs.SLOW_MS / 1000 * 1.1)
        return x


def test_a_slow_forward_is_timed_fewer_times():
    net = Slow()
    assert model_costs.latency_ms(net, torch.ones(1), CPU) >= model_costs.SLOW_MS
    assert net.calls == 1 + model_costs.SLOW_REPEATS < model_costs.WARMUP + model_costs.REPEATS


def run(parts: Parts, config: dict, epochs: int = 3) -> list[dict]:
    """The rows a trial of `parts` reports."""
    rows: list[dict] = []
    setup = LoopSetup(epochs=epochs, seed=0, device=CPU, parallel="ddp")
    run_trial_loop(parts, config, setup, data=data(), trial_id="t", report=lambda row, _: rows.append(row))
    return rows


def test_every_row_of_tuners_loop_carries_the_models_params_and_one_latency():
    rows = run(Parts.of(model=cnn), {"width": 4, "lr": 0.01, "batch_size": 16})
    assert len(rows) == 3
    assert {row["params"] for row in rows} == {model_costs.count_params(cnn({"width": 4}))}
    latencies = {row["latency_ms"] for row in rows}
    assert len(latencies) == 1 and 0 < latencies.pop() < 1000  # measured once, after the first epoch
    wider = run(Parts.of(model=cnn), {"width": 16, "lr": 0.01, "batch_size": 16}, epochs=1)
    assert wider[0]["params"] > rows[0]["params"]


def own_loop(measure: bool):
    def train_loop(config, ctx):
        train, val = ctx.data
        model = ctx.prepare_model(cnn(config))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(ctx.start_epoch, ctx.epochs + 1):
            for x, y in ctx.batches(train, 16):
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            if measure:
                x, _ = next(iter(ctx.batches(val, 16, shuffle=False)))
                costs = ctx.measure_model(model, x)
                assert set(costs) == {"params", "latency_ms"}
            ctx.report({"val_acc": 0.5, "params": 7} if not measure else {"val_acc": 0.5})

    return train_loop


def test_a_users_own_loop_gets_params_from_prepare_model_and_latency_from_measure_model():
    config = {"width": 4}
    (measured,) = run(Parts.of(train_loop=own_loop(measure=True)), config, epochs=1)
    assert measured["params"] == model_costs.count_params(cnn(config)) and measured["latency_ms"] > 0
    # Without measure_model: no latency; and a loop's own `params` is kept over tuner's count.
    (plain,) = run(Parts.of(train_loop=own_loop(measure=False)), config, epochs=1)
    assert plain["params"] == 7 and "latency_ms" not in plain
    with pytest.raises(TunerError, match=r"'latency_ms' is never reported.*ctx\.measure_model\(model, x\)"):
        check_reported("mine", plain, "latency_ms")
