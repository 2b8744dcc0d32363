"""`tuner run|resume|extend|report|list|submit`: every user mistake becomes one line on stderr and exit code 2."""

import argparse
import atexit
import contextlib
import dataclasses
import io
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from tuner.command import tuner_command, tuner_hint
from tuner.data import local_root
from tuner.errors import INTERRUPTED, Interrupted, TunerError
from tuner.execution import (
    phases,  # noqa: F401  (imported first thing: its clock counts the driver's imports)
    submission,
)
from tuner.settings import GROUPS, Budget, Cluster, RunOptions
from tuner.settings.declaration import Setting, settings_of
from tuner.settings.kinds import Flag, Whole
from tuner.settings.run import DEFAULT_STORAGE_PATH, DEFAULT_UI_PORT, LOOPBACK
from tuner.spec import space as space_modules
from tuner.spec.overrides import parse_sets
from tuner.storage import filesystem
from tuner.storage.filesystem import default_experiment_name
from tuner.storage.trial_names import trial_id_of

if TYPE_CHECKING:
    import pandas as pd

    from tuner.storage.meta import Damaged, ExperimentMeta

DEFAULT_SPACE = "digits_mlp"
DEFAULT_TOP = 10
TABLE_FORMATS = ("md", "csv", "json")
USAGE_ERROR = 2
VERBOSE_HELP = "Ray's own full output: a table per trial, every log line"
QUIET_HELP = "print only the final summary"
# Run settings that `submit` forwards to `tuner run` on the cluster; its storage path and the cluster
# address are its own (the cluster's view of them).
FORWARDED_RUN_SETTINGS = ("seed", "data_dir", "max_failures", "smoke", "mlflow")


# What str.splitlines breaks a line at: a path or a name the user gave may hold one.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def one_line(message: str) -> str:
    """The message with any line break in what it quotes written as an escape (`\\n`): one line still."""
    return "".join(ascii(char)[1:-1] if char in _LINE_BREAKS else char for char in message)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage + message; one line is enough
        command = " ".join(self.prog.split()[1:] + ["--help"])  # `tuner run` -> run --help; `tuner` -> --help
        self.exit(USAGE_ERROR, f"tuner: error: {one_line(message)} (see {tuner_command()} {command})\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # Python before 3.12 drops a value written `--epochs=--` (it takes `--` for the end of the
        # options) and hands the option an empty list, which no `type` sees: refused here, as written.
        for token in sys.argv[1:] if args is None else args:
            flag, equals, value = token.partition("=")
            if flag.startswith("--") and equals and value == "--":
                self.error(f"argument {flag}: expected a value, not '--'")
        return super().parse_known_args(args, namespace)


def _value_of(name: str, declared: Setting) -> Callable[[str], Any]:
    """argparse's `type` for a declared setting: its kind reads the text, then the same check a space
    module's value gets, worded for the option ("must be an integer >= 1, not 0")."""

    def parse(text: str) -> Any:
        try:
            value = declared.kind.parse(text)
            problem = declared.problem(name, value)
        except (ValueError, TunerError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if problem is not None:
            raise argparse.ArgumentTypeError(problem.removeprefix(f"{name} "))
        return value

    return parse


def _declared(cls: type, name: str) -> Setting:
    """The declaration of setting `name` of `cls`: an option spelled otherwise gets its checks and bounds."""
    return next(declared for item, declared in settings_of(cls) if item.name == name)


def _setting_options(cls: type, only: Iterable[str] | None = None) -> list[tuple[str, str, Setting]]:
    """(dest, flag, declaration) of each setting of `cls` that has an option of its own."""
    chosen = set(only) if only is not None else None
    return [
        (item.name, flag, declared)
        for item, declared in settings_of(cls)
        if (flag := declared.option(item.name)) is not None and (chosen is None or item.name in chosen)
    ]


def _add_settings(command: argparse.ArgumentParser, cls: type, only: Iterable[str] | None = None) -> None:
    """Options generated from the declarations; each defaults to None ("not given": the space's value,
    else the declared default, stays)."""
    defaults = {item.name: item.default for item in dataclasses.fields(cls)}
    for dest, flag, declared in _setting_options(cls, only):
        default = defaults[dest]
        plain = default is None or default is dataclasses.MISSING or isinstance(declared.kind, Flag)
        shown = "" if plain else f" (default: {default})"
        if cls in GROUPS.values() and default is not dataclasses.MISSING:
            shown = f" (default: the space's, else {'none' if default is None else default})"
        if "(default" in declared.help:
            shown = ""  # the help says it
        options: dict[str, Any] = {"dest": dest, "default": None, "help": declared.help + shown}
        if isinstance(declared.kind, Flag):
            options["action"] = "store_true"
        else:
            options["type"] = _value_of(dest, declared)
        options.update(declared.argparse)
        command.add_argument(flag, **options)


def _given(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The settings of `cls` the command line gave."""
    return {dest: getattr(args, dest) for dest, _, _ in _setting_options(cls) if getattr(args, dest, None) is not None}


def _add_output_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    command.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)


def _add_experiment_arguments(command: argparse.ArgumentParser) -> None:
    """What `run` and `submit` share: the space, its settings, --set, and the run settings `submit` forwards."""
    command.add_argument("space_ref", nargs="?", metavar="SPACE", help="a space name or a .py path")
    command.add_argument(
        "--space", dest="space_name", help=f"a space name from search_spaces/ (default {DEFAULT_SPACE})"
    )
    for group in GROUPS.values():
        _add_settings(command, group)
    command.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="pin a hyperparameter to one value; repeatable",
    )
    _add_settings(command, RunOptions, only=("name", *FORWARDED_RUN_SETTINGS))
    _add_output_flags(command)


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
    _add_settings(run_cmd, RunOptions, only=("storage_path", "warm_start"))
    _add_settings(run_cmd, Cluster)

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
    _add_settings(resume_cmd, RunOptions, only=("data_dir",))
    _add_settings(resume_cmd, Cluster, only=("address",))
    _add_output_flags(resume_cmd)

    extend_cmd = commands.add_parser("extend", help="add trials to a finished experiment")
    extend_cmd.add_argument(
        "experiment",
        nargs="?",
        help=f"the experiment directory that `run` printed (default: the newest in {DEFAULT_STORAGE_PATH})",
    )
    extend_cmd.add_argument(
        "--num-samples",
        required=True,
        type=_value_of("num_samples", _declared(Budget, "num_samples")),
        help="trials to add; the search starts from the experiment's trials so far",
    )
    _add_settings(extend_cmd, RunOptions, only=("data_dir",))
    _add_settings(extend_cmd, Cluster, only=("address",))
    _add_output_flags(extend_cmd)

    report_cmd = commands.add_parser("report", help="print the ranked trials of an experiment")
    report_cmd.add_argument(
        "experiment",
        nargs="?",
        help=f"the experiment directory that `run` printed (default: the newest in {DEFAULT_STORAGE_PATH})",
    )
    report_cmd.add_argument(
        "--top",
        type=_value_of("top", Setting(Whole(1), "")),
        help=f"only the best N trials (default {DEFAULT_TOP} for md, all otherwise)",
    )
    report_cmd.add_argument(
        "--format", choices=TABLE_FORMATS, default="md", help="the table on stdout: md, csv or json"
    )
    report_cmd.add_argument(
        "--html", action="store_true", help="also write report.html: the table, plots and importance in one file"
    )
    report_cmd.add_argument(
        "--trial", metavar="ID", help="instead of the table, one trial's scheduler decisions: why it went on or stopped"
    )

    list_cmd = commands.add_parser("list", help="the experiments under a storage path, newest first")
    list_cmd.add_argument(
        "storage",
        nargs="?",
        default=DEFAULT_STORAGE_PATH,
        help=f"the --storage-path of `tuner run` (default {DEFAULT_STORAGE_PATH})",
    )
    ui_cmd = commands.add_parser("ui", help="a web page of an experiment that follows it while it runs")
    ui_cmd.add_argument(
        "experiment",
        nargs="?",
        help="the experiment directory that `run` printed, or a storage path for every experiment under it "
        f"(default: the newest in {DEFAULT_STORAGE_PATH})",
    )
    ui_cmd.add_argument(
        "--host", default=LOOPBACK, help=f"the address to serve on (default {LOOPBACK}: this machine only)"
    )
    ui_cmd.add_argument(
        "--port",
        type=_value_of("port", Setting(Whole(1, 65535), "")),
        default=DEFAULT_UI_PORT,
        help=f"(default {DEFAULT_UI_PORT})",
    )
    commands.add_parser("down", help="stop the local Ray instance that `run --keep-ray` kept")
    for command in commands.choices.values():
        command.set_defaults(command_parser=command)
    return parser


def _experiment(args: argparse.Namespace) -> str:
    """The experiment directory given, else the newest under the default storage, said on stderr."""
    if args.experiment:
        return args.experiment
    from tuner.results import experiments

    path = experiments.newest(DEFAULT_STORAGE_PATH)
    print(f"tuner: the newest experiment: {path}", file=sys.stderr)  # the command's own answer
    return path


def _space_ref(args: argparse.Namespace) -> str:
    if args.space_ref and args.space_name:
        raise TunerError("give the space either as an argument or with --space, not both")
    return args.space_ref or args.space_name or DEFAULT_SPACE


def _space(args: argparse.Namespace) -> space_modules.ExperimentSpec:
    settings = {key: value for group in GROUPS.values() for key, value in _given(args, group).items()}
    return space_modules.load(_space_ref(args)).with_overrides(fixed=parse_sets(args.sets), **settings)


def _run(args: argparse.Namespace) -> int:
    space = _space(args)
    cluster = Cluster(**_given(args, Cluster))
    if cluster.dashboard and cluster.address:
        raise TunerError("--dashboard starts a local instance's dashboard; a cluster given with --address has its own")
    options = RunOptions(**_given(args, RunOptions), verbose=_verbosity(args), cluster=cluster)
    local_root.check(space.dataset, options.data_dir)  # before torch loads too (the driver checks it for tuner.run)
    from tuner.driver import run  # torch and Ray's runtime load once the input is checked
    from tuner.results.summary import summarize

    return summarize(run(space, options))


def _forwarded(args: argparse.Namespace) -> list[str]:
    """The settings the user gave, as `tuner run` arguments for the job on the cluster (the space and the
    name are passed explicitly)."""
    argv: list[str] = []
    declared = [option for group in GROUPS.values() for option in _setting_options(group)]
    declared += _setting_options(RunOptions, only=FORWARDED_RUN_SETTINGS)
    for dest, flag, setting in declared:
        value = getattr(args, dest)
        if value is None:
            continue
        if isinstance(setting.kind, Flag):
            argv.append(flag)
        else:
            argv += [flag, ",".join(value) if isinstance(value, (list, tuple)) else str(value)]
    for item in args.sets:
        argv += ["--set", item]
    argv += [flag for flag in ("--verbose", "--quiet") if getattr(args, flag.lstrip("-"))]
    return argv


def _submit(args: argparse.Namespace) -> int:
    if not args.address:
        raise TunerError(
            "give the cluster's dashboard address: --address http://<head node>:8265 (or set RAY_API_SERVER_ADDRESS)"
        )
    space = _space(args)  # bad input fails here, before anything reaches the cluster
    from tuner.search.plan import plan  # the search and scheduler must fit the space: said here, not in the job

    plan(space, RunOptions(**_given(args, RunOptions)).seed)
    job = submission.Job(
        address=args.address,
        space_ref=submission.space_argument(_space_ref(args), space, os.getcwd()),
        name=args.name or default_experiment_name(space.name),
        storage_path=submission.check_storage_path(args.storage_path),
        run_arguments=_forwarded(args),
    )
    return submission.submit(job, follow=args.follow, verbose=args.verbose)


def _resume(args: argparse.Namespace) -> int:
    from tuner.driver import resume
    from tuner.results.summary import summarize

    options = RunOptions(**_given(args, RunOptions), verbose=_verbosity(args), cluster=Cluster(**_given(args, Cluster)))
    outcome = resume(_experiment(args), options)
    if outcome.nothing_to_resume:
        print(outcome.nothing_to_resume)
        return 0
    return summarize(outcome)


def _extend(args: argparse.Namespace) -> int:
    from tuner.driver import extend
    from tuner.results.summary import summarize

    options = RunOptions(**_given(args, RunOptions), verbose=_verbosity(args), cluster=Cluster(**_given(args, Cluster)))
    return summarize(extend(_experiment(args), args.num_samples, options))


def _markdown(table: "pd.DataFrame") -> str:
    """A table for the terminal, a missing value (a conditional key the trial did not have, a GPU figure
    on the CPU) as an empty cell, as in trials.csv, rather than nan or <NA>."""
    return table.astype(object).where(table.notna(), None).to_markdown(index=False, floatfmt=".4g", missingval="")


def _report(args: argparse.Namespace) -> int:
    from tuner.results import report
    from tuner.storage.meta import Damaged

    experiment = _experiment(args)
    try:
        meta = report.load_meta(experiment)
    except Damaged as damaged:
        return _saved_report(damaged, args)
    trials, history = report.read_tables(experiment)
    if args.trial is not None:
        return _trial_decisions(experiment, trials, trial_id_of(meta.space, args.trial), args.format)
    if damage := report.damage(trials):
        # The report files hold what the last whole read found: kept, not overwritten from less.
        print(
            one_line(
                f"tuner: warning: {experiment} is damaged: {damage}; the table below is what can still be read, "
                f"and the report files ({report.TRIALS_CSV}, ...) are left as they were"
            ),
            file=sys.stderr,
        )
    else:
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
        trials,
        meta.objective.metric,
        meta.params,
        top=args.top or (DEFAULT_TOP if args.format == "md" else None),
        objective=meta.objective,
    )
    if args.format == "csv":
        print(table.to_csv(index=False), end="")
    elif args.format == "json":
        print(table.to_json(orient="records", indent=1))
    else:
        # As the summary and `tuner list` count them; an incomplete trial may still be running.
        counts = report.describe(report.tally(trials, meta))
        print(
            f"# {meta.space}: {report.total_trials(trials, meta)} trials ({counts or 'none recorded'}), "
            f"ranked by {_ranked_by(meta)}" + (f"; stopped: {meta.stopped_by}" if meta.stopped_by else "") + "\n"
        )
        print(_markdown(table))
    return 0


def _saved_report(damaged: "Damaged", args: argparse.Namespace) -> int:
    """`tuner report` on an experiment whose tuner.json is damaged: the table its last run or report
    saved (trials.csv), said to be that; the file itself is left as it is."""
    import pandas as pd

    from tuner.results import report
    from tuner.storage import filesystem

    saved = filesystem.join(damaged.experiment_path, report.TRIALS_CSV)
    if args.trial is not None or args.html:
        raise TunerError(f"{damaged}; --trial and --html need it whole; without them the saved table is shown")
    try:
        table = pd.read_csv(io.BytesIO(filesystem.read_bytes(saved)))
    except (OSError, ValueError) as error:  # no table saved, or one as damaged
        raise TunerError(
            f"{damaged}, and no readable table was saved beside it ({report.TRIALS_CSV}: {error}); "
            "restore tuner.json from a copy to report, resume or extend it"
        ) from None
    print(
        one_line(
            f"tuner: warning: {damaged}; showing {report.TRIALS_CSV} as its last run or report saved it; "
            "restore tuner.json from a copy to resume or extend it"
        ),
        file=sys.stderr,
    )
    shown = table if args.top is None and args.format != "md" else table.head(args.top or DEFAULT_TOP)
    if args.format == "csv":
        print(shown.to_csv(index=False), end="")
    elif args.format == "json":
        print(shown.to_json(orient="records", indent=1))
    else:
        print(_markdown(shown))
    return 0


def _ranked_by(meta: "ExperimentMeta") -> str:
    """`best val_acc (max)`; with several objectives or constraints, the order tuner/results/objectives.py sorts by."""
    objective = meta.objective
    if not objective.several and not objective.constraints:
        return f"best {objective.metric} ({objective.mode})"
    from tuner.settings.objectives import describe

    order = ["feasible first (" + ", ".join(objective.constraints) + ")"] if objective.constraints else []
    order += [f"Pareto front of {describe(objective.objectives)}"] if objective.several else []
    return ", then ".join([*order, f"best {objective.metric} ({objective.mode})"])


def _trial_decisions(experiment: str, trials: Any, trial_id: str, table_format: str) -> int:
    from tuner.results import stops
    from tuner.storage import decisions

    ids = [str(i) for i in trials["trial_id"]] if len(trials) else []
    if trial_id not in ids:
        shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
        raise TunerError(f"{experiment} has no trial {trial_id!r}; its trials: {shown or 'none recorded'}")
    table = stops.trial_history(decisions.read(experiment), trial_id)
    if table_format == "csv":
        print(table.to_csv(index=False), end="")
    elif table_format == "json":
        print(table.to_json(orient="records", indent=1))
    else:
        trial = trials[trials["trial_id"] == trial_id].iloc[0]
        because = f" ({trial['stopped_because']})" if trial.get("stopped_because") else ""
        epochs = int(trial["epochs"])
        print(f"# trial {trial_id}: {trial['status']} after {epochs} epoch{'' if epochs == 1 else 's'}{because}\n")
        if table.empty:
            print("no scheduler decisions recorded for this trial (fifo, or it never reached a rung)")
        else:
            print(_markdown(table))
    return 0


def _list(args: argparse.Namespace) -> int:
    from tuner.execution import kept_ray
    from tuner.results import experiments

    rows = [experiments.row(path) for path in experiments.find(args.storage)]
    if not rows:
        print(f"no experiments under {args.storage}; run one with `{tuner_command()} run`")
    else:
        import pandas as pd

        print(pd.DataFrame(rows).to_markdown(index=False))
    if (kept := kept_ray.find()) is not None:
        print(f"ray: {kept.line(tuner_command())}")
    return 0


def _ui(args: argparse.Namespace) -> int:
    from tuner.results import live_page

    experiment = _experiment(args)
    if args.host not in (LOOPBACK, "localhost", "::1"):
        print(
            f"tuner: warning: serving on {args.host}: anyone who reaches this machine there can read the "
            "experiment and write notes into its study",
            file=sys.stderr,
        )
    said = f"tuner ui: waiting for the first trial of {experiment} to start (Ctrl-C stops)"
    try:
        live_page.wait_for_study(experiment, lambda: print(said, flush=True))
    except KeyboardInterrupt:
        return 0
    page = live_page.server(experiment, args.host, args.port)
    print(f"tuner ui: {live_page.url(args.host, args.port)} follows {experiment} (Ctrl-C stops it)", flush=True)
    try:
        page.serve_forever()
    except KeyboardInterrupt:  # the way to stop the page, not an interrupted command
        pass
    finally:
        page.server_close()
    return 0


def _down(args: argparse.Namespace) -> int:
    from tuner.execution import kept_ray

    if (kept := kept_ray.busy()) is not None:
        raise TunerError(
            f"the Ray instance tuner keeps at {kept.address} has {kept.drivers} run(s) on it now; stop them "
            f"first (Ctrl-C; `{tuner_command()} resume` goes on), or let it stop on its own once idle for {kept.keep}"
        )
    stopped = kept_ray.stop()
    if stopped is None:
        print("no Ray instance kept by tuner is up")
        return 0
    kept, ended = stopped
    if not ended:
        raise TunerError(
            f"the keeper of the Ray instance tuner kept at {kept.address} has ended, but that address still "
            "answers; find what listens there before starting Ray on it"
        )
    print(f"stopped the Ray instance tuner kept at {kept.address} for runs from {kept.cwd}; no other Ray was touched")
    return 0


class _Console(logging.Handler):
    """tuner's log records as the command line shows them: notices on stdout as they are, warnings on
    stderr as `tuner: warning: ...`."""

    def emit(self, record: logging.LogRecord) -> None:
        message = self.format(record)
        if record.levelno >= logging.WARNING:
            print(f"tuner: warning: {one_line(message)}", file=sys.stderr, flush=True)
        else:
            print(message, flush=True)


@contextlib.contextmanager
def _log_to_console(quiet: bool) -> Iterator[None]:
    """The library logs; the command line shows it (only warnings with -q) for as long as the command
    runs, and leaves the `tuner` logger as it found it (main() may run inside a test or a notebook)."""
    logger, handler = logging.getLogger("tuner"), _Console()
    previous = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.level, logger.propagate = previous


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; `argv` None: this process's own command (the `tuner` script, `python -m tuner`)."""
    if argv is None:
        _exit_once_cleaned_up()
    code = _main(argv)
    _EXIT_CODE.append(code)
    return code


_EXIT_CODE: list[int] = []


def _exit_once_cleaned_up() -> None:
    """Once every atexit handler has run (Ray's, the user's; this one, registered before them, runs
    last), the process ends with the command's code, without the interpreter's teardown: after a run it
    spends seconds freeing torch's, pyarrow's and Ray's modules one object at a time, which nothing
    needs. Only after main() returned: a traceback's exit stays Python's own."""

    def end() -> None:
        if _EXIT_CODE:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(_EXIT_CODE[-1])

    atexit.register(end)


STORAGE_ARGUMENTS = ("storage_path", "warm_start", "storage", "experiment")  # where a command reads or writes


def _check_stores_answer(args: argparse.Namespace) -> None:
    """An object store that is down is one line in a moment, before the command's first request waits out
    pyarrow's retries (filesystem.unreachable)."""
    for name in STORAGE_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str) and filesystem.is_remote(value) and (problem := filesystem.unreachable(value)):
            raise TunerError(f"cannot reach {value}: {problem}")


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # told by the command's own parser, so the hint names `tuner report --help`, not `tuner --help`
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    command = {
        "run": _run,
        "submit": _submit,
        "resume": _resume,
        "extend": _extend,
        "report": _report,
        "list": _list,
        "ui": _ui,
        "down": _down,
    }[args.command]
    try:
        if args.command != "submit":  # submit's storage is the cluster's to reach
            _check_stores_answer(args)
        with _log_to_console(quiet=getattr(args, "quiet", False)):
            return command(args)
    except TunerError as err:
        if details := getattr(err, "details", None):  # the user's own traceback, above the one line
            print(details, file=sys.stderr)
        print(f"tuner: error: {one_line(str(err))}", file=sys.stderr)
        return USAGE_ERROR
    except OSError as err:  # an object store's answer (unreachable, credentials refused) from any command
        uri = next((arg for arg in argv or sys.argv[1:] if "://" in arg), None)  # its endpoint_override, if any
        if (said := filesystem.store_error(err, uri)) is None:
            raise
        print(f"tuner: error: {said}", file=sys.stderr)
        return USAGE_ERROR
    except Interrupted as interrupted:
        print(
            f"\ntuner: interrupted; the experiment is saved: continue with: "
            f"{tuner_hint('resume', interrupted.experiment_path)}",
            file=sys.stderr,
        )
        return INTERRUPTED
    except KeyboardInterrupt:  # before an experiment existed, or while printing a summary or report
        print("\ntuner: interrupted", file=sys.stderr)
        return INTERRUPTED
