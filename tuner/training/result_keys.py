"""The keys a trial's report carries besides the loop's own metrics.

`ctx.report` adds them to every row; the smoke step leaves them out when it lists what a loop
reports, and the report leaves them out of the metric columns. One list, so the three agree.
"""

from tuner.training.config_reads import RESULT_KEY

BOOKKEEPING = (
    "epoch",
    "world_size",
    "precision",
    "reported_at",
    RESULT_KEY,
    "restored_from",
    "restored_epoch",
    "samples_per_s",
    "diverged",
    "device",
    "gpu_peak_gib",
)

# What the model costs, measured by tuner for any model (tuner/training/model_costs.py): unlike the
# bookkeeping above, metrics a search may rank by or constrain, so the report has them as metric columns.
COSTS = ("params", "latency_ms")
