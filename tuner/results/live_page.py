"""`tuner ui`: a local web page of an experiment, or of every experiment under a storage path, that
follows them while they run: optuna-dashboard (a well-kept page for exactly this: history, intermediate
values, parallel coordinates, importance, the Pareto front) over the study each run writes as its
trials report (tuner/storage/study_journal.py).

Served on the loopback address unless asked otherwise: the page can also write (notes, user attributes
in the journal), so another address is the user's explicit choice, and said so.
"""

import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tuner.errors import TunerError
from tuner.results import experiments
from tuner.results.studies_view import StudiesView
from tuner.settings.run import DEFAULT_UI_PORT, LOOPBACK
from tuner.storage import filesystem
from tuner.storage import meta as meta_file
from tuner.storage import study_journal as study

# How often an experiment in an object store is downloaded again; a local one is read as it grows.
REMOTE_REFRESH_S = 10.0
JOURNAL_POLL_S = 1.0  # while waiting for a starting run's first trial


class _Quiet(WSGIRequestHandler):
    """No line per request: the page polls every few seconds."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def server(path: str, host: str = LOOPBACK, port: int = DEFAULT_UI_PORT) -> WSGIServer:
    """The page's server, bound and ready for serve_forever(), of the experiment at `path` or of every
    experiment with a study under it (a storage path, the newest first). An experiment in an object store
    is downloaded again every REMOTE_REFRESH_S by a thread that lives as long as the process."""
    from optuna_dashboard import wsgi

    logging.getLogger("optuna").setLevel(logging.WARNING)
    shown = experiments_at(path)
    storages = []
    for experiment in shown:
        journal = study.local_journal(experiment)
        if filesystem.is_remote(experiment):
            _follow(experiment, journal)
        storages.append(study.journal_storage(journal))
    app = wsgi(StudiesView(storages, writable=not filesystem.is_remote(path)))
    try:
        return make_server(host, port, app, handler_class=_Quiet)
    except OSError as error:
        raise TunerError(
            f"cannot serve the page on {host}:{port}: {error.strerror or error}; give another with --port"
        ) from None


def experiments_at(path: str) -> list[str]:
    """`path` itself where it is an experiment, else the experiments under it that have a study."""
    if filesystem.exists(filesystem.join(path, filesystem.META_FILE)):
        return [path]
    found = [experiment for experiment in experiments.find(path) if study.has_journal(experiment)]
    if not found:
        raise TunerError(
            f"no experiment under {path} has a study ({study.JOURNAL_FILE}): give an experiment directory, "
            f"or a storage path whose runs were made by this version of tuner"
        )
    return found


def wait_for_study(path: str, waiting: Callable[[], None]) -> None:
    """A run that has started but whose first trial has not (the `live page:` line is printed then):
    its study appears with that trial, so the page waits for it, having said so through `waiting`. An
    experiment that ended without one (an older tuner ran it) is left to `server` to refuse."""
    if study.has_journal(path) or not filesystem.exists(filesystem.join(path, filesystem.META_FILE)):
        return
    try:
        running = meta_file.read(path).ended_at is None
    except (TunerError, OSError):
        return
    if running:
        waiting()
        while not study.has_journal(path):
            time.sleep(JOURNAL_POLL_S)


def _follow(experiment_path: str, journal: Path) -> None:
    def refresh() -> None:
        said = False  # once while the store stays away, again once it has answered
        while True:
            time.sleep(REMOTE_REFRESH_S)
            try:
                study.refresh_copy(experiment_path, journal)
                said = False
            except Exception as error:  # the store away for a while: the page shows what it had
                if not said:
                    print(f"tuner: warning: cannot read {experiment_path} again: {error}", file=sys.stderr)
                said = True

    threading.Thread(target=refresh, name="tuner-ui-refresh", daemon=True).start()


def url(host: str, port: int) -> str:
    return f"http://{host}:{port}/dashboard/"
