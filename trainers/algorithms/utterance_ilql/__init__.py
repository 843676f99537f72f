"""Utterance-level ILQL (``utterance_ilql``): its config (``config``), utterance positions and targets (``losses``),
model (``model``) and the agent that picks the best of N sampled utterances (``policy``)."""
