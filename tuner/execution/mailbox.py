"""A multi-worker trial's mailbox between Ray Train and Ray Tune (tuner/execution/checkpoint_bridge.py):
its own module, importing Ray's core only, because the actor's process imports the module that defines
it, and one that imports Ray Train and torch doubles what starting that process costs every multi-worker trial."""

import asyncio
from typing import Any

import ray

# What a report carries: rank 0's metrics and the persisted checkpoint (a ray.train.Checkpoint), or None.
Report = tuple[dict[str, Any], Any]


@ray.remote(num_cpus=0)
class Mailbox:
    """One trial's reports (Train to Tune) and answers (Tune to the workers), each a queue of one. Not
    Ray's own Queue: that is an actor per queue, and each actor is one more process to start with every
    multi-worker trial."""

    def __init__(self) -> None:
        self._reports: asyncio.Queue[Report] = asyncio.Queue(maxsize=1)
        self._answers: asyncio.Queue[str] = asyncio.Queue(maxsize=1)

    async def put_report(self, report: Report) -> None:
        await self._reports.put(report)

    async def next_report(self, timeout_s: float) -> Report | None:
        """The next report, or None if none came within `timeout_s`."""
        try:
            return await asyncio.wait_for(self._reports.get(), timeout_s)
        except TimeoutError:
            return None

    async def has_reports(self) -> bool:
        return not self._reports.empty()

    async def put_answer(self, answer: str) -> None:
        await self._answers.put(answer)

    async def next_answer(self) -> str:
        return await self._answers.get()
