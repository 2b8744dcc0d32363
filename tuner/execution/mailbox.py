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
        self._ended = asyncio.Event()

    async def put_report(self, report: Report) -> None:
        await self._reports.put(report)

    async def end(self) -> None:
        """The Train run has ended: no report comes after those already put."""
        self._ended.set()

    async def next_report(self) -> Report | None:
        """The next report, or None once the run has ended and every report was taken. The trial waits
        here, not in a loop of short waits: each wait is a remote call, and a multi-worker trial spends
        most of its life waiting for its next epoch."""
        waiting = asyncio.ensure_future(self._reports.get())
        ended = asyncio.ensure_future(self._ended.wait())
        await asyncio.wait((waiting, ended), return_when=asyncio.FIRST_COMPLETED)
        ended.cancel()
        if waiting.done():
            return waiting.result()
        waiting.cancel()  # a report put as the run ended is still queued: a cancelled get takes nothing
        return None if self._reports.empty() else self._reports.get_nowait()

    async def put_answer(self, answer: str) -> None:
        await self._answers.put(answer)

    async def next_answer(self) -> str:
        return await self._answers.get()
