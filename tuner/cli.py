"""`python -m tuner run|resume|report`: every user mistake becomes one line on stderr and exit code 2."""

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tuner import space as spaces
from tuner.errors import TunerError
from tuner.overrides import parse_sets

if TYPE_CHECKING:
    from tuner.experiment import Outcome

DEFAULT_SPACE = "digits_mlp"
DEFAULT_STORAGE = "./tuner_results"
USAGE_ERROR = 2
INTERRUPTED = 130  # the shell's code for a run stopped by Ctrl-C


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + message; one line is enough
        self.exit(USAGE_ERROR, f"tuner: error: {message} (see python -m tuner {self.prog.split()[-1]} --help)\n")


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


_positive, _count = _at_least(1), _at_least(0)


def _non_negative_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def _experiment_name(text: str) -> str:
    # The name becomes a directory: no separators or leading dots that would place it elsewhere.
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a plain name; use letters, digits, '.', '_' and '-'")
    return text


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
    run_cmd.add_argument("--name", type=_experiment_name, help="experiment name (default: <space>-<timestamp>)")
    run_cmd.add_argument("--seed", type=int, default=0)
    run_cmd.add_argument("--data-dir", help="root of local torchvision datasets (or TUNER_DATA_DIR)")
    run_cmd.add_argument("--address", help="an existing Ray cluster (auto, host:port, ray://...)")
    run_cmd.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                         help="pin a hyperparameter to one value; repeatable")
    run_cmd.add_argument("--search", help="grid | random | optuna | hyperopt | bohb (default: the space's, else grid)")
    run_cmd.add_argument("--scheduler", help="fifo | asha | hyperband | median | pbt (default: the space's, else fifo)")
    run_cmd.add_argument("--time-budget", help="stop starting and running trials after this long: 90s, 30m, 2h")
    run_cmd.add_argument("--stop", help='end the experiment once a trial reaches it, e.g. "val_acc>=0.98"')
    run_cmd.add_argument("--max-failures", type=_count, default=2,
                         help="retries of a crashed trial, each from its latest checkpoint (default 2)")

    resume_cmd = commands.add_parser("resume", help="continue an interrupted experiment")
    resume_cmd.add_argument("experiment", help="the experiment directory that `run` printed")
    resume_cmd.add_argument("--data-dir", help="dataset root, if it moved since the run")
    resume_cmd.add_argument("--address", help="an existing Ray cluster (auto, host:port, ray://...)")

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
        search=args.search,
        scheduler=args.scheduler,
        time_budget=args.time_budget,
        stop=args.stop,
    )
    from tuner.experiment import RunOptions, run  # torch and Ray's runtime load once the input is checked

    options = RunOptions(storage_path=args.storage_path, name=args.name, seed=args.seed, data_dir=args.data_dir,
                         max_concurrent=args.max_concurrent, address=args.address, max_failures=args.max_failures)
    return _summarize(run(space, options))


def _resume(args: argparse.Namespace) -> int:
    from tuner.experiment import resume

    return _summarize(resume(args.experiment, address=args.address, data_dir=args.data_dir))


def _summarize(outcome: "Outcome") -> int:
    from tuner import report

    trials, path = outcome.trials, outcome.experiment_path
    print()
    print(f"experiment: {path}")
    print(f"report:     {path}/{report.TRIALS_CSV} (python -m tuner report {path})")
    unfinished = trials["status"].isin([report.INCOMPLETE, report.NOT_STARTED])
    if unfinished.any():
        print(f"interrupted: {int((~unfinished).sum())} of {len(trials)} trials done; "
              f"continue with: python -m tuner resume {path}")
    scored = trials[trials["status"].isin(report.SCORED)]
    if scored.empty:
        print(f"no trial completed ({len(trials)} recorded); the report lists each trial's status and error")
        return INTERRUPTED if unfinished.any() else 1
    best = scored.iloc[0]
    config = ", ".join(f"{key}={best[key]}" for key in outcome.params)
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
        return {"run": _run, "resume": _resume, "report": _report}[args.command](args)
    except TunerError as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return USAGE_ERROR
