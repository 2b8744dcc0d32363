"""`tuner submit`: an experiment as a Ray Job, through Ray's Job Submission API.

The job runs `tuner run` on the cluster, in a copy of the current directory (Ray's `working_dir`), so
space modules under it and, from a tuner checkout, tuner itself travel with it. It runs on the Python
that runs Ray there, not on the `python` of the cluster's PATH: a cluster started with the `ray` of
tuner's virtualenv without activating it has the system Python first on PATH (`No module named 'ray'`).
Where that Python cannot run tuner, the job fails with one line that says so.
"""

import asyncio
import logging
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tuner.command import SUBMITTED_FROM_ENV, ray_command
from tuner.errors import INTERRUPTED, TunerError
from tuner.execution.cluster_token import cli_prefix, refusal_hint, send_token_if_available
from tuner.ray_compat import errors, logs
from tuner.spec.space import ExperimentSpec

# The job's working directory is a temporary copy, so results go to a path of the cluster's own.
DEFAULT_STORAGE = "~/tuner_results"
EXCLUDES = [".git", ".venv", "venv", "tuner_results", "__pycache__", ".ipynb_checkpoints"]
SUCCEEDED = "SUCCEEDED"
FAILED = 1
log = logging.getLogger(__name__)
NO_AGENT_WAITS_S = (1, 2, 4, 8, 15)  # 30 s in all


@dataclass(frozen=True)
class Job:
    address: str  # the cluster's dashboard: http://host:8265
    space_ref: str  # a space name, or a path relative to the working directory
    name: str
    storage_path: str
    run_arguments: list[str]

    @property
    def submission_id(self) -> str:
        return f"tuner-{self.name}"

    @property
    def entrypoint(self) -> str:
        # Ray runs the entrypoint through a shell: every argument is quoted, so nothing the user
        # typed is ever interpreted by it.
        argv = [
            "run",
            self.space_ref,
            "--name",
            self.name,
            "--storage-path",
            self.storage_path,
            *self.run_arguments,
        ]
        return f'{FIND_RAY_PYTHON} exec "$py" -c {shlex.quote(JOB_MAIN)} {shlex.join(argv)}'


# Ray's job supervisor, a Ray worker on the cluster, starts the entrypoint's shell ($PPID), and Ray
# renames its processes (its command line reads `ray::JobSupervisor`), so the Python that runs Ray there is
# found by the Ray it has loaded: <prefix>/lib/pythonX.Y/site-packages/ray/_raylet.so in /proc/PID/maps
# gives <prefix>/bin/python3, the virtualenv's own interpreter where Ray runs from one
# (/proc/PID/exe is the interpreter a virtualenv links to, without the virtualenv's packages: the next
# guess). Without /proc (not Linux), the `python` on the cluster's PATH.
FIND_RAY_PYTHON = (
    "raylet=$(grep -m 1 -o '/.*/ray/_raylet\\.so' /proc/$PPID/maps 2>/dev/null); "
    'py="${raylet%/*/*/*/*/*}/bin/python3"; '
    '[ -n "$raylet" ] && [ -x "$py" ] || py=$(readlink /proc/$PPID/exe 2>/dev/null); '
    '[ -x "$py" ] || py=python;'
)
# `tuner run` on that Python, or one line where it cannot import what a run needs.
JOB_MAIN = """import sys
sys.argv[0] = "tuner"
try:
    import torch, tuner.driver
except ImportError as err:
    sys.exit(f"tuner: error: the Python of the job on the cluster, {sys.executable}, cannot run tuner ({err}): "
             "install tuner into the Python that runs Ray there, or start the cluster with the ray tuner installed")
from tuner.cli import main
sys.exit(main())"""


def space_argument(ref: str, space: ExperimentSpec, working_dir: str) -> str:
    """How the job names the space: by name for shipped spaces, else by its path in the working dir."""
    if not space.source or ref == space.name:
        return ref
    path = Path(space.source).resolve()
    try:
        return path.relative_to(Path(working_dir).resolve()).as_posix()
    except ValueError:
        raise TunerError(
            f"space module {ref} is outside the current directory, which is what the job "
            "gets; run `tuner submit` from a directory that contains it"
        ) from None


def check_storage_path(storage_path: str) -> str:
    if "://" in storage_path or storage_path.startswith(("/", "~")):
        return storage_path
    raise TunerError(
        f"--storage-path {storage_path} is relative, but the job runs in a temporary copy of this "
        f"directory; give an absolute path or URI on the cluster (default {DEFAULT_STORAGE})"
    )


def _check_address(address: str) -> None:
    parts = urlsplit(address)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TunerError(
            f"--address {address!r} is not a dashboard URL; `tuner submit` needs "
            "http://<head node>:8265 (the Jobs API), `tuner run --address` takes GCS addresses"
        )


def _client(address: str):
    from ray.exceptions import AuthenticationError
    from ray.job_submission import JobSubmissionClient  # Ray's client libraries load only for submit

    from tuner.execution.cluster import check_reachable

    _check_address(address)
    logs.quiet_job_upload()
    parts = urlsplit(address)
    check_reachable(f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}", shown=address)
    token = send_token_if_available()
    try:
        return JobSubmissionClient(address)
    except AuthenticationError:
        raise TunerError(f"cannot use the Jobs API at {address}: {refusal_hint(token)}") from None
    except (ConnectionError, RuntimeError) as err:
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TunerError(f"cannot use the Jobs API at {address}: {message}") from None


async def _stream_logs(client, job: Job, verbose: bool) -> None:
    """The job's own output, as it comes: not a record of tuner's, so not through logging; below -v
    without what Ray's job supervisor writes before it (ray_compat.logs.JobLogFilter)."""
    shown = None if verbose else logs.JobLogFilter(job.submission_id, job.entrypoint)
    async for lines in client.tail_job_logs(job.submission_id):
        sys.stdout.write(lines if shown is None else shown.feed(lines))
        sys.stdout.flush()
    if shown is not None:
        sys.stdout.write(shown.rest())


def _submit_job(client, job: Job) -> str:
    """Submit, waiting out a head whose job agent has not registered yet (Ray answers "No available
    agent to submit job, please try again later" for a while after the head starts)."""
    waits_s = list(NO_AGENT_WAITS_S)
    while True:
        try:
            return client.submit_job(
                entrypoint=job.entrypoint,
                submission_id=job.submission_id,
                runtime_env={
                    "working_dir": ".",
                    "excludes": EXCLUDES,
                    "env_vars": {SUBMITTED_FROM_ENV: os.getcwd()},
                },
                metadata={"tuner_experiment": job.name},
            )
        except RuntimeError as err:
            # Ray puts the server's whole answer (often a traceback) in the message; one line is enough.
            text = str(err)
            if "already exists" in text:
                raise TunerError(
                    f"a job named {job.submission_id} already exists on the cluster; pick another --name"
                ) from None
            if not errors.is_no_job_agent(err) or not waits_s:
                raise TunerError(f"the cluster refused the job: {text.strip().splitlines()[0]}") from None
        wait_s = waits_s.pop(0)
        log.warning("the cluster has no job agent ready yet; trying again in %s s", wait_s)
        time.sleep(wait_s)


def _ray_command() -> str:
    """`ray` as the user types it to reach the cluster the way submit did: this installation's `ray`
    (by its absolute path where another or none is on PATH), with the token mode submit turned on."""
    return f"{cli_prefix()}{ray_command()}"


def submit(job: Job, follow: bool, verbose: bool = False) -> int:
    ray = _ray_command()  # before _client, which turns token mode on in this process's environment
    with logs.quiet_token_notice(not verbose):
        client = _client(job.address)
    submission_id = _submit_job(client, job)
    address = shlex.quote(job.address.rstrip("/"))
    stop = f"{ray} job stop --address {address} {submission_id}"
    log.info("job:        %s", submission_id)
    log.info("dashboard:  %s/#/jobs/%s", job.address.rstrip("/"), submission_id)
    log.info("experiment: %s/%s (on the cluster)", job.storage_path.rstrip("/"), job.name)
    log.info("logs:       %s job logs --address %s --follow %s", ray, address, submission_id)
    log.info("stop:       %s", stop)
    if not follow:
        return 0
    try:
        asyncio.run(_stream_logs(client, job, verbose))
    except KeyboardInterrupt:
        log.info("\nstopped following; the job goes on (stop it with: %s)", stop)
        return INTERRUPTED
    info = client.get_job_info(submission_id)
    # A failed job's message repeats the tail of the logs just streamed (a traceback twice); its first
    # clause says what happened.
    message = (info.message or "").strip().splitlines()[0].split(", last available logs")[0] if info.message else ""
    log.info("job %s: %s%s", submission_id, info.status, f" ({message})" if message else "")
    return 0 if info.status == SUCCEEDED else FAILED
