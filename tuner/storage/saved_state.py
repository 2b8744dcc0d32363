"""Is Ray's saved experiment state there and whole? Checked before `tuner resume` hands it to Ray.

Ray rewrites these files in place when it syncs them to storage, so a disk that fills up mid-run can
leave one cut short. Given such a file, Ray's resume logs "Failed to restore the run state" and goes on
to start the experiment afresh with an empty search space: one trial of default settings, trained into
the same directory, reported as the best. Walking each file's structure (the JSON, or the pickle's
opcodes, which runs none of them) finds the cut without trusting the content.
"""

import fnmatch
import json
import pickletools

import pyarrow.fs as pafs

from tuner.storage import filesystem

EXPERIMENT_STATE = "experiment_state-*.json"  # Ray's TuneController.CKPT_FILE_TMPL, one file per driver session
# What Ray's resume reads: of each pattern, the file with the greatest name (names carry timestamps).
JSON_FILES = (EXPERIMENT_STATE,)
PICKLE_FILES = (
    "tuner.pkl",
    "basic-variant-state-*.json",
    "search_gen_state-*.json",
    "searcher-state-*.pkl",
    "callback-states-*.pkl",
)


def _problem(data: bytes, pattern: str) -> str | None:
    """None for a whole file; `cut short` for one that stops mid-structure (a write a full disk ended);
    else what is wrong with it, as the parser says (edited, or from another version)."""
    try:
        if pattern in JSON_FILES:
            json.loads(data)
        else:
            for _ in pickletools.genops(data):
                pass
    except json.JSONDecodeError as error:  # cut short: it ran out of text where more was expected
        ended = error.pos >= len(data.rstrip()) or error.msg.startswith("Unterminated string")
        return CUT_SHORT if ended else f"not JSON: {error}"
    except ValueError as error:  # pickletools' words for a pickle that ends early, else for other bytes
        ended = not data or any(words in str(error) for words in _ENDED_EARLY)
        return CUT_SHORT if ended else f"not a pickle: {error}"
    return None


CUT_SHORT = "cut short"
# pickletools' words for a pickle that stops mid-opcode or before its STOP
_ENDED_EARLY = ("exhausted", "remain", "not enough data", "no newline found")


def _names(experiment_path: str) -> list[str]:
    fs, path = filesystem.filesystem(experiment_path)
    try:
        entries = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except NotADirectoryError:  # a file given where an experiment directory was expected
        return []
    return [entry.base_name for entry in entries if entry.type == pafs.FileType.File]


def newest_state(experiment_path: str) -> str | None:
    """The name of the experiment state file Ray would resume from (the newest), or None."""
    return max(fnmatch.filter(_names(experiment_path), EXPERIMENT_STATE), default=None)


def state_missing(experiment_path: str) -> bool:
    """Ray's other files are there (tuner.pkl, written as the run starts) and no experiment state: Ray's
    resume then logs "Failed to restore the run state" and starts the trials afresh in the same folder,
    over their results."""
    names = _names(experiment_path)
    return not fnmatch.filter(names, EXPERIMENT_STATE) and any(fnmatch.filter(names, p) for p in PICKLE_FILES)


def damaged(experiment_path: str) -> tuple[str, str] | None:
    """The first state file Ray would resume from that is not whole, and what is wrong with it
    (`cut short`, or the parser's words), or None."""
    names = _names(experiment_path)
    for pattern in JSON_FILES + PICKLE_FILES:
        if matching := fnmatch.filter(names, pattern):
            name = max(matching)
            problem = _problem(filesystem.read_bytes(filesystem.join(experiment_path, name)), pattern)
            if problem is not None:
                return name, problem
    return None
