"""Local storage whose files are replaced whole: what Ray Tune is given as the storage filesystem of an
experiment on a local (or mounted network) disk.

Ray's driver uploads each trial's result.json and progress.csv by rewriting the storage copy in place,
several files at once. On a full disk the rewrite stops where the space ends, and the space one file's
truncation freed can go to another file written beside it: a trial's result.json in storage went from
5 recorded rows to 0 (tests/storage/test_whole_files.py shows it with Ray's own upload). Written here,
a file goes to a temporary name beside it and is renamed over the old one only once it was written
whole; a write that fails leaves the old file as it was. Object stores need none of this: an object is
replaced whole by its store.

pyarrow's LocalFileSystem has no such mode and Ray no hook for one; pyarrow's documented way to give a
filesystem its own behaviour is a FileSystemHandler behind a PyFileSystem. Everything but writing is
LocalFileSystem's own. Unneeded once Ray uploads to a temporary name (see tuner/storage/__init__.py).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow
import pyarrow.fs as pafs

from tuner.storage import filesystem


class _ReplacedWhenClosed:
    """The file object behind one output stream: written under a temporary name (temporary_beside),
    renamed over the file only by a close that follows no failed write. An abandoned stream (a failed
    write, or one garbage-collected unclosed) deletes its temporary file and leaves the old one as it
    was."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._temp = filesystem.temporary_beside(path)
        # Buffered: it writes again after a short write (the last bytes that fit on a full disk)
        # until the kernel refuses with an error, where a raw write would leave the rest unwritten.
        self._file = open(self._temp, "xb")  # noqa: SIM115 (closed by close() or _abandon())

    @property
    def closed(self) -> bool:
        return self._file.closed

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            return self._file.write(data)
        except BaseException:
            self._abandon()
            raise

    def flush(self) -> None:
        try:
            self._file.flush()
        except BaseException:
            self._abandon()
            raise

    def close(self) -> None:
        if self._file.closed:  # closed before, or abandoned: nothing to put in place
            return
        try:
            self._file.close()
        except BaseException:
            self._abandon()
            raise
        os.replace(self._temp, self._path)

    def _abandon(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # the same full disk: the file is closed all the same
        try:
            os.unlink(self._temp)
        except FileNotFoundError:
            pass

    def __del__(self) -> None:
        if not self._file.closed:
            self._abandon()


class WholeFileHandler(pafs.FileSystemHandler):
    """LocalFileSystem, except that open_output_stream and copy_file replace a file whole. Ray pickles
    the storage filesystem into each experiment's tuner.pkl, so this class stays at this path
    (tuner.ray_compat.PICKLED_BY_PATH)."""

    def __init__(self) -> None:
        self._local = pafs.LocalFileSystem()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WholeFileHandler)

    def __hash__(self) -> int:
        return hash(WholeFileHandler)

    def equals(self, other: object) -> bool:
        return self == other

    def get_type_name(self) -> str:
        return "local"

    def open_output_stream(self, path: str, metadata: Any) -> pyarrow.NativeFile:
        if not os.path.lexists(path):
            # Nothing recorded to lose (a checkpoint's files are all new): pyarrow's own stream, at
            # its own speed, where one through Python copies a 300 MB checkpoint ~5x slower.
            return self._local.open_output_stream(path)
        return pyarrow.PythonFile(_ReplacedWhenClosed(path), mode="w")

    def copy_file(self, src: str, dest: str) -> None:
        temp = filesystem.temporary_beside(dest)
        try:
            self._local.copy_file(src, temp)
            os.replace(temp, dest)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self._local.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self._local.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self._local.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._local.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("refusing to delete the contents of / (pyarrow's LocalFileSystem refuses it too)")

    def delete_file(self, path: str) -> None:
        self._local.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self._local.move(src, dest)

    def open_input_stream(self, path: str) -> pyarrow.NativeFile:
        return self._local.open_input_stream(path)

    def open_input_file(self, path: str) -> pyarrow.NativeFile:
        return self._local.open_input_file(path)

    def open_append_stream(self, path: str, metadata: Any) -> pyarrow.NativeFile:
        return self._local.open_append_stream(path)

    def normalize_path(self, path: str) -> str:
        return self._local.normalize_path(path)


def whole_file_filesystem() -> pafs.PyFileSystem:
    return pafs.PyFileSystem(WholeFileHandler())


def is_whole_file(fs: pafs.FileSystem) -> bool:
    return isinstance(fs, pafs.PyFileSystem) and isinstance(fs.handler, WholeFileHandler)


@contextmanager
def checkpoint_directory(checkpoint: Any) -> Iterator[str]:
    """A Ray checkpoint as a local directory: on whole-file storage its own directory, where Ray's
    as_directory, which reads in place only from a LocalFileSystem, would first copy it to /tmp."""
    if is_whole_file(checkpoint.filesystem):
        yield checkpoint.path
    else:
        with checkpoint.as_directory() as directory:
            yield directory


def ray_storage(path_or_uri: str) -> tuple[str, pafs.FileSystem | None]:
    """(storage_path, storage_filesystem) to give Ray for an experiment's place: a local one as a path on
    whole-file storage; an object store's URI as it is, for Ray to open as it documents."""
    if filesystem.is_remote(path_or_uri):
        return path_or_uri, None
    return filesystem.filesystem(path_or_uri)[1], whole_file_filesystem()
