"""The library every trainer shares and that names no algorithm: configs (``config``), causal LMs and value
heads (``model``), the loss contract (``objective``), the training loop (``loop``), metric logs and throughput
(``logs``), checkpoints and exact resumption (``checkpoint``), curves (``plots``), language-model policies that
play (``policy``) and TFDS builds (``build``).
"""
