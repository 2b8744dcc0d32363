"""Stage 4, run on Ray: an experiment handed to Ray Tune (`experiment.run`, `experiment.resume`), each
trial in-process or on Ray Train workers (`trainable`, `checkpoint_bridge`), on a local instance or an
existing cluster (`cluster`, `submission`), with the live console and MLflow as Tune callbacks."""
