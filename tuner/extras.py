"""The optional extras of pyproject.toml, and the one line that names the missing one.

README's first command installs tuner without extras, so everything tuner imports is a base dependency
except the libraries named here; code that imports one of them calls `require` first, before Ray
starts, and imports it inside the function that uses it. tests/test_dependencies.py reads every
module's imports and holds each third-party name to the base dependencies or to this table.
"""

import importlib.util
from dataclasses import dataclass

from tuner.command import install_command
from tuner.errors import TunerError


@dataclass(frozen=True)
class Extra:
    libraries: str  # as the message names them
    modules: tuple[str, ...]  # their import names, looked up without importing them


EXTRAS = {
    "hyperopt": Extra("HyperOpt", ("hyperopt",)),
    "bohb": Extra("hpbandster and ConfigSpace", ("hpbandster", "ConfigSpace")),
    "mlflow": Extra("MLflow", ("mlflow",)),
    "notebook": Extra("JupyterLab", ("jupyterlab", "ipywidgets")),
    "tensorboard": Extra("TensorBoard", ("tensorboard",)),
}


def installed(extra: str) -> bool:
    """Looked up, not imported: HyperOpt takes about a second to import, hpbandster more."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra].modules)


def require(extra: str, needed_by: str) -> None:
    """`needed_by` (such as `--search bohb`) needs the extra: one line with the command that installs it."""
    if not installed(extra):
        raise TunerError(f"{needed_by} needs {EXTRAS[extra].libraries}, an optional extra: {install_command(extra)}")
