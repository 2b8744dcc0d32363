"""Stage 4, keep results safe: experiment directories on any pyarrow filesystem (`filesystem`), tuner's
own record of each experiment (`meta`: tuner.json), and what works around Ray 2.60's storage behaviour.

Each workaround names the Ray behaviour it compensates for; when a Ray upgrade changes that behaviour,
its test in tests/storage/ (or the fault tests in tests/e2e/) is the one to run without it:

checkpoint_retention  Ray's num_to_keep deletes a checkpoint as soon as a newer one registers, before the
                      experiment state in storage stops pointing at it: a driver killed in between
                      leaves a state `tuner resume` cannot restore. Unneeded once Ray retires checkpoints
                      only after syncing a state that no longer names them.
trial_logs            Tune's loggers copy the storage copy of result.json back over the staging one when
                      a trial restarts from a checkpoint, losing rows written since the last sync.
                      Unneeded once a restarted trial keeps every row (the kill-and-resume tests).
ended_trials          Ray copies every trial's staged files to storage again at every snapshot, the ended
                      ones' too, so a snapshot's copy grows with the experiment. Unneeded once Ray's sync
                      copies only what changed (bench/scale.py at 3,000 trials shows the difference).
saved_state           Ray rewrites its state files in place; a full disk leaves one cut short, and Ray's
                      resume then starts afresh with an empty search space. Unneeded once Ray writes its
                      state atomically or refuses a torn file. With whole_files only a state file's
                      first upload, or one tuner wrote before whole_files, can be cut short.
whole_files           Ray's driver rewrites each trial's result.json and progress.csv in storage in place,
                      several at once; on a full disk a file can lose rows it had. Local storage is given
                      to Ray as a filesystem that replaces a file whole. Unneeded once Ray uploads to a
                      temporary name and renames.
trial_files           A report read from trial directories when Ray's experiment state does not parse
                      (the same cut-short rewrite). Unneeded with saved_state.
trial_names           Not a workaround: the `<space>_<trial id>` names, both ways.
"""
