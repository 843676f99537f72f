"""response_trees: Wordle response trees (every root-to-leaf path an RLDS episode), recorded through loggers.trees.

Configs (``TreesConfig``):

* ``random_mixture`` -- ``RandomMixturePolicy(prob_smart=0.5)`` trees from 500 seeded start states: 3 guesses
  sampled at each of the first 2 decision points, every branch played to the end; ``interval`` pairs.
* ``manual_dir`` -- logs written by ``loggers.trees.record_trees`` (e.g. the ``trees`` folders of
  ``rlds-lang malt`` rounds), placed in the manual folder.

Generation grows each shard's trees with ``loggers.trees.record_and_read_trees`` (``loggers.record`` into a
temporary folder, read back, checked to rebuild the grown trees), checks every episode (``check_episode``)
and yields it keyed by ``episode_id``; ``_generate_examples`` is a Beam ``PTransform``. ``RLDS_LANG_SMALL=N``
builds N trees.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Any

import tensorflow_datasets as tfds
from tensorflow_datasets.rlds import rlds_base

from loggers import tfds_examples as common
from loggers.dataset_cards import manual_folder, read_card
from loggers.beam_runner import LocalBeamRunner
from loggers.reader import log_dirs
from loggers.trees import TREE_EPISODE_METADATA, TreeSpec, record_and_read_trees
from rlds_lang.trees import TREE_STEP_FIELDS
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import make_policy
from rlds_lang.wordle.schema import WORDLE_SCHEMA

#: this dataset's card (``CARD.toml``): sizes, source, licence, the manual folder of ``manual_dir``.
CARD = read_card(os.path.dirname(__file__))
SCHEMA = dataclasses.replace(WORDLE_SCHEMA, step_metadata=TREE_STEP_FIELDS,
                             episode_metadata={**WORDLE_SCHEMA.episode_metadata, **TREE_EPISODE_METADATA})
_OVERALL = ("Wordle response trees: at each of the first decision points a policy samples several guesses and every "
            "branch is played to the end; each root-to-leaf path is an RLDS episode whose steps carry node ids, "
            "expected rewards and preference-pair flags.")


@dataclasses.dataclass
class TreesConfig(rlds_base.DatasetConfig):
    """An RLDS dataset config plus what grows the trees.

    Attributes:
      sampler: ``make_policy`` name of the sampling policy.
      sampler_params: its keyword arguments as JSON.
      trees: start states (trees); ``RLDS_LANG_SMALL`` overrides.
      spec: branching, depths, reward range and pair selector.
      seed: tree ``t`` grows from the start state seeded ``seed + t``.
      from_manual_dir: read logs from ``dl_manager.manual_dir`` instead of growing trees.
      shard_size: trees per Beam work item.
    """

    sampler: str = "random_mixture"
    sampler_params: str = "{}"
    trees: int = 0
    spec: TreeSpec = TreeSpec()
    seed: int = 0
    from_manual_dir: bool = False
    shard_size: int = 50


def _config(name: str, description: str, **kwargs: Any) -> TreesConfig:
    return common.rlds_config(TreesConfig, SCHEMA, name, description, overall_description=_OVERALL, **kwargs)


_WORDLE_SPEC = TreeSpec(branching=3, branch_depth=2, reward_range=(-6.0, 0.0), pair_method="interval")

CONFIGS = [
    _config("random_mixture", "RandomMixturePolicy(prob_smart=0.5) trees: 3 guesses at each of the first 2 turns, "
            "then played to the end; interval pairs.", sampler="random_mixture",
            sampler_params='{"prob_smart": 0.5}', trees=500, spec=_WORDLE_SPEC),
    _config("manual_dir", "Response-tree logs written by loggers.trees.record_trees, read from the manual folder.",
            from_manual_dir=True),
]


def _shard_episodes(item: tuple[TreesConfig, int, int]):
    """The episodes of trees ``[start, stop)`` of a config (grown, recorded, read back)."""
    config, start, stop = item
    policy = make_policy(config.sampler, **json.loads(config.sampler_params))
    return record_and_read_trees(WordleEnv(seed=config.seed), policy, config.spec,
                                 [config.seed + t for t in range(start, stop)], f"{config.name}-{start:06d}")


class Builder(LocalBeamRunner, common.SmallBuilds, tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for response_trees (see the module docstring)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = CONFIGS
    MANUAL_DOWNLOAD_INSTRUCTIONS = CARD.instructions()

    def _info(self) -> tfds.core.DatasetInfo:
        return common.rlds_info(self, _OVERALL)

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        config: TreesConfig = self.builder_config
        if config.from_manual_dir:
            folder = manual_folder(dl_manager, CARD, config.name)
            common.check_logs_fit(folder, SCHEMA, f"response_trees/{config.name}",
                                  alternatives={"wordle_synthetic --config manual_dir": WORDLE_SCHEMA})
            return {"train": self._generate_examples(log_dirs(folder))}
        n = common.small_limit(config.trees)
        shards = [(config, s, min(s + config.shard_size, n)) for s in range(0, n, config.shard_size)]
        return {"train": self._generate_examples(shards)}

    def _generate_examples(self, items):
        if self.builder_config.from_manual_dir:
            fn = functools.partial(common.examples_from_log_dir, schema=SCHEMA)
        else:
            fn = functools.partial(common.examples_from_episodes, _shard_episodes, schema=SCHEMA)
        return common.beam_flat_map(items, fn)
