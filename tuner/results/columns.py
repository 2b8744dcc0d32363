"""Column names of the trials table that depend on the experiment's metric: built here only, so that
the report that writes them and every reader (plots, importance, the CLI, notebooks) agree."""

from typing import Any


def best_column(metric: str) -> str:
    """The trial's best value of `metric` over its epochs: `best_val_acc` for val_acc."""
    return f"best_{metric}"


def is_blank(value: Any) -> bool:
    """A cell of a key the trial did not have (a conditional key): None, NaN (an empty CSV cell read back)
    or pandas' NA; never a list or dict value."""
    import pandas as pd  # loaded with the trials table already; the CLI starts without it

    return not isinstance(value, (list, tuple, dict)) and bool(pd.isna(value))
