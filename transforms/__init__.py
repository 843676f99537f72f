"""Episode-aware ``tf.data`` pipelines over rlds-lang datasets, and the PyTorch bridge.

No ``import rlds`` here (see ARCHITECTURE.md, "Known traps"); TensorFlow is imported by the modules.
"""

from transforms.loading import load, to_turns

__all__ = ["load", "to_turns"]
