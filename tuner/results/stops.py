"""Why each trial stopped, in words, from the scheduler's decisions (decisions.jsonl, written as the run
went: tuner/search/decisions.py): the report's `stopped_because` column, and one trial's history of
decisions for `tuner report DIR --trial ID`."""

import pandas as pd

from tuner.search.decision import STOP, Decision
from tuner.search.decision_words import describe
from tuner.storage.meta import ExperimentMeta
from tuner.trial_status import TrialStatus

# The columns of one trial's history of decisions, as `tuner report --trial` prints them.
HISTORY_COLUMNS = ["epoch", "scheduler", "decision", "value", "cutoff", "because"]


def stop_rows(decisions: list[Decision]) -> dict[str, Decision]:
    """Each trial's last stop decision (a resumed run's scheduler may judge a trial again)."""
    return {decided.trial_id: decided for decided in decisions if decided.decision == STOP}


def stopped_because(trial_id: str, status: str, stops: dict[str, Decision], meta: ExperimentMeta) -> str:
    """Why a trial stopped before its last epoch: its scheduler's decision, or what ended the whole run
    (--stop, the time budget); empty for a trial that was not stopped early."""
    if status != TrialStatus.STOPPED_EARLY:
        return ""
    if trial_id in stops:
        return describe(stops[trial_id])
    return meta.stopped_by or ""


def trial_history(decisions: list[Decision], trial_id: str) -> pd.DataFrame:
    """One trial's decisions in the order made, as `tuner report --trial` prints them."""
    rows = [
        {
            "epoch": decided.epoch,
            "scheduler": decided.scheduler,
            "decision": decided.decision,
            "value": decided.value,
            "cutoff": decided.cutoff,
            "because": describe(decided),
        }
        for decided in decisions
        if decided.trial_id == trial_id
    ]
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def frame(decisions: list[Decision]) -> pd.DataFrame:
    """Every decision as a table (the early-stopping plot's cutoff marks)."""
    columns = ["trial_id", "scheduler", "epoch", "decision", "metric", "mode", "value", "cutoff", "rung", "bracket"]
    return pd.DataFrame([{c: getattr(decided, c) for c in columns} for decided in decisions], columns=columns)
