"""rlds-lang core: the episode schema, dm_env language environments (one folder per task), policies and tokenizers.

Nothing here imports the layers above it (``loggers``, ``transforms``, ``builders``, ``trainers``, ``creator_web``).
"""

#: the project's version, in this one place (``setup.cfg`` reads it; ``rlds-lang --version`` prints it).
__version__ = "0.3.0"
