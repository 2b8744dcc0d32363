"""Ray's log lines that tuner's console replaces, silenced by name for as long as they would be noise."""

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from tuner.ray_compat import private


class _TokenAuthOnNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


TOKEN_SETUP_LOGGER = "ray._private.authentication.authentication_token_setup"


@contextmanager
def quiet_token_notice(quiet: bool) -> Iterator[None]:
    """Drops the line Ray logs on every start of a local instance to say token authentication is on.
    tuner's local instances always keep it on (README says so), so below -v the line is noise; Ray's
    warning that authentication is off (RAY_AUTH_MODE=disabled) still shows. Can go when Ray logs it
    at DEBUG."""
    notice, logger = _TokenAuthOnNotice(), logging.getLogger(TOKEN_SETUP_LOGGER)
    if quiet:
        logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


def train_report_lines(level: str) -> None:
    """Ray 2.60 names the logger of Train's worker context by its file path, so Train's LoggingConfig
    (which filters `ray.train.*`) misses it and every rank prints "Reporting training result ..." each
    epoch. Set in each Train worker's process. Can go when a Ray release names it `ray.train...`."""
    logging.getLogger(private.train_context_file()).setLevel(level)


ANALYSIS_LOGGER = "ray.tune.analysis.experiment_analysis"


@contextmanager
def quiet_analysis_warnings() -> Iterator[None]:
    """Ray warns once per trial that has no result files yet, both in Tuner.fit and when a report reads
    the experiment; the report says "not started" for those trials, so the warning is noise. Can go when
    Ray stops warning for a trial that never started."""
    logger = logging.getLogger(ANALYSIS_LOGGER)
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


# Ray logs each step of packaging and uploading a job's working dir; `tuner submit`'s job id and links say
# enough. Can go when Ray logs those steps at DEBUG.
JOB_UPLOAD_LOGGERS = ("ray.dashboard.modules.dashboard_sdk", "ray._private.runtime_env.packaging")


def quiet_job_upload() -> None:
    for name in JOB_UPLOAD_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


@contextmanager
def quiet_pbt_reuse_advice() -> Iterator[None]:
    """Ray warns under PBT that reuse_actors would be faster; tuner turns it off for multi-worker trials
    on purpose (tuner/execution/tune_run.py says why). Can go when Ray stops advising it, or when
    multi-worker trials can reuse their actors."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consider boosting PBT performance")
        yield
