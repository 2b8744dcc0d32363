"""Ray's own error messages that tuner turns into one-line errors. Ray raises plain exceptions for
these, so their words are all there is to tell them by. MISSING_METRIC is made to happen for real by
tests/e2e/test_smoke.py (a rewording fails it there), LOCAL_START_TIMED_OUT by
tests/execution/test_local_start.py; the others are transient states of a busy or starting head
that no test can bring about on demand: if Ray rewords them, the user sees Ray's own error instead of
tuner's retry."""

# TuneController._validate_result_metrics: a result lacks the metric the search ranks by. Can go when
# Ray raises a typed error for it.
MISSING_METRIC = "did not include the specified metric"
# A Ray Client head forks a server process per client; on a busy head that fork can die at once (Ray
# answers with this, its log empty). A new connection gets a new one. Can go when Ray retries itself.
CLIENT_SERVER_FAILED = "Starting Ray client server failed"
# The same death seen a moment later: the proxier's `start_specific_server` reads the dead fork's
# command line and psutil raises ZombieProcess, sent back as the client's initialization failure (the
# server's log empty again).
CLIENT_SERVER_DIED = ("start_specific_server", "ZombieProcess")
# ray._private.node.Node gives a local instance's raylet a fixed 30 s to register with the GCS. On a busy
# machine (few cores, another Ray starting, the driver's own smoke step) the raylet's dashboard agent can
# take longer to start, and the raylet then registers too late or aborts. A new start usually makes it.
# Made to happen by tests/execution/test_local_start.py.
# Can go when Ray's start-up waits for a slow agent or retries itself.
LOCAL_START_TIMED_OUT = "The current node timed out during startup"


def is_missing_metric(error: BaseException) -> bool:
    return MISSING_METRIC in str(error)


def is_client_server_failure(error: BaseException) -> bool:
    message = str(error)
    return CLIENT_SERVER_FAILED in message or all(word in message for word in CLIENT_SERVER_DIED)


# The Jobs API for a while after a head starts, before its job agent registered. Can go when Ray's
# JobSubmissionClient waits for the agent itself.
NO_JOB_AGENT = "No available agent to submit job"


def is_no_job_agent(error: BaseException) -> bool:
    return NO_JOB_AGENT in str(error)


def is_local_start_timeout(error: BaseException) -> bool:
    return LOCAL_START_TIMED_OUT in str(error)
