"""The process that keeps a local Ray instance for later runs (`tuner run --keep-ray`): it starts the
instance as a run would (ray.init, so that the instance ends with this process), records where it is
(tuner/execution/kept_ray.py), and shuts it down once no run has used it for the idle time, or at
SIGTERM (`tuner down`). It watches Ray's own job table: every run is a Ray job (a driver) while it is
connected, and Ray marks the job dead when its driver exits, however it exits. It runs nothing on the
instance itself: Ray Tune starts every trial's actor in a process of its own (with a runtime_env of its
own, which Ray's prestarted workers never match), so there is no warm process to hand over.

    python -m tuner.execution.keeper --keep 10m --idle-s 600
"""

import argparse
import logging
import os
import signal
import sys
import time
from dataclasses import replace

import ray

from tuner.execution import dashboard_port, kept_ray
from tuner.ray_compat import private
from tuner.settings.run import LOOPBACK

POLL_S = 1.0


def _start_instance(keep: str, environment: dict[str, str]) -> tuple[kept_ray.Kept, str]:
    """A local instance, as a run would start one (with the dashboard, for Train's State API), its
    processes in this process's environment (the run's that started it: kept_ray.run_environment), and
    its record; with the job id of this process on it."""
    with dashboard_port.for_local_instance(shown=True) as port:  # it serves later runs' --dashboard
        context = ray.init(
            # A new instance, always: with no address Ray would join the cluster that RAY_ADDRESS or the
            # discovery file of the user's own `ray start` names (and wait for a stale one's GCS).
            address="local",
            include_dashboard=True,
            dashboard_host=LOOPBACK,
            dashboard_port=port,
            configure_logging=True,
            logging_level=logging.WARNING,
        )
    kept = kept_ray.Kept(
        address=context.address_info["gcs_address"],  # type: ignore[attr-defined]  # a RayContext here
        dashboard_url=context.dashboard_url or "",
        pid=os.getpid(),
        python=sys.executable,
        cwd=os.getcwd(),
        keep=keep,
        started_at=time.time(),
        environment=environment,
    )
    kept_ray.write(kept)
    return kept, ray.get_runtime_context().get_job_id()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", required=True, help="the idle time as the user wrote it")
    parser.add_argument("--idle-s", type=float, required=True)
    args = parser.parse_args(argv)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, frame: stopping.append(number))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the run that started this one
    environment = dict(os.environ)  # before ray.init adds its own
    kept, own_job = _start_instance(args.keep, environment)
    last_used = time.monotonic()
    try:
        while not stopping:
            time.sleep(POLL_S)
            drivers = private.live_drivers(besides=own_job)
            if drivers:
                last_used = time.monotonic()
            if drivers != kept.drivers:
                kept = replace(kept, drivers=drivers)
                with kept_ray.locked():
                    kept_ray.write(kept)
            if time.monotonic() - last_used >= args.idle_s:
                with kept_ray.locked():  # a run that has read the record connects before this looks again
                    if not private.live_drivers(besides=own_job):
                        kept_ray.record_path().unlink(missing_ok=True)
                        break
    finally:
        with kept_ray.locked():
            if (found := kept_ray.find()) is not None and found.pid == os.getpid():
                kept_ray.record_path().unlink(missing_ok=True)
        private.stop_local_monitor()
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
