"""The one exception type that the CLI turns into a one-line message and exit code 2."""


class TunerError(Exception):
    """A problem the user can fix: the message names the problem and the fix."""


INTERRUPTED = 130  # the shell's exit code for a command stopped by Ctrl-C


class Interrupted(Exception):
    """Ctrl-C during a run: Ray Tune saved the experiment state, so it can be resumed."""

    def __init__(self, experiment_path: str):
        super().__init__(experiment_path)
        self.experiment_path = experiment_path
