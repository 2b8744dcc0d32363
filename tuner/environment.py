"""The environment as the user gave it, before Ray and torch add variables of their own: what the trials
of a kept Ray instance must see as those of a run's own instance would (tuner/execution/kept_ray.py).
`import tuner` imports this module first, so the copy is taken before anything else of tuner runs."""

import os

AT_IMPORT = dict(os.environ)
