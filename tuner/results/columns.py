"""Column names of the trials table that depend on the experiment's metric: built here only, so that
the report that writes them and every reader (plots, importance, the CLI, notebooks) agree."""


def best_column(metric: str) -> str:
    """The trial's best value of `metric` over its epochs: `best_val_acc` for val_acc."""
    return f"best_{metric}"
