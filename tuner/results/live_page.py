"""`tuner ui`: a local web page of an experiment that follows it while it runs: optuna-dashboard (a
well-kept page for exactly this: history, intermediate values, parallel coordinates, importance, the
Pareto front) over the study the driver writes as trials report (tuner/storage/study_journal.py).

Served on the loopback address unless asked otherwise: the page can also write (notes, user attributes
in the journal), so another address is the user's explicit choice, and said so.
"""

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tuner.errors import TunerError
from tuner.settings.run import LOOPBACK
from tuner.storage import filesystem
from tuner.storage import study_journal as study

DEFAULT_PORT = 8080
# How often an experiment in an object store is downloaded again; a local one is read as it grows.
REMOTE_REFRESH_S = 10.0


class _Quiet(WSGIRequestHandler):
    """No line per request: the page polls every few seconds."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def server(experiment_path: str, host: str = LOOPBACK, port: int = DEFAULT_PORT) -> WSGIServer:
    """The page's server, bound and ready for serve_forever(); an experiment in an object store is
    downloaded again every REMOTE_REFRESH_S by a thread that lives as long as the process."""
    from optuna_dashboard import wsgi

    journal = study.local_journal(experiment_path)
    if filesystem.is_remote(experiment_path):
        _follow(experiment_path, journal)
    logging.getLogger("optuna").setLevel(logging.WARNING)
    app = wsgi(study.journal_storage(journal))
    try:
        return make_server(host, port, app, handler_class=_Quiet)
    except OSError as error:
        raise TunerError(
            f"cannot serve the page on {host}:{port}: {error.strerror or error}; give another with --port"
        ) from None


def _follow(experiment_path: str, journal: Path) -> None:
    def refresh() -> None:
        while True:
            time.sleep(REMOTE_REFRESH_S)
            try:
                study.refresh_copy(experiment_path, journal)
            except Exception as error:  # the store away for a while: the page shows what it had
                print(f"tuner: warning: cannot read {experiment_path} again: {error}", file=sys.stderr)

    threading.Thread(target=refresh, name="tuner-ui-refresh", daemon=True).start()


def url(host: str, port: int) -> str:
    return f"http://{host}:{port}/dashboard/"
