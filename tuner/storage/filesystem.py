"""Experiment directories on any pyarrow filesystem: a local path or a URI such as file:///..., s3://..."""

import errno
import os
import shutil
import time
import uuid
from pathlib import Path

import pyarrow.fs as pafs

from tuner.errors import TunerError

META_FILE = "tuner.json"


def default_experiment_name(space_name: str) -> str:
    """`<space>-<local time>`: sorts by start time in a listing, and a second apart is enough."""
    return f"{space_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def normalize(path_or_uri: str) -> str:
    """Ray wants absolute local paths; URIs pass through unchanged."""
    return path_or_uri if "://" in path_or_uri else str(Path(path_or_uri).expanduser().resolve())


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


def write_atomic_at(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """write_atomic on a filesystem already opened (one of Ray's trials' storage_filesystem)."""
    parent = path.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    temp = f"{parent}/.{path.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
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
    full), or None. The reason is the operating system's own (its errno's words): a read-only or pseudo
    filesystem reports no free space, which says nothing of why a write fails. Remote URIs are not
    probed: their errors name themselves."""
    if "://" in path_or_uri and not path_or_uri.startswith("file://"):
        return None
    path = Path(filesystem(path_or_uri)[1])
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
    if not existing.is_dir():
        return f"{existing} is not a directory"
    probe = existing / f".tuner-write-probe-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as err:
        return _reason(err)
    if shutil.disk_usage(existing).free < LOW_SPACE_BYTES:  # the probe fit; the next checkpoint would not
        return os.strerror(errno.ENOSPC).lower()
    return None


def _reason(err: OSError) -> str:
    """An OS error's reason as the OS words it (`read-only file system`), lower case to run on in a line."""
    return (os.strerror(err.errno) if err.errno else str(err)).lower()
