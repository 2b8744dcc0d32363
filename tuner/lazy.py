"""Registries name their entries as "module:attribute" strings, imported on first use.

torch, torchvision and scikit-learn take seconds to import; keeping the registries import-free lets
a typo in a space module or on the command line be reported before any of them loads.
"""

import importlib
from typing import Any


def resolve(ref: str) -> Any:
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
