"""Stage 1, describe: a space module loaded into an `ExperimentSpec` (the whole experiment's spec),
checked when it is built, with the command line's overrides (`--set`, any setting) applied. Imports
neither torch nor Ray, so a mistake is named before either loads."""
