"""Stage 2, search: which configs run (Ray Tune's searchers) and which trials stop early (Ray Tune's
schedulers), with defaults derived from the space and its epoch budget."""
