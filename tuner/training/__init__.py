"""Stage 3, train one trial: the loop (tuner's own, or the space's `train_loop`), the `ctx` it gets,
the default loss, metrics and optimizer, and how a trial spreads over devices (`parallel/`).

Everything here imports without Ray: the same code runs in a Tune trial's process, on each Ray Train
worker, and in the smoke step in the driver.
"""
