"""CHAI (``chai``): its config (``config``), its target (``losses``) and model (``model``)."""
