"""One module or folder per algorithm: ``bc`` (BC and %BC), ``ilql`` (ILQL and MC returns), ``dpo``, ``ppo``,
``reward`` (reward models from preferences), ``online_pbc`` and ``malt`` (expert iteration and MALT), plus the
``registry`` that maps names to (config, model), trains by name and loads checkpoints.
"""
