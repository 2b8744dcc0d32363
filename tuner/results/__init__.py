"""Stage 6, report: an experiment's trials and history as pandas frames read from Ray's own files
(`report`), the notebook view (`analysis`), plots (`visualization/`), hyperparameter importance, the
HTML page, the experiments under a storage path (`experiments`), and the statuses reports use."""
