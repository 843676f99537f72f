"""Decision Transformer (``dt``): its config (``config``), the return prefix (``losses``) and model (``model``)."""
