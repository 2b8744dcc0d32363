"""`tuner submit --follow` shows the job's own output: what Ray's job supervisor writes before it (the
runtime env's set-up, the entrypoint whole) is left out, however the log stream cuts it into pieces."""

from tuner.execution.submission import Job
from tuner.ray_compat.logs import JobLogFilter

JOB = Job(address="http://127.0.0.1:8265", space_ref="tiny.py", name="run", storage_path="/r", run_arguments=[])
SETUP = "2026-12-06 10:24:10,178\tINFO job_manager.py:581 -- Runtime env is setting up.\n"
ECHO = f"Running entrypoint for job {JOB.submission_id}: {JOB.entrypoint}\n"
OWN = "smoke step: one batch ran in 3 ms\n[1/2] a_00000 finished\nRunning entrypoint for job x: mine\n"


def _shown(stream: str, cuts: list[int]) -> str:
    shown = JobLogFilter(JOB.submission_id, JOB.entrypoint)
    pieces = [stream[start:end] for start, end in zip([0, *cuts], [*cuts, len(stream)])]
    return "".join(shown.feed(piece) for piece in pieces) + shown.rest()


def test_the_supervisors_lines_are_left_out_wherever_the_stream_is_cut():
    stream = SETUP + ECHO + OWN
    assert "\n" in JOB.entrypoint  # the bootstrap spans lines: one cut may fall inside any of them
    for cut in range(len(stream) + 1):
        assert _shown(stream, [cut]) == OWN, cut
    assert _shown(stream, list(range(1, len(stream)))) == OWN  # a character at a time


def test_a_stream_without_the_echo_is_shown_whole_but_for_the_set_up_line():
    assert _shown(SETUP + OWN, [5, 40]) == OWN
    partial = ECHO[:30]  # the stream ends inside what could have been the echo: shown at the end
    assert _shown(OWN + partial, [10]) == OWN + partial


def test_the_jobs_output_after_the_echo_passes_as_it_comes():
    shown = JobLogFilter(JOB.submission_id, JOB.entrypoint)
    assert shown.feed(ECHO + "partial li") == "partial li"  # no wait for the line's end once the echo is past
    assert shown.feed("ne\n") == "ne\n"
