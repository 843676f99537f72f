"""rlds-lang core: the episode schema, dm_env language environments (one folder per task), policies and tokenizers.

Nothing here imports the layers above it (``loggers``, ``transforms``, ``builders``, ``trainers``, ``creator_web``).
"""
