"""Implicit language Q-learning (``ilql``), its Monte-Carlo-returns variant (``mc``) and their losses (``losses``)."""
