"""PyTorch trainers and the ``rlds-lang`` command line (the algorithms arrive with their issue)."""
