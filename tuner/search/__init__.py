"""Stage 2, search: the plan of an experiment's search (`plan`): which configs run (Ray Tune's
searchers) and which trials stop early (Ray Tune's schedulers), with defaults derived from the space
and its epoch budget."""
