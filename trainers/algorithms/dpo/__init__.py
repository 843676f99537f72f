"""Direct preference optimisation on the pairs of response trees: the loss and model (``dpo``), the pairs
(``data``) and the training run (``trainer``).
"""
