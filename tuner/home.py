"""`~` and `~user` in a path tuner reads from its arguments, settings or environment.

Path.expanduser raises RuntimeError for a `~user` with no such user (and for `~` with neither $HOME nor
a passwd entry); a shell leaves such a word as it is. So does tuner: the path is then taken literally,
and whatever reads it says the path does not exist, in its own one line.
"""

from pathlib import Path


def expand_home(path: str | Path) -> Path:
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)
