"""ψ-learning (``psi``): its config (``config``), its soft target and Huber loss (``losses``) and model (``model``)."""
