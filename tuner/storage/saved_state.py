"""Is Ray's saved experiment state whole? Checked before `tuner resume` hands it to Ray.

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


def _parses_to_the_end(data: bytes, pattern: str) -> bool:
    try:
        if pattern in JSON_FILES:
            json.loads(data)
        else:
            for _ in pickletools.genops(data):
                pass
    except ValueError:  # json.JSONDecodeError is one; pickletools raises it for a pickle cut short
        return False
    return True


def _names(experiment_path: str) -> list[str]:
    fs, path = filesystem.filesystem(experiment_path)
    return [
        entry.base_name
        for entry in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        if entry.type == pafs.FileType.File
    ]


def newest_state(experiment_path: str) -> str | None:
    """The name of the experiment state file Ray would resume from (the newest), or None."""
    return max(fnmatch.filter(_names(experiment_path), EXPERIMENT_STATE), default=None)


def cut_short(experiment_path: str) -> str | None:
    """The name of the first state file Ray would resume from that is not whole, or None."""
    names = _names(experiment_path)
    for pattern in JSON_FILES + PICKLE_FILES:
        if matching := fnmatch.filter(names, pattern):
            name = max(matching)
            if not _parses_to_the_end(filesystem.read_bytes(filesystem.join(experiment_path, name)), pattern):
                return name
    return None
