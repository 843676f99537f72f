"""visdial: Visual Dialogue questioner episodes (the ILQL paper's second task) as RLDS (TFDS), one config per reward.

The manual folder (``--manual_dir``) holds the published files: ``visdial_<version>_<split>.json``
(v0.5 by default, ``visdial_version`` of the config), ``data_img.h5`` (``images_<split>``, only checked: one
finite row per dialogue) and the reward caches ``<split>_rank_reward_cache1.json`` / ``<split>_reward_cache2.json``
(the one the config's mode needs). Splits are ``train`` / ``val`` / ``test``: a missing dialogue file, an
empty split or a NaN feature row is an error naming the file (see ``docs/guides/damaged_input.md``). Each dialogue is replayed through ``VisDialEnv`` in dataset mode (cached answers and rewards,
no server) by ``loggers.visdial_recipes.record_dialogues`` in parallel shards (Beam): observation 0 = the
caption, actions = the questions (``?`` appended), observations = the answers, rewards by the config's
mode (``env_stops`` / ``10_stop`` / ``agent_stops`` with every prefix). Image features are not
copied into episodes: ``dialogue_index`` is the row of ``images_<split>`` to join.
``RLDS_LANG_SMALL=N`` caps each split at N dialogues.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, Iterator

import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.rlds import rlds_base

from loggers import tfds_examples as common
from loggers.dataset_cards import manual_folder, read_card
from loggers.beam_runner import LocalBeamRunner
from loggers.visdial_recipes import record_dialogues
from rlds_lang.visdial.data import (FEATURES_FILE, SPLITS, Dialogue, FeatureStore, VisDialDataError, cache_file,
                                    dialogue_file, load_reward_cache, read_split)
from rlds_lang.visdial.rewards import RewardConfig
from rlds_lang.visdial.schema import VISDIAL_SCHEMA

#: this dataset's card (``CARD.toml``): sizes, source, licence and the files of the manual folder.
CARD = read_card(os.path.dirname(__file__))
_OVERALL = ("Visual Dialogue (VisDial) human dialogues about a hidden image, replayed as questioner episodes: the "
            "agent asks questions, an answerer replies, the reward follows a guesser's progress at finding the "
            "image (the ILQL paper's Visual Dialogue task, rewards from the published reward caches).")


@dataclasses.dataclass
class VisDialConfig(rlds_base.DatasetConfig):
    """An RLDS dataset config plus the reward settings.

    Attributes:
      reward: mode, reward kind, yes/no kind and penalty, scale and shift (``RewardConfig``).
      visdial_version: VisDial version of the dialogue files (``0.5``, the paper's, or ``1.0``).
      shard_size: dialogues per Beam work item.
    """

    reward: RewardConfig = RewardConfig()
    visdial_version: str = "0.5"
    shard_size: int = 500

    def reward_config(self) -> RewardConfig:
        """The ``RewardConfig`` of this dataset config."""
        return self.reward


_config = functools.partial(common.rlds_config, VisDialConfig, VISDIAL_SCHEMA, overall_description=_OVERALL)

CONFIGS = [
    _config("standard", "env_stops, no yes/no penalty (the paper's 'standard').", reward=RewardConfig("env_stops")),
    _config("yn", "env_stops, -2 for an answer that is exactly yes or no (the paper's 'y/n').",
            reward=RewardConfig(yn_kind="hard")),
    _config("soft_yn", "env_stops, -2 for an answer containing yes or no.", reward=RewardConfig(yn_kind="soft")),
    _config("conservative_yn", "env_stops, -2 for an answer with a conservative marker (the paper's "
            "'conservative y/n').", reward=RewardConfig(yn_kind="conservative")),
    _config("ten_stop", "10_stop: 10 rounds, reward = percentile-rank change per answer.",
            reward=RewardConfig("10_stop")),
    _config("ten_stop_distance", "10_stop: 10 rounds, reward = feature-distance decrease per answer.",
            reward=RewardConfig("10_stop", reward_kind="distance")),
    _config("yn_v1", "as yn, over VisDial v1.0 files (visdial_1.0_<split>.json) with the same feature file and "
            "reward-cache layout.", reward=RewardConfig(yn_kind="hard"), visdial_version="1.0"),
    _config("agent_stops", "agent_stops: every prefix of 0..9 rounds ending with <stop> (reward 0) and the whole "
            "dialogue; answers earn the percentile-rank change.", reward=RewardConfig("agent_stops")),
]


@dataclasses.dataclass(frozen=True)
class DialogueShard:
    """One Beam work item: dialogues of one split with their reward-cache rows (by dialogue index)."""

    run_name: str
    dialogues: tuple[Dialogue, ...]
    rows: dict[str, dict[int, tuple[float, ...]]]
    config: RewardConfig


def record_shard(shard: DialogueShard) -> Iterator[dict[str, Any]]:
    """The RLDS episodes of one shard, recorded through ``loggers.record``."""
    return record_dialogues(shard.dialogues, shard.rows, shard.config, shard.run_name)


def read_manual_split(manual_dir: str, split: str, config: VisDialConfig) -> tuple[list[Dialogue], list]:
    """``(dialogues, cache rows)`` of one split, with the feature rows and cache rows checked against them."""
    folder = epath.Path(manual_dir)
    dialogues = list(read_split(manual_dir, split, config.visdial_version))
    if not dialogues:
        raise VisDialDataError(f"{folder / dialogue_file(split, config.visdial_version)}: holds no dialogue")
    features = FeatureStore(str(folder / FEATURES_FILE), split, expected=len(dialogues))
    try:
        features.check_finite()
    finally:
        features.close()
    kind = config.reward_config().score_kind
    return dialogues, load_reward_cache(str(folder / cache_file(split, kind)), expected=len(dialogues))


class Builder(LocalBeamRunner, common.SmallBuilds, tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for visdial (see the module docstring)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = CONFIGS
    MANUAL_DOWNLOAD_INSTRUCTIONS = CARD.instructions()

    def _info(self) -> tfds.core.DatasetInfo:
        return common.rlds_info(self, _OVERALL)

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        config: VisDialConfig = self.builder_config
        folder = epath.Path(manual_folder(dl_manager, CARD, config.name))
        manual_dir = str(folder)
        missing = [dialogue_file(s, config.visdial_version) for s in SPLITS
                   if not (folder / dialogue_file(s, config.visdial_version)).exists()]
        if missing:
            raise VisDialDataError(f"{manual_dir}: missing {', '.join(missing)}; every split of {SPLITS} is built "
                                   "(a split left out would make a smaller dataset without a word)")
        kind = config.reward_config().score_kind
        limit = common.small_limit()
        splits = {}
        for split in SPLITS:
            dialogues, rows = read_manual_split(manual_dir, split, config)
            chosen = dialogues[:limit]
            shards = [DialogueShard(f"visdial-{split}-{k:05d}", tuple(chosen[start:start + config.shard_size]),
                                    {kind: {d.index: rows[d.index] for d in chosen[start:start + config.shard_size]}},
                                    config.reward_config())
                      for k, start in enumerate(range(0, len(chosen), config.shard_size))]
            splits[split] = self._generate_examples(shards)
        return splits

    def _generate_examples(self, shards):
        fn = functools.partial(common.examples_from_episodes, record_shard, schema=VISDIAL_SCHEMA)
        return common.beam_flat_map(shards, fn)
