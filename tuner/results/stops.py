"""Why each trial stopped, in words, from the scheduler's decisions (decisions.jsonl, written as the run
went: tuner/search/decisions.py): the report's `stopped_because` column, and one trial's history of
decisions for `tuner report DIR --trial ID`."""

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from tuner.storage.meta import ExperimentMeta
from tuner.trial_status import TrialStatus

STOP, EXPLOIT = "stop", "exploit"
# The columns of one trial's history of decisions, as `tuner report --trial` prints them.
HISTORY_COLUMNS = ["epoch", "scheduler", "decision", "value", "cutoff", "because"]


def _num(value: Any) -> str:
    return "?" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def _short(value: Any) -> str:
    """A config value in a sentence: floats to 4 significant digits (PBT's perturbed lr has 17)."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _worse(row: dict[str, Any]) -> str:
    """The comparison that stops a trial: its value below a maximised metric's cutoff, above a minimised."""
    return ">" if row.get("mode") == "min" else "<"


def _better(row: dict[str, Any]) -> str:
    return "<=" if row.get("mode") == "min" else ">="


def describe(row: dict[str, Any]) -> str:
    """One decision as a sentence: `asha: val_acc 0.81 < cutoff 0.88 at epoch 3 (rung 3)`."""
    scheduler, metric, decision = row.get("scheduler", "?"), row.get("metric", "?"), row.get("decision")
    value, cutoff, epoch = _num(row.get("value")), row.get("cutoff"), row.get("epoch")
    if decision == EXPLOIT:
        changes = "; ".join(
            f"{key} {_short(old)} -> {_short(new)}" + (f" ({how})" if how else "")
            for key, (old, new, how) in (row.get("changes") or {}).items()
        )
        return (
            f"{scheduler}: {metric} {value} in the bottom quantile (up to {_num(cutoff)}) at epoch {epoch}: "
            f"copied trial {row.get('clone_of')} ({metric} {_num(row.get('clone_value'))} at epoch "
            f"{row.get('clone_epoch')})" + (f"; {changes}" if changes else "")
        )
    relation = _worse(row) if decision == STOP else _better(row)
    if (sentence := _OWN_SENTENCES.get(scheduler)) is not None:
        return sentence(row, relation)
    if row.get("pareto"):  # several objectives: compared by Pareto front (tuner/search/pareto_asha.py)
        share = "at least" if decision == STOP else "fewer than"
        return (
            f"{scheduler}: {row.get('ahead')} of {row.get('compared_with')} trials at epoch {epoch} (rung "
            f"{_num(row.get('rung'))}) lie on Pareto fronts of {', '.join(row['pareto'])} ahead of it, "
            f"{share} 1/{_num(row.get('reduction_factor'))} of them"
        )
    where = f"rung {_num(row.get('rung'))}"
    if row.get("bracket") is not None:
        where += f", bracket {row['bracket']}"
    if cutoff is None:
        return f"{scheduler}: {metric} {value} at epoch {epoch} ({where}), the first there: nothing to compare"
    compared = _CUTOFF_WORDS.get(scheduler, "cutoff {}").format(_num(cutoff))
    return f"{scheduler}: {metric} {value} {relation} {compared} at epoch {epoch} ({where})"


def _median(row: dict[str, Any], relation: str) -> str:
    return (
        f"median: best {row.get('metric', '?')} {_num(row.get('value'))} {relation} median {_num(row.get('cutoff'))} "
        f"of {row.get('compared_with')} other trials' running means at epoch {row.get('epoch')}"
    )


# By the name a recording scheduler writes in its rows (tuner/search/decisions.py): the median stopping
# rule's decisions are a sentence of their own (no rungs); BOHB's synchronous halving compares with the
# worst value kept at the rung, where ASHA and HyperBand compare with a cutoff.
_OWN_SENTENCES: dict[str, Callable[[dict[str, Any], str], str]] = {"median": _median}
_CUTOFF_WORDS = {"bohb": "{}, the worst kept,"}


def stop_rows(decisions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each trial's last stop decision (a resumed run's scheduler may judge a trial again)."""
    return {row["trial_id"]: row for row in decisions if row.get("decision") == STOP and "trial_id" in row}


def stopped_because(trial_id: str, status: str, stops: dict[str, dict[str, Any]], meta: ExperimentMeta) -> str:
    """Why a trial stopped before its last epoch: its scheduler's decision, or what ended the whole run
    (--stop, the time budget); empty for a trial that was not stopped early."""
    if status != TrialStatus.STOPPED_EARLY:
        return ""
    if trial_id in stops:
        return describe(stops[trial_id])
    return meta.stopped_by or ""


def trial_history(decisions: list[dict[str, Any]], trial_id: str) -> pd.DataFrame:
    """One trial's decisions in the order made, as `tuner report --trial` prints them."""
    rows = [
        {
            "epoch": row.get("epoch"),
            "scheduler": row.get("scheduler"),
            "decision": row.get("decision"),
            "value": row.get("value"),
            "cutoff": row.get("cutoff"),
            "because": describe(row),
        }
        for row in decisions
        if row.get("trial_id") == trial_id
    ]
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def frame(decisions: list[dict[str, Any]]) -> pd.DataFrame:
    """Every decision as a table (the early-stopping plot's cutoff marks)."""
    columns = ["trial_id", "scheduler", "epoch", "decision", "metric", "mode", "value", "cutoff", "rung", "bracket"]
    return pd.DataFrame([{c: row.get(c) for c in columns} for row in decisions], columns=columns)
