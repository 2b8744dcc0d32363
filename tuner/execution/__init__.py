"""Stage 5, run on Ray: the Tuner built from the spec and the search plan, fitted or restored
(`tune_run`), each trial in-process or on Ray Train workers (`trainable`, `checkpoint_bridge`), the
driver's work while Ray starts (`preparation`: data and the smoke step), on a local instance or an
existing cluster (`cluster`, `submission`), with the live console, the stop condition and MLflow as
Tune's callbacks. The order of these steps is the driver's (tuner/driver.py)."""
