"""Where the test suite's time goes: a pytest plugin that writes each test's CPU seconds, those of the
pytest process and of every process it started (the `tuner` processes, the Ray instances and their trial
processes), beside its wall seconds. The suite is CPU-bound on 2 cores, so its length follows the CPU its
tests spend, and a test's wall time says little while the other xdist worker loads the same cores.

    PYTHONPATH=.:bench .venv/bin/python -m pytest -p suite_cpu      # then:
    python bench/suite_cpu.py                                        # by file, and the costliest tests

Rows go to $SUITE_CPU_FILE (default: suite_cpu.tsv in the temp folder), appended: delete it between runs. Processes are
polled every POLL_S, so one that starts and ends between two polls is missed (a short `tuner list`).

A row: the test, its CPU-s, its wall s, the xdist worker that ran it and when (Unix time), then for each kind
of process the test started (KINDS: a Ray worker, a `tuner` process, Ray's own daemons) `kind=count:cpu`: how
many process starts the suite pays for, and what each kind costs on average."""

import collections
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

POLL_S = 0.3
_OUT = Path(os.environ.get("SUITE_CPU_FILE", Path(tempfile.gettempdir()) / "suite_cpu.tsv"))
_Key = tuple[int, float]  # a process: its pid and start time (pids are reused)
# What a process is, from marks in its command line: the first kind with a mark there wins.
KINDS = (
    ("ray worker", ("default_worker.py", "setup_worker.py", "ray::")),
    ("tuner process", ("-m tuner", "bin/tuner")),
    ("ray daemon", ("gcs_server", "raylet", "dashboard", "agent.py", "log_monitor", "monitor.py", "runtime_env")),
)


def kind_of(command_line: str) -> str:
    return next((kind for kind, marks in KINDS if any(mark in command_line for mark in marks)), "other")


class _Tracker:
    def __init__(self) -> None:
        self.seen: dict[_Key, float] = {}
        self.kinds: dict[_Key, str] = {}
        self.active = False
        self._lock = threading.Lock()
        threading.Thread(target=self._poll, name="suite-cpu", daemon=True).start()

    def snapshot(self) -> dict[_Key, float]:
        me = psutil.Process()
        cpu = {}
        for process in [me, *me.children(recursive=True)]:
            try:
                times = process.cpu_times()
                key = (process.pid, process.create_time())
                cpu[key] = times.user + times.system
                if key not in self.kinds or self.kinds[key] == "other":  # a Ray worker's title comes later
                    self.kinds[key] = kind_of(" ".join(process.cmdline()))
            except psutil.Error:
                pass  # ended as we looked
        return cpu

    def _merge(self, latest: dict[_Key, float]) -> None:
        """A process's CPU only grows: a poll that took its snapshot before the test began and lands after
        it never lowers what start() recorded."""
        for key, cpu in latest.items():
            self.seen[key] = max(self.seen.get(key, 0.0), cpu)

    def _poll(self) -> None:
        while True:
            if self.active:
                latest = self.snapshot()
                with self._lock:
                    self._merge(latest)
            time.sleep(POLL_S)

    def start(self) -> dict[_Key, float]:
        base = self.snapshot()
        with self._lock:
            self.seen, self.active = dict(base), True
        return base

    def stop(self, base: dict[_Key, float]) -> tuple[float, dict[str, tuple[int, float]]]:
        """The test's CPU, and for each kind of process it started: how many, and their CPU."""
        latest = self.snapshot()
        with self._lock:
            self.active = False
            self._merge(latest)
            started: dict[str, tuple[int, float]] = {}
            for key in self.seen.keys() - base.keys():
                count, cpu = started.get(self.kinds.get(key, "other"), (0, 0.0))
                started[self.kinds.get(key, "other")] = (count + 1, cpu + self.seen[key])
            return sum(cpu - base.get(key, 0.0) for key, cpu in self.seen.items()), started


_trackers: list[_Tracker] = []
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


def pytest_configure(config: pytest.Config) -> None:
    _trackers.append(_Tracker())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    tracker = _trackers[0]
    base = tracker.start()
    started, began = time.monotonic(), time.time()
    try:
        return (yield)
    finally:
        cpu, processes = tracker.stop(base)
        counts = "\t".join(f"{kind}={count}:{kind_cpu:.1f}" for kind, (count, kind_cpu) in sorted(processes.items()))
        with _OUT.open("a") as rows:
            rows.write(
                f"{item.nodeid}\t{cpu:.1f}\t{time.monotonic() - started:.1f}\t{_WORKER}\t{began:.1f}\t{counts}\n"
            )


def _summary(path: Path, top: int = 30) -> None:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line]
    tests = [(name, float(cpu), float(wall)) for name, cpu, wall, *_ in rows]
    print(f"{len(tests)} tests: {sum(cpu for _, cpu, _ in tests):.0f} CPU-s, {sum(w for *_, w in tests):.0f} s of wall")
    started: collections.Counter[str] = collections.Counter()
    started_cpu: collections.Counter[str] = collections.Counter()
    for row in rows:
        for field in filter(None, row[5:]):  # kind=count:cpu
            kind, numbers = field.split("=")
            count, cpu = numbers.split(":")
            started[kind] += int(count)
            started_cpu[kind] += float(cpu)
    print("\nProcesses the tests started, by kind: how many, their CPU-s, CPU-s per process")
    for kind, count in started.most_common():
        print(f"{count:6d} {started_cpu[kind]:8.1f} {started_cpu[kind] / count:6.2f}  {kind}")
    print("\nEach xdist worker: tests, wall s spent in them, when its last test ended (s from the first start)")
    first = min(float(row[4]) for row in rows)
    for worker in sorted({row[3] for row in rows}):
        mine = [row for row in rows if row[3] == worker]
        ended = max(float(row[4]) + float(row[2]) for row in mine) - first
        print(f"{worker:>6} {len(mine):5d} {sum(float(row[2]) for row in mine):8.0f} {ended:8.0f}")
    by_file: collections.Counter[str] = collections.Counter()
    for name, cpu, _ in tests:
        by_file[name.split("::")[0]] += cpu
    print("\nCPU-s by file")
    for file, cpu in by_file.most_common(top):
        print(f"{cpu:8.1f}  {file}")
    print("\nCPU-s (wall s) of the costliest tests")
    for name, cpu, wall in sorted(tests, key=lambda test: -test[1])[:top]:
        print(f"{cpu:8.1f} ({wall:6.1f})  {name}")


if __name__ == "__main__":
    _summary(Path(sys.argv[1] if len(sys.argv) > 1 else _OUT))
