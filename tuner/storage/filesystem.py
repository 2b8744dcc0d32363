"""Experiment directories on any pyarrow filesystem: a local path or a URI such as file:///..., s3://...

A URI may end in a query that configures its filesystem (`s3://bucket/path?endpoint_override=host:9000&
scheme=http`, as pyarrow.fs.FileSystem.from_uri and Ray read it): names are joined onto the path part,
before the query (join, split), so every file of an experiment is on the same store.
"""

import errno
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from tuner.errors import TunerError
from tuner.home import expand_home

META_FILE = "tuner.json"


def default_experiment_name(space_name: str) -> str:
    """`<space>-<local time>`: sorts by start time in a listing. Two runs of a space started in the same
    second get `-2`, `-3`, ... from `claim_default_name`."""
    return f"{space_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def claim_default_name(storage_path: str, name: str) -> str:
    """The first of `name`, `name-2`, `name-3`, ... that this process creates the directory of under a
    local `storage_path`, and so no other run started at the same moment takes too (mkdir either
    creates a directory or fails, atomically). An object store has no such operation: `name` as it is."""
    if is_remote(storage_path):
        return name
    root = Path(filesystem(storage_path)[1])
    root.mkdir(parents=True, exist_ok=True)
    for number in range(1, 1000):
        claimed = name if number == 1 else f"{name}-{number}"
        try:
            (root / claimed).mkdir()
        except FileExistsError:
            continue
        return claimed
    raise TunerError(f"{root} already holds 999 experiments named {name}-N; pass --name")


def release_default_name(experiment_path: str, made_storage_path: str | None) -> None:
    """Undo claim_default_name for a run that wrote nothing there (refused, or failed before its first
    record): its empty directory goes, and the storage path too where the claim made it and it is empty.
    Anything written stays (rmdir removes only an empty directory)."""
    if is_remote(experiment_path):
        return
    for path in (experiment_path, made_storage_path):
        if path is None:
            return
        try:
            os.rmdir(filesystem(path)[1])
        except OSError:
            return


def normalize(path_or_uri: str) -> str:
    """Ray wants absolute local paths; URIs pass through unchanged."""
    return path_or_uri if "://" in path_or_uri else str(expand_home(path_or_uri).resolve())


def join(path_or_uri: str, *names: str) -> str:
    """`path_or_uri/name/...`, the names on a URI's path and its query kept at the end."""
    path, query = _without_query(path_or_uri)
    return "/".join([path.rstrip("/"), *names]) + query


def split(path_or_uri: str) -> tuple[str, str]:
    """(parent, name) of a path or URI, the query kept on the parent: the inverse of join."""
    path, query = _without_query(path_or_uri)
    parent, name = path.rstrip("/").rsplit("/", 1)
    return parent + query, name


def base_name(path_or_uri: str) -> str:
    return split(path_or_uri)[1]


def _without_query(path_or_uri: str) -> tuple[str, str]:
    """The path and its `?query` (empty for a local path, whose `?` is a plain character)."""
    if "://" not in path_or_uri or not urlsplit(path_or_uri).query:
        return path_or_uri, ""
    path, query = path_or_uri.split("?", 1)
    return path, f"?{query}"


def is_remote(path_or_uri: str) -> bool:
    return "://" in path_or_uri and not path_or_uri.startswith("file://")


def filesystem(path_or_uri: str) -> tuple[pafs.FileSystem, str]:
    try:
        return pafs.FileSystem.from_uri(normalize(path_or_uri))
    except ValueError as error:  # pyarrow's ArrowInvalid: a scheme it has no filesystem for, a malformed URI
        raise TunerError(
            f"{path_or_uri} is neither a local path nor a URI of a filesystem pyarrow knows ({error}); "
            "give a path, or a URI such as s3://bucket/path"
        ) from None


def exists(path_or_uri: str) -> bool:
    fs, path = filesystem(path_or_uri)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def write_atomic(path_or_uri: str, data: bytes) -> None:
    """Write then rename, so a reader never sees a half-written file, even if we are killed mid-write."""
    write_atomic_at(*filesystem(path_or_uri), data)


def temporary_beside(path: str) -> str:
    """Where a file is written before it is renamed over `path`: beside it, so the rename stays within one
    filesystem, and hidden, so listings pass it by."""
    parent, name = path.rsplit("/", 1)
    return f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"


def write_atomic_at(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """write_atomic on a filesystem already opened (one of Ray's trials' storage_filesystem)."""
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    temp = temporary_beside(path)
    try:
        with fs.open_output_stream(temp) as out:
            out.write(data)
        fs.move(temp, path)
    except OSError:
        try:
            fs.delete_file(temp)  # e.g. a full disk: no half-written temp file left behind
        except OSError:
            pass
        raise


def read_bytes(path_or_uri: str) -> bytes:
    fs, path = filesystem(path_or_uri)
    with fs.open_input_stream(path) as stream:
        return stream.read()


LOW_SPACE_BYTES = 1024**2  # less than this left and the next checkpoint will not fit


def write_problem(path_or_uri: str) -> str | None:
    """Why nothing can be written under a local directory (read-only, permission denied, not a directory,
    full) or an object store (unreachable, credentials refused: store_problem), or None. A local reason is
    the operating system's own (its errno's words): a read-only or pseudo filesystem reports no free space,
    which says nothing of why a write fails."""
    if is_remote(path_or_uri):
        return store_problem(path_or_uri)
    path = Path(filesystem(path_or_uri)[1])
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
    if not existing.is_dir():
        return f"{existing} is not a directory"
    probe = existing / f".tuner-write-probe-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as err:
        return os_reason(err)
    if shutil.disk_usage(existing).free < LOW_SPACE_BYTES:  # the probe fit; the next checkpoint would not
        return os.strerror(errno.ENOSPC).lower()
    return None


def recent_write_problem(path_or_uri: str, kept_s: float = 10.0) -> Callable[[], str | None]:
    """write_problem as a function whose answer holds for `kept_s`: a run failing on its storage is a burst
    of Ray's records and then tuner's own check, and a probe of an object store that went away waits out
    pyarrow's retries (~6 s) each time."""
    found: list[tuple[float, str | None]] = []

    def problem() -> str | None:
        if not found or time.monotonic() - found[0][0] > kept_s:
            answer = write_problem(path_or_uri)
            found[:] = [(time.monotonic(), answer)]  # from the answer on: the probe itself may take seconds
        return found[0][1]

    return problem


def os_reason(err: OSError) -> str:
    """An OS error's reason as the OS words it (`read-only file system`), lower case to run on in a line."""
    return (os.strerror(err.errno) if err.errno else str(err)).lower()


# pyarrow's S3 errors end in the AWS SDK's own: `AWS Error <CODE> [(HTTP status <N>)] during <Operation>
# operation: <message>`.
_AWS_ERROR = re.compile(
    r"AWS Error (\w+)( \(HTTP status \d+\))? during \w+ operation: (.*?)\s*(?:\(Request ID: [^)]*\))?\s*$", re.S
)
# The codes of a key the store does not know, a wrong secret, or a key without the right to the bucket.
CREDENTIAL_ERRORS = {
    "ACCESS_DENIED",
    "INVALID_ACCESS_KEY_ID",
    "SIGNATURE_DOES_NOT_MATCH",
    "MISSING_AUTHENTICATION_TOKEN",
    "INVALID_CLIENT_TOKEN_ID",
    "UNRECOGNIZED_CLIENT",
    "EXPIRED_TOKEN",
}
UNREACHABLE_ERRORS = {"NETWORK_CONNECTION", "REQUEST_TIMEOUT", "SERVICE_UNAVAILABLE", "SLOW_DOWN"}


PROBE_TIMEOUT_S = 2.0


def _endpoint_address(uri: str) -> tuple[str, int] | None:
    """(host, port) of the S3 endpoint a URI names (its endpoint_override, else AWS_ENDPOINT_URL); None
    for AWS itself and for other stores."""
    given = _named_endpoint(uri) if urlsplit(uri).scheme == "s3" else None
    if not given:
        return None
    named = urlsplit(given if "://" in given else f"{_options(uri).get('scheme', 'https')}://{given}")
    if not named.hostname:
        return None
    try:
        port = named.port
    except ValueError:  # not a number: pyarrow's own answer says so
        return None
    return named.hostname, port or (80 if named.scheme == "http" else 443)


def unreachable(uri: str) -> str | None:
    """Why nothing answers at the object store's endpoint, in a moment (PROBE_TIMEOUT_S), or None: pyarrow's
    S3 client retries a store that is down for ~9 s before it says so."""
    address = _endpoint_address(uri)
    if address is None:
        return None
    try:
        socket.create_connection(address, timeout=PROBE_TIMEOUT_S).close()
    except OSError as err:
        reason = os_reason(err) if err.errno else "no answer"
        return (
            f"the object store at {endpoint(uri)} does not answer ({reason}); start it, or point tuner at it "
            "with endpoint_override= in the URI or AWS_ENDPOINT_URL"
        )
    return None


def store_problem(uri: str) -> str | None:
    """Why the object store behind `uri` takes no writes, from its own answer to a small object written
    and deleted again, or None. Probed before Ray starts: a wrong key or endpoint fails in one line."""
    if said := unreachable(uri):
        return said
    try:
        fs, path = filesystem(uri)
        if said := _missing_bucket(fs, path, uri):
            return said
        _write_probe(fs, path)
    except (OSError, ValueError) as err:  # pyarrow.ArrowInvalid (a ValueError): a URI it cannot read
        return store_error(err, uri) or f"{_one_line(err)}; check the URI"
    return None


def _missing_bucket(fs: pafs.FileSystem, path: str, uri: str) -> str | None:
    """A bucket that does not exist, said as such (stores answer a write into one "Access Denied", or fail
    it and make the bucket half-way), or made where the URI allows it (allow_bucket_creation=true). A
    store that does not answer the question (a key without the right to list) is left to the write."""
    bucket = path.split("/", 1)[0]
    try:
        if fs.get_file_info(bucket).type != pafs.FileType.NotFound:
            return None
    except OSError:
        return None
    try:
        fs.create_dir(bucket)
    except OSError:
        return (
            f"the bucket {bucket} does not exist at {endpoint(uri)}; create it, or let tuner create it with "
            "allow_bucket_creation=true in the URI's query"
        )
    return None


def _write_probe(fs: pafs.FileSystem, path: str) -> None:
    probe = f"{path.rstrip('/')}/.tuner-write-probe-{uuid.uuid4().hex}"
    with fs.open_output_stream(probe) as out:
        out.write(b"probe")
    fs.delete_file(probe)


def store_error(err: BaseException, uri: str | None = None) -> str | None:
    """An object store's error in words, with what to do: None for errors of no object store."""
    found = _AWS_ERROR.search(str(err))
    if found is None:
        return None
    code, status, said = found.group(1), found.group(2) or "", _one_line(found.group(3)) or "no reason given"
    store = f"the object store at {endpoint(uri)}"
    if code in UNREACHABLE_ERRORS:
        return (
            f"{store} does not answer ({code}: {said}); start it, or point tuner at it with endpoint_override= "
            "in the URI or AWS_ENDPOINT_URL"
        )
    if code in CREDENTIAL_ERRORS:
        return (
            f"{store} refused the credentials ({code}: {said}); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "to a key that may read and write the bucket"
        )
    return f"{store} answered {code}{status}: {said}"


def _options(uri: str | None) -> dict[str, str]:
    """The filesystem options of a URI's query (`endpoint_override`, `scheme`, ...)."""
    return dict(option.partition("=")[::2] for option in urlsplit(uri or "").query.split("&") if option)


def _named_endpoint(uri: str | None) -> str | None:
    """A URI's endpoint_override, else the endpoint the environment names; None for AWS itself."""
    return (
        _options(uri).get("endpoint_override")
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
    )


def endpoint(uri: str | None) -> str:
    """The store a URI's filesystem talks to: its endpoint_override, else the one the environment names."""
    parts = urlsplit(uri or "")
    return _named_endpoint(uri) or (f"{parts.scheme}://{parts.netloc}" if parts.scheme else "S3")


def _one_line(err: object) -> str:
    return " ".join(str(err).split())
