"""Model parallelism for a model too large for one device: its layers split into stages, one per device.

Not used by the training loop or the command line; `bench/pipeline.py` measures it.
"""

from tuner.parallel.pipeline import PipelineResNet

__all__ = ["PipelineResNet"]
