"""reddit_comments: the ILQL paper's Reddit reply task as RLDS episodes (TFDS), one config per reward kind.

The manual folder (``--manual_dir``) holds either the published layout (``comments_positive.csv``,
``comments_negative.csv``, ``train_idxs.json``, ``eval_idxs.json``, ``test_idxs.json``) or Reddit comment
dumps (files ending ``.zst``, ``.ndjson``, ``.jsonl`` or ``.json``); ``rlds_lang.reddit.data.read_folder``
streams either. ``_split_generators`` reads the folder once, computes every comment's raw reward in one
batch (cached on disk, ``rlds_lang.reddit.rewards``) and ``_generate_examples`` records shards of
comments in parallel (Beam) through ``loggers.reddit_recipes.record_comments``: one one-step episode per
comment, its parent as the observation (``""`` in the ``*_no_parent`` configs), the comment as the
action, ``raw * reward_scale + reward_shift`` as the reward.

Splits: ``train``/``eval``/``test`` from the index files, or for dumps from a stable hash of the comment
id (``hash_split``; 5% eval, 5% test). Every rejected record is counted by reason; the counts are logged
and stored in ``metadata.json`` (``builder.info.metadata["rejections"]``, beside ``accepted_comments``).
Damaged files (a truncated ``.zst``, a published CSV whose header is not the published one, a 0-byte file,
bytes that are not UTF-8) stop the build with an error naming the file; so does a folder in which no record
became a comment (see ``docs/guides/damaged_input.md``).

``upvotes_model`` configs need a classifier trained by ``rlds-lang reddit upvotes``: the builder uses the
folder ``upvote_model/`` inside the manual folder, else the folder named by the environment variable
``RLDS_LANG_REDDIT_UPVOTE_MODEL`` (``rlds_lang.reddit.upvote_model.find_upvote_model``), and fails with a
message saying so when neither exists.
``RLDS_LANG_SMALL=N`` caps each split at N comments.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
from typing import Any, Iterator

import tensorflow_datasets as tfds
from absl import logging
from etils import epath
from tensorflow_datasets.rlds import rlds_base

from loggers import tfds_examples as common
from loggers.dataset_cards import manual_folder, read_card
from loggers.beam_runner import LocalBeamRunner
from loggers.reddit_recipes import record_comments
from rlds_lang.reddit.data import MAX_DUMP_LINE_BYTES, RedditComment, RedditDataError, read_folder, rejection_report
from rlds_lang.reddit.rewards import DEFAULT_SCALE, REWARD_KINDS, PrecomputedReward, make_reward
from rlds_lang.reddit.schema import REDDIT_SCHEMA
from rlds_lang.reddit.upvote_model import find_upvote_model

#: this dataset's card (``CARD.toml``): sizes, source, licence and the files of the manual folder.
CARD = read_card(os.path.dirname(__file__))
_OVERALL = ("Reddit comments with their parent comment, replayed through a one-step reply environment into "
            "RLDS episodes, rewarded for not being toxic or for being upvoted (the ILQL paper's Reddit task).")


@dataclasses.dataclass
class RedditConfig(rlds_base.DatasetConfig):
    """An RLDS dataset config plus the reward and how comments are split.

    Attributes:
      reward_kind: one of ``REWARD_KINDS``.
      include_parent: show the parent comment as the observation (else ``""``).
      reward_scale, reward_shift: the reward's affine map (published defaults: ``DEFAULT_SCALE``).
      seed: seed of the noised toxicity coin and of ties in real upvotes.
      eval_fraction, test_fraction, split_salt: hash splits of dumps (``hash_split``).
      shard_size: comments per Beam work item.
      max_line_bytes: the longest dump line read (``rlds_lang.reddit.data.MAX_DUMP_LINE_BYTES``); a longer one
        stops the build naming the file and the line.
    """

    reward_kind: str = "toxicity"
    include_parent: bool = True
    reward_scale: float = -5.0
    reward_shift: float = 0.0
    seed: int = 0
    eval_fraction: float = 0.05
    test_fraction: float = 0.05
    split_salt: str = "reddit"
    shard_size: int = 1000
    max_line_bytes: int = MAX_DUMP_LINE_BYTES


_config = functools.partial(common.rlds_config, RedditConfig, REDDIT_SCHEMA, overall_description=_OVERALL)

_DESCRIPTIONS = {
    "toxicity": "reward = toxicity label 0/1/2 (alt-profanity-check) x -5",
    "toxicity_noised": "reward = toxicity label with 1 replaced by 0 or 2 (seeded coin) x -5",
    "upvotes_real": "reward = +1 if the comment's real score > 0 else -1",
    "upvotes_model": "reward = 1 if the upvote classifier predicts score > 0 else 0",
}

CONFIGS = [
    _config(f"{kind}{suffix}", f"{_DESCRIPTIONS[kind]}; {'no parent (empty observation)' if suffix else 'parent shown'}.",
            reward_kind=kind, include_parent=not suffix, reward_scale=DEFAULT_SCALE[kind][0],
            reward_shift=DEFAULT_SCALE[kind][1])
    for kind in REWARD_KINDS for suffix in ("", "_no_parent")
]


@dataclasses.dataclass(frozen=True)
class CommentShard:
    """One Beam work item: comments of one split and their precomputed raw rewards."""

    run_name: str
    comments: tuple[RedditComment, ...]
    reward: PrecomputedReward
    reward_scale: float
    reward_shift: float
    include_parent: bool


def record_shard(shard: CommentShard) -> Iterator[dict[str, Any]]:
    """The RLDS episodes of one shard, recorded through ``loggers.record``."""
    return record_comments(shard.comments, shard.reward, shard.run_name, reward_scale=shard.reward_scale,
                           reward_shift=shard.reward_shift, include_parent=shard.include_parent)


def read_manual_dir(config: RedditConfig, manual_dir: epath.Path) -> tuple[list[RedditComment], collections.Counter]:
    """``(comments, rejections)`` of the manual folder in either layout."""
    rejections: collections.Counter = collections.Counter()
    comments = list(read_folder(str(manual_dir), rejections, config.eval_fraction, config.test_fraction,
                                config.split_salt, config.max_line_bytes))
    return comments, rejections


def raw_rewards(config: RedditConfig, comments: list[RedditComment], manual_dir: epath.Path) -> PrecomputedReward:
    """Every comment's raw reward of ``config.reward_kind``, computed in one (disk-cached) batch."""
    model_dir = find_upvote_model(str(manual_dir)) if config.reward_kind == "upvotes_model" else None
    reward = make_reward(config.reward_kind, comments=comments, model_dir=model_dir, seed=config.seed)
    texts = list(dict.fromkeys(c.text for c in comments))
    return PrecomputedReward(reward.kind, reward.fingerprint(), dict(zip(texts, reward.rewards(texts))))


class Builder(LocalBeamRunner, common.SmallBuilds, tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for reddit_comments (see the module docstring)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = CONFIGS
    MANUAL_DOWNLOAD_INSTRUCTIONS = CARD.instructions()

    def _info(self) -> tfds.core.DatasetInfo:
        return common.rlds_info(self, _OVERALL, ds_metadata={"rejections": {}, "accepted_comments": 0})

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        config: RedditConfig = self.builder_config
        manual_dir = epath.Path(manual_folder(dl_manager, CARD, config.name))
        comments, rejections = read_manual_dir(config, manual_dir)
        report = rejection_report(rejections, len(comments))
        logging.info("reddit_comments/%s: %s", config.name, report)
        if not comments:
            raise RedditDataError(f"{manual_dir}: no record became a comment ({report})")
        self.info.metadata["rejections"] = dict(sorted(rejections.items()))
        self.info.metadata["accepted_comments"] = len(comments)
        reward = raw_rewards(config, comments, manual_dir)
        limit = common.small_limit()
        splits = {}
        for split in ("train", "eval", "test"):
            chosen = [c for c in comments if c.split == split][:limit]
            shards = []
            for k, start in enumerate(range(0, len(chosen), config.shard_size)):
                part = tuple(chosen[start:start + config.shard_size])
                values = {c.text: reward.values[c.text] for c in part}
                shards.append(CommentShard(f"reddit-{split}-{k:05d}", part,
                                           PrecomputedReward(reward.kind, reward.fingerprint(), values),
                                           config.reward_scale, config.reward_shift, config.include_parent))
            splits[split] = self._generate_examples(shards)
        return splits

    def _generate_examples(self, shards):
        fn = functools.partial(common.examples_from_episodes, record_shard, schema=REDDIT_SCHEMA)
        return common.beam_flat_map(shards, fn)
