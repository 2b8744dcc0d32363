"""Experiments saved before tuner's modules moved into stage folders (2026-12-04) stay readable and
resumable.

Ray pickles some of tuner's objects into its experiment state by module path: each trial's name
creator (`tuner.experiment.TrialNamer`) and, in tuner.pkl, the Tune callbacks (`tuner.trial_logs`,
`tuner.checkpoint_retention`, ...). Unpickling such a state imports those paths, which no longer exist;
`tuner report` would fail with ModuleNotFoundError and `tuner resume` could not restore. While
`old_module_paths()` is active, importing an old path gives the module that now holds the same code.
Unneeded once no experiment from before the move is kept anywhere.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType

MOVED = {
    "tuner.space": "tuner.spec.space",
    "tuner.hyperparameters": "tuner.spec.hyperparameters",
    "tuner.overrides": "tuner.spec.overrides",
    "tuner.budgets": "tuner.spec.budgets",
    "tuner.signatures": "tuner.spec.signatures",
    "tuner.searchers": "tuner.search.searchers",
    "tuner.schedulers": "tuner.search.schedulers",
    "tuner.train": "tuner.training.loop",
    "tuner.trial": "tuner.training.trial",
    "tuner.context": "tuner.training.context",
    "tuner.batches": "tuner.training.batches",
    "tuner.losses": "tuner.training.losses",
    "tuner.metrics": "tuner.training.metrics",
    "tuner.optimizers": "tuner.training.optimizers",
    "tuner.config_reads": "tuner.training.config_reads",
    "tuner.result_keys": "tuner.training.result_keys",
    "tuner.smoke": "tuner.training.smoke",
    "tuner.user_traceback": "tuner.training.user_traceback",
    "tuner.experiment": "tuner.execution.experiment",  # TrialNamer is imported there
    "tuner.trainable": "tuner.execution.trainable",
    "tuner.checkpoint_bridge": "tuner.execution.checkpoint_bridge",
    "tuner.cluster": "tuner.execution.cluster",
    "tuner.console": "tuner.execution.console",
    "tuner.tracking": "tuner.execution.tracking",
    "tuner.checkpoint_retention": "tuner.storage.checkpoint_retention",
    "tuner.trial_logs": "tuner.storage.trial_logs",
    "tuner.trial_names": "tuner.storage.trial_names",
    "tuner.trial_files": "tuner.storage.trial_files",
    "tuner.saved_state": "tuner.storage.saved_state",
}


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and hands back the module at its new one."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        pass  # the module at the new path has run already


@contextmanager
def old_module_paths() -> Iterator[None]:
    finder = _OldPaths()
    sys.meta_path.append(finder)  # last: a path that still exists is never redirected
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for old in MOVED:
            # The aliases go: `import tuner.experiment` fails again, and so does `tuner.experiment`,
            # the attribute an import sets on the parent package.
            if sys.modules.pop(old, None) is not None:
                parent, _, name = old.rpartition(".")
                if getattr(sys.modules.get(parent), name, None) is not None:
                    delattr(sys.modules[parent], name)
