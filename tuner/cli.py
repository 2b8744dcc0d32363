"""`python -m tuner run|report`: every user mistake becomes one line on stderr and exit code 2."""

import argparse
import sys
from collections.abc import Sequence

from tuner import space as spaces
from tuner.errors import TunerError
from tuner.overrides import parse_sets

DEFAULT_SPACE = "digits_mlp"
DEFAULT_STORAGE = "./tuner_results"
USAGE_ERROR = 2
INTERRUPTED = 130  # the shell's code for a run stopped by Ctrl-C


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + message; one line is enough
        self.exit(USAGE_ERROR, f"tuner: error: {message} (see python -m tuner {self.prog.split()[-1]} --help)\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tuner", description="Hyperparameter search for PyTorch on Ray Tune.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run_cmd = commands.add_parser("run", help="run an experiment from a space module")
    run_cmd.add_argument("space_ref", nargs="?", metavar="SPACE", help="a space name or a .py path")
    run_cmd.add_argument("--space", dest="space_name", help=f"a space name from search_spaces/ (default {DEFAULT_SPACE})")
    run_cmd.add_argument("--num-samples", type=_positive)
    run_cmd.add_argument("--epochs", type=_positive)
    run_cmd.add_argument("--workers", type=_positive, help="DDP workers per trial")
    run_cmd.add_argument("--cpus-per-worker", type=_non_negative_number)
    run_cmd.add_argument("--gpus-per-worker", type=_non_negative_number)
    run_cmd.add_argument("--max-concurrent", type=_positive, help="trials at once (default: as many as fit)")
    run_cmd.add_argument("--storage-path", default=DEFAULT_STORAGE, help="local path or pyarrow-fs URI")
    run_cmd.add_argument("--name", help="experiment name (default: <space>-<timestamp>)")
    run_cmd.add_argument("--seed", type=int, default=0)
    run_cmd.add_argument("--data-dir", help="root of local torchvision datasets (or TUNER_DATA_DIR)")
    run_cmd.add_argument("--address", help="an existing Ray cluster (auto, host:port, ray://...)")
    run_cmd.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                         help="pin a hyperparameter to one value; repeatable")

    report_cmd = commands.add_parser("report", help="print the ranked trials of an experiment")
    report_cmd.add_argument("experiment", help="the experiment directory that `run` printed")
    report_cmd.add_argument("--top", type=_positive, default=10)
    return parser


def _run(args: argparse.Namespace) -> int:
    if args.space_ref and args.space_name:
        raise TunerError("give the space either as an argument or with --space, not both")
    space = spaces.load(args.space_ref or args.space_name or DEFAULT_SPACE).with_overrides(
        fixed=parse_sets(args.sets),
        num_samples=args.num_samples,
        epochs=args.epochs,
        workers=args.workers,
        cpus_per_worker=args.cpus_per_worker,
        gpus_per_worker=args.gpus_per_worker,
    )
    from tuner import report  # torch and Ray's runtime load only once the input has been checked
    from tuner.experiment import RunOptions, run

    options = RunOptions(storage_path=args.storage_path, name=args.name, seed=args.seed, data_dir=args.data_dir,
                         max_concurrent=args.max_concurrent, address=args.address)
    outcome = run(space, options)
    trials = outcome.trials
    print()
    print(f"experiment: {outcome.experiment_path}")
    print(f"report:     {outcome.experiment_path}/{report.TRIALS_CSV} (python -m tuner report {outcome.experiment_path})")
    unfinished = trials["status"].isin([report.INCOMPLETE, report.NOT_STARTED])
    if unfinished.any():
        print(f"interrupted: {int((trials['status'] == 'finished').sum())} of {len(trials)} trials finished; "
              "the report holds every epoch that was recorded")
    finished = trials[trials["status"] == "finished"]
    if finished.empty:
        print(f"no trial finished ({len(trials)} recorded); the report lists each trial's status and error")
        return INTERRUPTED if unfinished.any() else 1
    best = finished.iloc[0]
    config = ", ".join(f"{key}={best[key]}" for key in sorted(space.param_space))
    print(f"best trial: {best['trial_id']}  best_{outcome.metric}={best['best_' + outcome.metric]:.4f} "
          f"(epoch {best['best_epoch']})  {config}")
    return INTERRUPTED if unfinished.any() else 0


def _report(args: argparse.Namespace) -> int:
    from tuner import report

    meta = report.load_meta(args.experiment)
    trials = report.write(args.experiment)
    print(f"# {meta['space']}: {len(trials)} trials, ranked by best {meta['metric']} ({meta['mode']})\n")
    print(report.ranked_table(trials, meta["metric"], meta["params"], top=args.top))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args) if args.command == "run" else _report(args)
    except TunerError as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return USAGE_ERROR
