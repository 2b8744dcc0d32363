"""A new experiment's place and record: the directory `tuner run` claims in storage (a taken name is
refused, a default one gets a suffix), and tuner.json as the run starts it, from the spec and the
search plan."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tuner.errors import TunerError
from tuner.search.plan import SearchPlan
from tuner.settings import RunOptions
from tuner.spec.param_space import flat_keys, is_constant
from tuner.spec.space import ExperimentSpec
from tuner.storage import filesystem
from tuner.storage.meta import ExperimentMeta, WarmStartRecord


@contextmanager
def claimed(storage_path: str, name: str | None, space: str) -> Iterator[str]:
    """The new experiment's path under `name`, or under a default name claimed now: a start that fails
    or is refused within releases it, so that it leaves nothing behind, as before the claim."""
    default = name is None
    # Whether a failed start may remove the storage path the claim made (a local one only: a store's
    # answer to a wrong key is experiment_path's to give).
    existed = not default or filesystem.is_remote(storage_path) or filesystem.exists(storage_path)
    path = experiment_path(storage_path, name or filesystem.default_experiment_name(space), claim=default)
    try:
        yield path
    except BaseException:
        if default:
            filesystem.release_default_name(path, storage_path if not existed else None)
        raise


def experiment_path(storage_path: str, name: str, claim: bool = False) -> str:
    """`claim`: the name is tuner's default, taken with a suffix where another run started in the same
    second has it (filesystem.claim_default_name), and its directory made now."""
    # An object store is probed first: a wrong key or endpoint is its answer, not a traceback of `exists`.
    remote = filesystem.is_remote(storage_path) and filesystem.store_problem(storage_path)
    if remote:
        raise TunerError(f"cannot write to --storage-path {storage_path}: {remote}")
    if claim and filesystem.write_problem(storage_path) is None:
        return filesystem.join(storage_path, filesystem.claim_default_name(storage_path, name))
    path = filesystem.join(storage_path, name)
    if filesystem.exists(path):
        raise TunerError(f"experiment {path} already exists; pick another --name (results are never overwritten)")
    if problem := filesystem.write_problem(storage_path):
        raise TunerError(f"cannot write to --storage-path {storage_path}: {problem}; pick another --storage-path")
    return path


def meta(spec: ExperimentSpec, plan: SearchPlan, options: RunOptions) -> ExperimentMeta:
    """Everything `resume` and the reports need that Ray's own tuner.pkl does not keep: the spec's
    settings as they run (`auto` resolved by the plan)."""
    return ExperimentMeta(
        space=spec.name,
        params=flat_keys(spec.param_space),
        objective=spec.objective,
        budget=plan.budget,
        resources=spec.resources,
        tuning=plan.tuning,
        source=str(Path(spec.source).resolve()) if spec.source else "",
        model=_describe(spec.model),
        dataset=_describe(spec.dataset),
        train_loop=_describe(spec.train_loop),
        data_dir=options.data_dir,
        seed=options.seed,
        started_at=time.time(),
        total_trials=plan.total_trials,
        fixed={key: value for key, value in spec.param_space.items() if is_constant(value)},
        warm_start=WarmStartRecord(plan.warm.source, len(plan.warm.trials)) if plan.warm is not None else None,
    )


def _describe(part: object) -> str | None:
    """How tuner.json names a space's part: a shipped name as it is, a callable by its name."""
    if part is None or isinstance(part, str):
        return part
    return f"{getattr(part, '__qualname__', type(part).__name__)} (own)"
