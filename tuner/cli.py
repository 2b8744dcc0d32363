"""`python -m tuner run|resume|report`: every user mistake becomes one line on stderr and exit code 2."""

import argparse
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from tuner.errors import INTERRUPTED, Interrupted, TunerError
from tuner.execution import submission
from tuner.execution.cluster import DEFAULT_DASHBOARD_PORT, LOOPBACK, Cluster
from tuner.execution.tracking import DEFAULT_MLFLOW_STORE
from tuner.results.columns import best_column
from tuner.results.status import TrialStatus
from tuner.spec import space as spaces
from tuner.spec.hyperparameters import MAX_SEED
from tuner.spec.overrides import parse_sets
from tuner.storage.filesystem import DEFAULT_STORAGE_PATH, default_experiment_name

if TYPE_CHECKING:
    from tuner.execution.experiment import Outcome

DEFAULT_SPACE = "digits_mlp"
DEFAULT_TOP = 10
TABLE_FORMATS = ("md", "csv", "json")
USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage + message; one line is enough
        command = " ".join(self.prog.split()[1:] + ["--help"])  # `tuner run` -> run --help; `tuner` -> --help
        self.exit(USAGE_ERROR, f"tuner: error: {message} (see python -m tuner {command})\n")


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


def _seed(text: str) -> int:
    seed = _count(text)
    if seed > MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SEED} (numpy's seed range), not {seed}")
    return seed


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


def _port(text: str) -> int:
    port = _positive(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1-65535)")
    return port


# Options of an experiment, shared by `run` and `submit` (which forwards them to `run` on the cluster).
EXPERIMENT_OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("--space", {"dest": "space_name", "help": f"a space name from search_spaces/ (default {DEFAULT_SPACE})"}),
    ("--num-samples", {"type": _positive}),
    ("--epochs", {"type": _positive}),
    ("--workers", {"type": _positive, "help": "Ray Train workers per trial (ddp, fsdp, pipeline)"}),
    (
        "--parallel",
        {
            "help": "how a trial spreads over its workers or GPUs: ddp | dp | fsdp | pipeline (default: "
            "the space's, else ddp)"
        },
    ),
    ("--cpus-per-worker", {"type": _non_negative_number}),
    ("--gpus-per-worker", {"type": _non_negative_number}),
    ("--max-concurrent", {"type": _positive, "help": "trials at once (default: as many as fit)"}),
    ("--name", {"type": _experiment_name, "help": "experiment name (default: <space>-<timestamp>)"}),
    ("--seed", {"type": _seed, "default": 0}),
    ("--data-dir", {"help": "root of local torchvision datasets (or TUNER_DATA_DIR)"}),
    (
        "--set",
        {
            "dest": "sets",
            "action": "append",
            "default": [],
            "metavar": "KEY=VALUE",
            "help": "pin a hyperparameter to one value; repeatable",
        },
    ),
    ("--search", {"help": "grid | random | optuna | hyperopt | bohb | auto (default: the space's, else grid)"}),
    ("--scheduler", {"help": "fifo | asha | hyperband | median | pbt (default: the space's, else fifo)"}),
    ("--time-budget", {"help": "stop starting and running trials after this long: 90s, 30m, 2h"}),
    ("--stop", {"help": 'end the experiment once a trial reaches it, e.g. "val_acc>=0.98"'}),
    (
        "--max-failures",
        {
            "type": _count,
            "default": 2,
            "help": "retries of a crashed trial, each from its latest checkpoint (default 2)",
        },
    ),
    (
        "--mlflow",
        {
            "nargs": "?",
            "const": DEFAULT_MLFLOW_STORE,
            "metavar": "URI",
            "help": f"log every trial to MLflow (default store {DEFAULT_MLFLOW_STORE}; needs tuner[mlflow])",
        },
    ),
    ("--verbose", {"action": "store_true", "help": "Ray's own full output: a table per trial, every log line"}),
    ("--quiet", {"action": "store_true", "help": "print only the final summary"}),
    (
        "--no-smoke",
        {
            "dest": "no_smoke",
            "action": "store_true",
            "help": "skip the smoke step (one batch of the space's code on the first config, run while Ray starts)",
        },
    ),
]


SHORT_FLAGS = {"--verbose": "-v", "--quiet": "-q"}


def _add_experiment_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("space_ref", nargs="?", metavar="SPACE", help="a space name or a .py path")
    for flag, options in EXPERIMENT_OPTIONS:
        command.add_argument(*filter(None, [SHORT_FLAGS.get(flag), flag]), **options)


def _verbosity(args: argparse.Namespace) -> int:
    """RunOptions.verbose from -q / -v."""
    if args.verbose and args.quiet:
        raise TunerError("give -v (Ray's full output) or -q (the summary only), not both")
    return 2 if args.verbose else 0 if args.quiet else 1


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tuner", description="Hyperparameter search for PyTorch on Ray Tune.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run_cmd = commands.add_parser("run", help="run an experiment from a space module")
    _add_experiment_arguments(run_cmd)
    run_cmd.add_argument("--storage-path", default=DEFAULT_STORAGE_PATH, help="local path or pyarrow-fs URI")
    run_cmd.add_argument("--address", help="an existing Ray cluster (auto, host:port, ray://...)")
    run_cmd.add_argument(
        "--dashboard", action="store_true", help=f"start the local Ray instance with its dashboard on {LOOPBACK}"
    )
    run_cmd.add_argument("--dashboard-port", type=_port, default=DEFAULT_DASHBOARD_PORT)

    submit_cmd = commands.add_parser("submit", help="submit an experiment to a Ray cluster as a Ray Job")
    _add_experiment_arguments(submit_cmd)
    submit_cmd.add_argument(
        "--address",
        default=os.environ.get("RAY_API_SERVER_ADDRESS"),
        help="the cluster's dashboard, e.g. http://127.0.0.1:8265 (or RAY_API_SERVER_ADDRESS)",
    )
    submit_cmd.add_argument(
        "--storage-path",
        default=submission.DEFAULT_STORAGE,
        help=f"absolute path or URI on the cluster (default {submission.DEFAULT_STORAGE})",
    )
    submit_cmd.add_argument("--follow", action="store_true", help="stream the job's logs until it ends")

    resume_cmd = commands.add_parser("resume", help="continue an interrupted experiment")
    resume_cmd.add_argument(
        "experiment",
        nargs="?",
        help=f"the experiment directory that `run` printed (default: the newest in {DEFAULT_STORAGE_PATH})",
    )
    resume_cmd.add_argument("--data-dir", help="dataset root, if it moved since the run")
    resume_cmd.add_argument("--address", help="an existing Ray cluster (auto, host:port, ray://...)")
    resume_cmd.add_argument("-v", "--verbose", action="store_true", help=dict(EXPERIMENT_OPTIONS)["--verbose"]["help"])
    resume_cmd.add_argument("-q", "--quiet", action="store_true", help=dict(EXPERIMENT_OPTIONS)["--quiet"]["help"])

    report_cmd = commands.add_parser("report", help="print the ranked trials of an experiment")
    report_cmd.add_argument(
        "experiment",
        nargs="?",
        help=f"the experiment directory that `run` printed (default: the newest in {DEFAULT_STORAGE_PATH})",
    )
    report_cmd.add_argument(
        "--top", type=_positive, help=f"only the best N trials (default {DEFAULT_TOP} for md, all otherwise)"
    )
    report_cmd.add_argument(
        "--format", choices=TABLE_FORMATS, default="md", help="the table on stdout: md, csv or json"
    )
    report_cmd.add_argument(
        "--html", action="store_true", help="also write report.html: the table, plots and importance in one file"
    )

    list_cmd = commands.add_parser("list", help="the experiments under a storage path, newest first")
    list_cmd.add_argument(
        "storage",
        nargs="?",
        default=DEFAULT_STORAGE_PATH,
        help=f"the --storage-path of `tuner run` (default {DEFAULT_STORAGE_PATH})",
    )
    for command in commands.choices.values():
        command.set_defaults(command_parser=command)
    return parser


def _experiment(args: argparse.Namespace) -> str:
    """The experiment directory given, else the newest under the default storage, said on stderr."""
    if args.experiment:
        return args.experiment
    from tuner.results import experiments

    path = experiments.newest(DEFAULT_STORAGE_PATH)
    print(f"tuner: the newest experiment: {path}", file=sys.stderr)
    return path


def _space_ref(args: argparse.Namespace) -> str:
    if args.space_ref and args.space_name:
        raise TunerError("give the space either as an argument or with --space, not both")
    return args.space_ref or args.space_name or DEFAULT_SPACE


def _space(args: argparse.Namespace) -> spaces.ExperimentSpec:
    return spaces.load(_space_ref(args)).with_overrides(
        fixed=parse_sets(args.sets),
        num_samples=args.num_samples,
        epochs=args.epochs,
        workers=args.workers,
        parallel=args.parallel,
        cpus_per_worker=args.cpus_per_worker,
        gpus_per_worker=args.gpus_per_worker,
        search=args.search,
        scheduler=args.scheduler,
        time_budget=args.time_budget,
        stop=args.stop,
    )


def _run(args: argparse.Namespace) -> int:
    space = _space(args)
    if args.dashboard and args.address:
        raise TunerError("--dashboard starts a local instance's dashboard; a cluster given with --address has its own")
    from tuner.execution.experiment import RunOptions, run  # torch and Ray's runtime load once the input is checked

    cluster = Cluster(address=args.address, dashboard=args.dashboard, dashboard_port=args.dashboard_port)
    options = RunOptions(
        storage_path=args.storage_path,
        name=args.name,
        seed=args.seed,
        data_dir=args.data_dir,
        max_concurrent=args.max_concurrent,
        cluster=cluster,
        max_failures=args.max_failures,
        smoke=not args.no_smoke,
        verbose=_verbosity(args),
        mlflow=args.mlflow,
    )
    return _summarize(run(space, options))


def _forwarded(args: argparse.Namespace) -> list[str]:
    """The experiment options the user gave, as `tuner run` arguments for the job on the cluster."""
    argv: list[str] = []
    for flag, options in EXPERIMENT_OPTIONS:
        value = getattr(args, options.get("dest", flag.lstrip("-").replace("-", "_")))
        if flag in ("--space", "--name") or value is None or value is False:
            continue  # the space and the name are passed explicitly; a flag not given stays off
        if value is True:
            argv.append(flag)
            continue
        for item in value if isinstance(value, list) else [value]:
            argv += [flag, str(item)]
    return argv


def _submit(args: argparse.Namespace) -> int:
    if not args.address:
        raise TunerError(
            "give the cluster's dashboard address: --address http://<head node>:8265 (or set RAY_API_SERVER_ADDRESS)"
        )
    space = _space(args)  # bad input fails here, before anything reaches the cluster
    job = submission.Job(
        address=args.address,
        space_ref=submission.space_argument(_space_ref(args), space, os.getcwd()),
        name=args.name or default_experiment_name(space.name),
        storage_path=submission.check_storage_path(args.storage_path),
        run_arguments=_forwarded(args),
    )
    return submission.submit(job, follow=args.follow)


def _resume(args: argparse.Namespace) -> int:
    from tuner.execution.experiment import resume

    return _summarize(
        resume(
            _experiment(args), cluster=Cluster(address=args.address), data_dir=args.data_dir, verbose=_verbosity(args)
        )
    )


def _summarize(outcome: "Outcome") -> int:
    from tuner.results import report

    trials, path = outcome.trials, outcome.experiment_path
    if outcome.unread:
        print(f"tuner: warning: {outcome.unread}", file=sys.stderr)
    print()
    print(f"experiment: {path}")
    print(f"report:     {path}/{report.TRIALS_CSV} (python -m tuner report {path})")
    unfinished = trials["status"].isin([TrialStatus.INCOMPLETE, TrialStatus.NOT_STARTED])
    if unfinished.any():
        print(
            f"interrupted: {int((~unfinished).sum())} of {len(trials)} trials done; "
            f"continue with: python -m tuner resume {path}"
        )
    scored = report.scored(trials, outcome.metric)
    if scored.empty:
        print(f"no trial completed ({len(trials)} recorded); the report lists each trial's status and error")
        return INTERRUPTED if unfinished.any() else 1
    best = scored.iloc[0]
    config = ", ".join(f"{key}={best[key]}" for key in outcome.params)
    print(
        f"best trial: {best['trial_id']}  {best_column(outcome.metric)}={best[best_column(outcome.metric)]:.4g} "
        f"(epoch {best['best_epoch']})  {config}"
    )
    _next_steps(path, {key: best[key] for key in outcome.params})
    return INTERRUPTED if unfinished.any() else 0


def _next_steps(path: str, best: dict[str, Any]) -> None:
    """What to do with the result: the best config to paste, and where to look further."""
    plain = {key: value.item() if hasattr(value, "item") else value for key, value in best.items()}
    print()
    print(f"best config:  {plain}")
    if not any("/" in key for key in plain):  # --set pins top-level keys only
        flags = " ".join("--set " + shlex.quote(f"{key}={value}") for key, value in plain.items())
        print(f"  as flags:   {flags}")
    print(f"html report:  python -m tuner report {path} --html")
    print(f"notebook:     TUNER_EXPERIMENT={path} jupyter lab notebooks/quick_look.ipynb")


def _report(args: argparse.Namespace) -> int:
    from tuner.results import report

    experiment = _experiment(args)
    meta = report.load_meta(experiment)
    trials, history = report.read_tables(experiment)
    try:
        report.save(experiment, trials, history)
    except OSError as err:  # e.g. a full disk: the table can still be shown from Ray's files
        print(
            f"tuner: warning: could not rewrite the report files in {experiment} "
            f"({err.strerror or err}); the table below is read from Ray's files",
            file=sys.stderr,
        )
    if args.html:
        from tuner.results import html_report  # matplotlib loads only for the HTML report

        print(f"html report: {html_report.write(experiment, trials, history, meta)}", file=sys.stderr)
    table = report.ranked(
        trials, meta.metric, meta.params, top=args.top or (DEFAULT_TOP if args.format == "md" else None)
    )
    if args.format == "csv":
        print(table.to_csv(index=False), end="")
    elif args.format == "json":
        print(table.to_json(orient="records", indent=1))
    else:
        running = (trials["status"] == TrialStatus.INCOMPLETE).sum() if len(trials) else 0
        live = f" ({running} still running or interrupted)" if running else ""
        print(f"# {meta.space}: {len(trials)} trials{live}, ranked by best {meta.metric} ({meta.mode})\n")
        print(table.to_markdown(index=False, floatfmt=".4g"))
    return 0


def _list(args: argparse.Namespace) -> int:
    from tuner.results import experiments

    rows = [experiments.summarize(path).row() for path in experiments.find(args.storage)]
    if not rows:
        print(f"no experiments under {args.storage}; run one with `python -m tuner run`")
        return 0
    import pandas as pd

    print(pd.DataFrame(rows).to_markdown(index=False))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # told by the command's own parser, so the hint names `tuner report --help`, not `tuner --help`
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return {"run": _run, "submit": _submit, "resume": _resume, "report": _report, "list": _list}[args.command](args)
    except TunerError as err:
        if details := getattr(err, "details", None):  # the user's own traceback, above the one line
            print(details, file=sys.stderr)
        print(f"tuner: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    except Interrupted as interrupted:
        print(
            f"\ntuner: interrupted; the experiment is saved: continue with: python -m tuner resume "
            f"{interrupted.experiment_path}",
            file=sys.stderr,
        )
        return INTERRUPTED
    except KeyboardInterrupt:  # before an experiment existed, or while printing a summary or report
        print("\ntuner: interrupted", file=sys.stderr)
        return INTERRUPTED
