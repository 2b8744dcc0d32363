"""A scheduler's decision as one sentence: what `tuner report`'s `stopped_because` column, `tuner report
--trial` and the live study (tuner/execution/live_study.py) say of it. In `search`, beside the decision
itself, so the driver's layer and the reports' both word it the same way."""

import math
from collections.abc import Callable
from typing import Any

from tuner.search.decision import EXPLOIT, STOP, Decision


def _num(value: Any) -> str:
    return "?" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def _short(value: Any) -> str:
    """A config value in a sentence: floats to 4 significant digits (PBT's perturbed lr has 17)."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _worse(decided: Decision) -> str:
    """The comparison that stops a trial: its value below a maximised metric's cutoff, above a minimised."""
    return ">" if decided.mode == "min" else "<"


def _better(decided: Decision) -> str:
    return "<=" if decided.mode == "min" else ">="


def describe(decided: Decision) -> str:
    """One decision as a sentence: `asha: val_acc 0.81 < cutoff 0.88 at epoch 3 (rung 3)`."""
    scheduler, metric, epoch, value = decided.scheduler, decided.metric, decided.epoch, _num(decided.value)
    if decided.decision == EXPLOIT:
        changes = "; ".join(
            f"{key} {_short(old)} -> {_short(new)}" + (f" ({how})" if how else "")
            for key, (old, new, how) in (decided.changes or {}).items()
        )
        return (
            f"{scheduler}: {metric} {value} in the bottom quantile (up to {_num(decided.cutoff)}) at epoch {epoch}: "
            f"copied trial {decided.clone_of} ({metric} {_num(decided.clone_value)} at epoch "
            f"{decided.clone_epoch})" + (f"; {changes}" if changes else "")
        )
    relation = _worse(decided) if decided.decision == STOP else _better(decided)
    if (sentence := _OWN_SENTENCES.get(scheduler)) is not None:
        return sentence(decided, relation)
    if decided.pareto:  # several objectives: compared by Pareto front (tuner/search/pareto_asha.py)
        share = "at least" if decided.decision == STOP else "fewer than"
        return (
            f"{scheduler}: {decided.ahead} of {decided.compared_with} trials at epoch {epoch} (rung "
            f"{_num(decided.rung)}) lie on Pareto fronts of {', '.join(decided.pareto)} ahead of it, "
            f"{share} 1/{_num(decided.reduction_factor)} of them"
        )
    where = f"rung {_num(decided.rung)}"
    if decided.bracket is not None:
        where += f", bracket {decided.bracket}"
    if decided.cutoff is None:
        return f"{scheduler}: {metric} {value} at epoch {epoch} ({where}), the first there: nothing to compare"
    compared = _CUTOFF_WORDS.get(scheduler, "cutoff {}").format(_num(decided.cutoff))
    return f"{scheduler}: {metric} {value} {relation} {compared} at epoch {epoch} ({where})"


def _median(decided: Decision, relation: str) -> str:
    return (
        f"median: best {decided.metric} {_num(decided.value)} {relation} median {_num(decided.cutoff)} "
        f"of {decided.compared_with} other trials' running means at epoch {decided.epoch}"
    )


# By the name a recording scheduler writes in its decisions (tuner/search/decisions.py): the median
# stopping rule's decisions are a sentence of their own (no rungs); BOHB's synchronous halving compares
# with the worst value kept at the rung, where ASHA and HyperBand compare with a cutoff.
_OWN_SENTENCES: dict[str, Callable[[Decision, str], str]] = {"median": _median}
_CUTOFF_WORDS = {"bohb": "{}, the worst kept,"}
