"""Which Ray Client connection failures tuner connects again after: the two ways Ray reports a client
server whose fork died on a busy head (their words copied from Ray 2.60's answers), and nothing else."""

from tuner.ray_compat import errors


def test_a_dead_client_server_is_retried_in_either_wording():
    failed = ConnectionError("ray client connection timeout: Starting Ray client server failed. See ...")
    died = ConnectionError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        '  File ".../ray/util/client/server/proxier.py", line 765, in Datapath\n'
        "    if not self.proxy_manager.start_specific_server(\n"
        "psutil.ZombieProcess: PID still exists but it's a zombie (pid=6801)"
    )
    assert errors.is_client_server_failure(failed) and errors.is_client_server_failure(died)


def test_other_connection_failures_are_not_retried():
    refused = ConnectionError("Initialization failure from server: the cluster refused the token")
    zombie_elsewhere = ConnectionError("psutil.ZombieProcess: PID still exists but it's a zombie (pid=1)")
    assert not errors.is_client_server_failure(refused)
    assert not errors.is_client_server_failure(zombie_elsewhere)
