"""tuner: hyperparameter search for PyTorch on Ray Tune.

`python -m tuner run|resume|report` is the command line; `tuner.analysis.load` opens an experiment in
pandas. Search spaces are Python modules (see `search_spaces/` and README).
"""
