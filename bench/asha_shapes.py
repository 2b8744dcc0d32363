"""`--asha-shapes GRACE:FACTOR ...` for the search benchmarks: ASHA with other grace periods and reduction
factors beside tuner's default (the settings `asha_grace_period` and `asha_reduction_factor`), to compare
them in one run."""

import argparse

from tuner.settings import Tuning

DEFAULT = (Tuning().asha_grace_period, Tuning().asha_reduction_factor)  # tuner's ASHA shape


def shape(text: str) -> tuple[int, int]:
    grace, _, factor = text.partition(":")
    try:
        parsed = int(grace), int(factor)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not GRACE:FACTOR, e.g. 3:3") from None
    if parsed[0] < 1 or parsed[1] < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: the grace period must be >= 1 and the factor >= 2")
    return parsed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--asha-shapes",
        nargs="*",
        type=shape,
        default=[],
        metavar="GRACE:FACTOR",
        help="also run these searches under ASHA with these grace periods and reduction factors "
        "(e.g. 1:2 3:3), beside tuner's default shape",
    )
    parser.add_argument(
        "--shape-searches", nargs="+", default=["random", "optuna"], help="the searches --asha-shapes runs with"
    )


def variants(args: argparse.Namespace) -> list[tuple[str, str, tuple[int, int]]]:
    """(label, search, (grace period, reduction factor)) for each search and shape asked for."""
    return [
        (f"{search} + asha(grace {grace}, factor {factor})", search, (grace, factor))
        for grace, factor in args.asha_shapes
        for search in args.shape_searches
    ]


def settings(shape: tuple[int, int] | None) -> dict[str, int]:
    """The settings that give ASHA `shape` (None: tuner's default), for ExperimentSpec.of or Tuning."""
    grace, factor = shape or DEFAULT
    return {"asha_grace_period": grace, "asha_reduction_factor": factor}
