"""Ray at the edge: every place where tuner works around Ray 2.60's behaviour, as named functions, so that
a Ray upgrade is checked here and nowhere else. Each function names the Ray behaviour it works around
and how to tell when it can go; environment changes are undone when the block they cover ends.

env       environment variables Ray reads: its reporter engine, its state snapshot period, Ray Train's
          poll interval, the log level of a local instance's processes.
logs      Ray's log lines that tuner's console replaces: the token notice, Train's per-report line,
          the experiment analysis warning for trials without results.
errors    Ray's own error messages that tuner turns into one-line errors.
private   imports of Ray's private modules, each with the public API that would replace it.
trial_results
          whether a trial reported: Ray's `last_result` is never empty.
schedulers
          the private state of Ray's schedulers that tuner's recording schedulers read and override.

Classes Ray pickles into an experiment's saved state by module path (Ray Tune's callbacks, the trial
namer, the stop condition, local storage's filesystem, the schedulers and their decision file) stay at
the paths in `PICKLED_BY_PATH`: `tuner resume` and `tuner report` of a saved experiment import them.
Moving one breaks every experiment saved before the move; a test reads a real run's saved state and
checks it names no other tuner module (tests/e2e/test_end_to_end.py).
"""

PICKLED_BY_PATH = {
    "tuner.storage.trial_names": ("TrialNamer",),
    "tuner.storage.trial_logs": ("KeepResultRows",),
    "tuner.storage.ended_trials": ("EndedTrialsLeaveTheSync",),
    "tuner.storage.whole_files": ("WholeFileHandler",),  # the storage filesystem of a local experiment
    "tuner.storage.checkpoint_retention": ("RetireCheckpoints",),
    "tuner.execution.console": ("LiveProgress",),
    "tuner.execution.tensorboard": ("TrialsForTensorBoard",),
    "tuner.execution.trial_phases": ("TrialPhases",),
    "tuner.execution.stopper": ("MetricThreshold",),
    "tuner.execution.live_study": ("LiveStudy", "AlsoToStudy"),  # the second inside a recording scheduler
    "tuner.execution.ray_metrics": ("RayMetrics",),
    "tuner.search.decision": ("Decision",),  # a running trial's STOP, inside LiveStudy
    "tuner.storage.decisions": ("DecisionFile",),
    "tuner.search.decisions": ("RecordingASHA", "RecordingMedian", "RecordingBOHB", "RecordingPBT"),
    "tuner.search.pareto_asha": ("ParetoASHA",),
    "tuner.search.optuna_objectives": ("OptunaObjectives",),
    "tuner.settings.objectives": ("Constraint",),  # inside OptunaObjectives
    "tuner.search.optuna_nsga2": ("PicklableNSGAII",),  # inside OptunaSearch, as its sampler
    # A conditional space's searchers (tuner/search/conditional.py: ConfigList and DefineByRun, and
    # one class in each of the other two), and the conditions they carry.
    "tuner.search.conditional": ("ConfigList", "DefineByRun"),
    "tuner.spec.conditions": ("Conditions",),
    "tuner.search.hyperopt_branches": ("BranchedHyperOpt",),
    "tuner.search.bohb_conditions": ("ConditionalBOHB",),
}
