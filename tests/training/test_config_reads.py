"""Which config keys a trial read, and the warning about the ones nobody did."""

import pytest
import torch

from tuner.spec.hyperparameters import KNOWN
from tuner.training.config_reads import RESULT_KEY, ReadTrackingConfig, reads_of, unread_warning
from tuner.training.context import LoopSetup
from tuner.training.smoke import smoke_test
from tuner.training.trial import Parts


def test_every_way_of_reading_counts():
    def takes(**kwargs):
        return kwargs

    config = ReadTrackingConfig(a=1, b=2, c=3, d=4, e=5)
    config["a"], config.get("b"), config.get("absent", 0), "c" in config
    assert config.read == {"a", "b", "absent", "c"}
    takes(**config)  # unpacking reads every key (so does dict(config))
    assert config.read == {"a", "b", "c", "d", "e", "absent"}


def test_copies_share_the_reads_and_items_reads_all():
    config = ReadTrackingConfig(a=1, b=2)
    config.copy()["a"]
    assert config.read == {"a"}
    list(config.items())
    assert config.read == {"a", "b"} and config.reported() == "a,b"


def test_reported_reads_are_merged_over_trials():
    assert reads_of(["lr,width", None, "", "batch_size,lr"]) == {"lr", "width", "batch_size"}


def test_the_warning_names_unread_keys_with_what_they_were_probably_meant_to_be():
    line = unread_warning(
        ["learning_rate", "widht", "momentum", "depth"],
        {"lr", "width", "depth"},
        known=["lr", "momentum", "weight_decay"],
    )
    assert "\n" not in line
    assert "learning_rate (did you mean lr?)" in line and "widht (did you mean width?)" in line
    assert "momentum," not in line and line.endswith("momentum")  # nothing close to suggest
    assert "depth" not in line
    assert unread_warning(["lr"], {"lr"}) is None
    assert "wd (did you mean weight_decay?)" in unread_warning(["wd"], set(), known=["weight_decay"])


@pytest.mark.parametrize(
    "model, config, ignored",
    [
        ("resnet18", {"lr": 1e-3, "dropout": 0.3, "batch_size": 16}, "dropout"),  # resnet18 has no dropout layer
        ("mlp", {"optimizer": "adam", "momentum": 0.5, "batch_size": 16}, "momentum"),  # adam takes betas instead
    ],
)
def test_a_hyperparameter_the_shipped_parts_ignore_is_named_after_a_real_step(model, config, ignored):
    parts = Parts.of(model=model, dataset="digits", loss=None, metrics=None, optimizer=None, train_loop=None)
    result = smoke_test(
        parts,
        config,
        LoopSetup(epochs=1, seed=0, device=torch.device("cpu"), parallel="ddp"),
        data=None,
        space="ignored",
    )
    warning = unread_warning(sorted(config), reads_of([result.metrics[RESULT_KEY]]), known=KNOWN)
    assert warning is not None and warning.endswith(ignored)
