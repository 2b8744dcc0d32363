"""An earlier experiment's trials as a new search starts from them (`tuner run --warm-start DIR`,
`tuner extend DIR`): read through the report's own reader, each scored trial's config and its best
value of each objective (by its mode), checked against the objectives of the search that takes them."""

from typing import Any

from tuner.errors import TunerError
from tuner.results import report
from tuner.results.columns import best_column
from tuner.search.warm_start import Earlier, Evaluated
from tuner.storage.meta import ExperimentMeta


def read(experiment_path: str, objectives: list[tuple[str, str]]) -> tuple[ExperimentMeta, Earlier]:
    """The experiment's meta and scored trials; one line when it is missing, unreadable, or ranks by
    other objectives than `objectives` ((metric, mode) pairs, the primary first)."""
    meta = report.load_meta(experiment_path)  # one line when missing or no tuner experiment
    ranked_by = list(meta.objective.objectives)
    if ranked_by != list(objectives):
        said = ", ".join(f"{metric} ({mode})" for metric, mode in ranked_by)
        wanted = ", ".join(f"{metric} ({mode})" for metric, mode in objectives)
        raise TunerError(
            f"--warm-start {experiment_path} ranks its trials by {said}, this search by {wanted}; warm-start "
            "from an experiment with the same metric and mode (is it an experiment of another space?)"
        )
    try:
        trials, _ = report.read_tables(experiment_path)
    except (OSError, ValueError, KeyError) as error:
        raise TunerError(
            f"cannot read the trials of {experiment_path}: {error}; is it a finished tuner experiment?"
        ) from None
    scored = report.scored(trials, meta.objective.metric)
    if scored.empty:
        raise TunerError(f"--warm-start {experiment_path} has no trial with a {meta.objective.metric} to start from")
    evaluated = tuple(
        Evaluated(
            config={key: row[key] for key in meta.params if key in row},
            scores=tuple(float(row[best_column(metric)]) for metric, _ in objectives),
        )
        for row in _rows(scored)
    )
    return meta, Earlier(experiment_path, evaluated)


def _rows(frame: Any) -> list[dict[str, Any]]:
    return [dict(row) for _, row in frame.iterrows()]
