"""The one exception type that the CLI turns into a one-line message and exit code 2."""


class TunerError(Exception):
    """A problem the user can fix: the message names the problem and the fix."""
