"""The dashboard port a local instance is given before Ray starts (tuner/execution/dashboard_port.py):
two runs starting at once must not choose the same one, and a run that did not ask for the dashboard
leaves 8265 and its neighbours to the user's own Ray. Real sockets; the instance's dashboard binding
its port is a listening socket here (Ray's own start is tests/execution/test_cluster.py's)."""

import os
import socket
import subprocess
import sys
import textwrap

from tuner.execution import dashboard_port
from tuner.settings.run import DEFAULT_DASHBOARD_PORT

# Another tuner process: it chooses a port, takes a while to start its instance (as Ray does), and then
# its dashboard listens on the port, until stdin closes.
ANOTHER_RUN = textwrap.dedent(
    """
    import socket, sys, time
    from tuner.execution import dashboard_port

    with dashboard_port.for_local_instance(shown=True) as port:
        print(port, flush=True)
        time.sleep(1.5)
        dashboard = socket.socket()
        dashboard.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        dashboard.bind(("127.0.0.1", port))
        dashboard.listen()
    print("up", flush=True)
    sys.stdin.read()
    """
)


def test_two_runs_starting_at_once_choose_different_ports() -> None:
    other = subprocess.Popen(
        [sys.executable, "-c", ANOTHER_RUN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None and other.stdin is not None
        others = int(other.stdout.readline())  # chosen; its dashboard is not up yet
        with dashboard_port.for_local_instance(shown=True) as port:
            assert port != others
            assert os.environ["RAY_API_SERVER_ADDRESS"] == f"http://127.0.0.1:{port}"
        assert other.stdout.readline().strip() == "up"
    finally:
        other.kill()
        other.wait(timeout=30)


def test_an_unshown_dashboard_leaves_8265_and_its_neighbours_alone() -> None:
    before = os.environ.get("RAY_API_SERVER_ADDRESS")
    with dashboard_port.for_local_instance(shown=False) as port:
        assert not DEFAULT_DASHBOARD_PORT <= port < DEFAULT_DASHBOARD_PORT + dashboard_port.PORTS_TRIED
        assert os.environ["RAY_API_SERVER_ADDRESS"] == f"http://127.0.0.1:{port}"
        with socket.socket() as dashboard:  # free for the instance's dashboard to bind
            dashboard.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            dashboard.bind(("127.0.0.1", port))
    assert os.environ.get("RAY_API_SERVER_ADDRESS") == before
