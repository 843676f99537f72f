"""rlds-lang's TFDS datasets: importing this package registers every builder with TFDS by name.

In the source tree the package is ``builders`` (one folder per dataset, ``tfds build builders/<name>`` builds by
folder); the wheel installs the same folder as ``rlds_lang_datasets``, a name no other project's ``builders`` can
take, and ``rlds_lang_datasets.py`` at the repository's root gives the source tree that name too. Either way::

    import rlds_lang_datasets  # registers wordle_synthetic, wordle_tweets, visdial, reddit_comments, rlds_logs, ...
    import tensorflow_datasets as tfds

    tfds.builder("reddit_comments/toxicity")
    tfds.load("wordle_synthetic/expert", data_dir="~/tensorflow_datasets")

and from the shell: ``tfds build wordle_synthetic --imports rlds_lang_datasets``.

Each folder ships its dummy data, README, citations and tags as package data (``setup.cfg``).
"""

from .preferences import preferences_dataset_builder
from .reddit_comments import reddit_comments_dataset_builder
from .response_trees import response_trees_dataset_builder
from .rlds_logs import rlds_logs_dataset_builder
from .visdial import visdial_dataset_builder
from .wordle_synthetic import wordle_synthetic_dataset_builder
from .wordle_tweets import wordle_tweets_dataset_builder

#: the builder class of every dataset, by its TFDS name.
BUILDERS = {module.Builder.name: module.Builder for module in (
    preferences_dataset_builder, reddit_comments_dataset_builder, response_trees_dataset_builder,
    rlds_logs_dataset_builder, visdial_dataset_builder, wordle_synthetic_dataset_builder, wordle_tweets_dataset_builder)}

__all__ = ["BUILDERS"]
