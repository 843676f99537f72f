"""Token-level conservative Q-learning (``cql``): its config (``config``), its TD target (``losses``) and model (``model``)."""
