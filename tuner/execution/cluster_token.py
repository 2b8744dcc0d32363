"""A cluster's token, found where Ray's own tools keep it.

Ray 2.59+ turns token authentication on for clusters, but a client sends its token only when its own
environment says RAY_AUTH_MODE=token, even when the token sits in ~/.ray/auth_token, where
`ray get-auth-token --generate` put it for `ray start`. Ray itself turns the mode on when a token is
found only for a local instance it starts; for `--address` tuner does the same, but only for a cluster
that asks for a token. A cluster without authentication (one started by `ray.cluster_utils.Cluster`, or
with RAY_AUTH_MODE=disabled) accepts a driver in token mode, and then every trial fails at once with
"The actor never ran - it was cancelled before it started running" (Ray 2.60; a plain ray.init and
one actor with RAY_AUTH_MODE=token fail the same way, while the connection itself succeeds). So tuner
asks the cluster first (ray_compat.private.gcs_wants_token) and connects in the cluster's mode.
"""

import os

from tuner.errors import TunerError
from tuner.home import expand_home
from tuner.ray_compat import private

DEFAULT_TOKEN_FILE = "~/.ray/auth_token"
ASK_TIMEOUT_S = 3.0
HOW_TO_GET_IT = "`ray get-auth-token` on the head node prints it"


def token_source() -> str | None:
    """Where Ray will read this client's token from, in Ray's own order; None if there is none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if path := os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return f"RAY_AUTH_TOKEN_PATH ({path})"
    if expand_home(DEFAULT_TOKEN_FILE).is_file():
        return DEFAULT_TOKEN_FILE
    return None


def cli_prefix() -> str:
    """What a printed `ray` command needs in front to send the token this process finds: `RAY_AUTH_MODE=token `
    where the user's environment leaves the mode unset, since Ray's CLI then sends none. Call it before
    send_token_if_available, which sets the mode in this process's environment."""
    return "RAY_AUTH_MODE=token " if os.environ.get("RAY_AUTH_MODE") is None and token_source() else ""


def send_token_if_available() -> str | None:
    """Token mode on for this process when a token is available and RAY_AUTH_MODE is unset; returns
    where the token comes from."""
    private.send_token_if_available()
    return token_source()


def refusal_hint(source: str | None) -> str:
    """What to do when a cluster refused this client, given where its token came from."""
    if source is None:
        return (
            f"the cluster requires a token: set RAY_AUTH_TOKEN, or put it in {DEFAULT_TOKEN_FILE} or a file "
            f"named by RAY_AUTH_TOKEN_PATH ({HOW_TO_GET_IT})"
        )
    return (
        f"the cluster refused the token from {source}: set RAY_AUTH_TOKEN (or {DEFAULT_TOKEN_FILE}, or "
        f"RAY_AUTH_TOKEN_PATH) to the cluster's token ({HOW_TO_GET_IT})"
    )


def mode_for(address: str) -> str | None:
    """The RAY_AUTH_MODE to connect to the cluster at `address` with: "token" when its GCS asks for a
    token, "disabled" when it does not, None when that cannot be told (Ray Client, no answer): Ray then
    decides as before. A token mode the user set for a cluster without authentication is refused here,
    in one line, since every trial would be cancelled before it starts."""
    if address.startswith("ray://"):
        return None  # Ray Client: the run's driver starts on the cluster, in the cluster's own mode
    gcs = private.resolved_address(address)
    wants = private.gcs_wants_token(gcs, ASK_TIMEOUT_S) if gcs else None
    if wants is None:
        return None
    if not wants and os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        raise TunerError(
            f"the Ray cluster at {address} runs without token authentication, and RAY_AUTH_MODE=token here "
            "would make Ray cancel every trial before it starts (the cluster's processes send this driver no "
            "token); unset RAY_AUTH_MODE, or start the cluster with RAY_AUTH_MODE=token"
        )
    return "token" if wants else "disabled"
