"""wordle_synthetic: Wordle games of scripted policies, recorded through loggers.record (RLDS, TFDS).

Configs are declarative (``WordleConfig.recipes``, see ``rlds_lang.wordle.recipes``):

* ``expert`` -- ``OptimalPolicy``, one game per answer of the official list (2,315 games).
* ``branch`` -- the expert games, plus at every turn of each a branch where ``WrongPolicy`` takes over;
  branches are separate episodes, ``parent_episode_id``/``branch_turn`` name the parent game and turn.
* ``random_mixture`` -- ``RandomMixturePolicy(prob_smart=0.5)``, 2,000 games on random answers.
* ``adversarial`` -- the ILQL paper's section-5 MDP (``adversarial_resample`` mode, ``ilql`` rule):
  1,000 ``optimal`` + 1,000 ``random_mixture`` games.
* ``branch_adversarial`` -- ``branch`` in the ``adversarial`` MDP: optimal games (one per official answer as
  the initial answer) and a ``WrongPolicy`` branch at every turn. Branches are recorded with their parent's
  seed, so the environment redraws the same hidden words and each branch replays its parent's steps
  exactly up to ``branch_turn`` (checked while generating).
* ``lmrl_gym`` -- LMRL-Gym's Wordle setting (``rlds_lang.wordle.lmrl_gym``: its 431-word list as guesses and
  answers, ``ilql`` rule, ``adversarial_resample``): its random-mixture behaviour policy (a uniformly random
  list word with probability 0.66, else a random consistent word) at the published size, 1,000,000 ``train``
  and 100,000 ``eval`` games (separate seeds). Build it with Beam workers (see the README).
* ``manual_dir`` -- Wordle logs that ``loggers.record`` wrote, placed in the manual folder.

Generation records each shard of a recipe with ``loggers.record`` into a temporary folder, reads it back
with ``loggers.reader``, checks every episode (``check_episode``) and yields it keyed by ``episode_id``;
``_generate_examples`` is a Beam ``PTransform`` (``beam.Create(shards) | beam.FlatMap(...)``).

Resumable builds: set ``RLDS_LANG_SHARD_CACHE=DIR`` to keep every shard's logs under ``DIR/<config>``; a
build interrupted (the full ``lmrl_gym`` takes hours on 2 cores) and started again reads the shards already
complete instead of playing them again (``loggers.roundtrip.record_and_read_cached``).

Small builds: set ``RLDS_LANG_SMALL=N`` (environment variable) to cap every recipe at N games (branches
come on top), or construct a config with ``num_episodes=N``. The builder test uses the variable.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import tensorflow_datasets as tfds
from tensorflow_datasets.rlds import rlds_base

from loggers import tfds_examples as common
from loggers.dataset_cards import manual_folder, read_card
from loggers.beam_runner import LocalBeamRunner
from loggers.reader import log_dirs
from loggers.wordle_recipes import play_shard
from rlds_lang.wordle import ilql_adversarial, lmrl_gym
from rlds_lang.wordle.recipes import BRANCH_DEFAULTS, BRANCH_METADATA, Recipe, shards
from rlds_lang.wordle.schema import WORDLE_SCHEMA

#: this dataset's card (``CARD.toml``): sizes, source, licence, the manual folder of ``manual_dir``.
CARD = read_card(os.path.dirname(__file__))
_OVERALL = ("Wordle games (text guesses, colour-square feedback, reward -1 per wrong guess) played by "
            "scripted policies and recorded losslessly in RLDS through EnvLogger.")


@dataclasses.dataclass
class WordleConfig(rlds_base.DatasetConfig):
    """An RLDS dataset config plus the recipe table that generates it.

    Attributes:
      recipes: what to play (empty for ``from_manual_dir``).
      from_manual_dir: read logs from ``dl_manager.manual_dir`` instead of playing.
      branching: episodes carry ``parent_episode_id`` and ``branch_turn``.
      num_episodes: caps every recipe (``None``: the recipe's own size); ``RLDS_LANG_SMALL`` overrides.
      shard_size: episodes per Beam work item.
      eval_recipes: what to play for an ``eval`` split (empty: the config has a ``train`` split only).
    """

    recipes: tuple[Recipe, ...] = ()
    from_manual_dir: bool = False
    branching: bool = False
    num_episodes: int | None = None
    shard_size: int = 250
    eval_recipes: tuple[Recipe, ...] = ()


def _config(name: str, description: str, **kwargs: Any) -> WordleConfig:
    """A ``WordleConfig`` over ``WORDLE_SCHEMA`` (plus ``BRANCH_METADATA`` when ``branching``)."""
    extra = BRANCH_METADATA if kwargs.get("branching") else None
    return common.rlds_config(WordleConfig, WORDLE_SCHEMA, name, description, extra, overall_description=_OVERALL,
                              **kwargs)


_ADV = dict(mode="adversarial_resample", rule="ilql")

CONFIGS = [
    _config("expert", "OptimalPolicy, one game per answer of the official answer list.",
            recipes=(Recipe("expert", "optimal"),)),
    _config("branch", "Expert games plus, at every turn, a branch where WrongPolicy takes over.",
            recipes=(Recipe("branch", "optimal", branch_policy="wrong"),), branching=True),
    _config("random_mixture", "RandomMixturePolicy(prob_smart=0.5) on random answers.",
            recipes=(Recipe("random_mixture", "random_mixture", '{"prob_smart": 0.5}', episodes=2000),)),
    _config("adversarial", "ILQL section-5 MDP (adversarial_resample, ilql rule): optimal + random_mixture.",
            recipes=(Recipe("adversarial_optimal", "optimal", episodes=1000, seed=0, **_ADV),
                     Recipe("adversarial_random_mixture", "random_mixture", '{"prob_smart": 0.5}',
                            episodes=1000, seed=1_000_000, **_ADV))),
    _config("branch_adversarial", "The branch recipe in the ILQL section-5 MDP (adversarial_resample, ilql rule): "
            "optimal games, one per official answer as the initial answer, plus at every turn a WrongPolicy branch.",
            recipes=(Recipe("branch_adversarial", "optimal", branch_policy="wrong", **_ADV),), branching=True),
    _config("ilql_adversarial", "The ILQL paper's Section-5 adversarial data (adversarial_resample, ilql rule) as "
            "the authors' config/wordle/generate_adversarial_data.yaml builds it: 2,000 optimal games; from each that "
            "lasted at least 3 guesses, 5 branches where RepeatPolicy(first_n=2) takes over after its first two "
            "moves; and 5 RandomMixturePolicy(prob_smart=0.5) games per optimal game "
            "(rlds_lang.wordle.ilql_adversarial).",
            recipes=ilql_adversarial.recipes(), branching=True),
    _config("lmrl_gym", "LMRL-Gym's Wordle setting (431-word list, ilql rule, adversarial_resample): its "
            "random-mixture behaviour policy, 1,000,000 train and 100,000 eval games.",
            recipes=(lmrl_gym.recipe("train"),), eval_recipes=(lmrl_gym.recipe("eval"),),
            shard_size=lmrl_gym.SHARD_SIZE),
    _config("manual_dir", "Wordle logs written by loggers.record, read from the manual folder.",
            from_manual_dir=True),
]


class Builder(LocalBeamRunner, common.SmallBuilds, tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for wordle_synthetic (see the module docstring)."""

    VERSION = tfds.core.Version("1.1.0")
    RELEASE_NOTES = {
        "1.0.0": "Initial release.",
        "1.1.0": "Branches are recorded with their parent game's seed and checked to replay its prefix exactly "
                 "(the WrongPolicy moves of `branch` differ from 1.0.0); new config `branch_adversarial`.",
    }
    BUILDER_CONFIGS = CONFIGS
    MANUAL_DOWNLOAD_INSTRUCTIONS = CARD.instructions()

    def _info(self) -> tfds.core.DatasetInfo:
        return common.rlds_info(self, _OVERALL)

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        config: WordleConfig = self.builder_config
        if config.from_manual_dir:
            folder = manual_folder(dl_manager, CARD, config.name)
            common.check_logs_fit(folder, WORDLE_SCHEMA, f"wordle_synthetic/{config.name}")
            return {"train": self._generate_examples(log_dirs(folder))}
        limit = common.small_limit(config.num_episodes)
        splits = {"train": config.recipes, "eval": config.eval_recipes}
        return {name: self._generate_examples(shards(recipes, config.shard_size, limit))
                for name, recipes in splits.items() if recipes}

    def _generate_examples(self, items):
        config: WordleConfig = self.builder_config
        extra = BRANCH_METADATA if config.branching else None
        defaults = BRANCH_DEFAULTS if config.branching else None
        if config.from_manual_dir:
            fn = functools.partial(common.examples_from_log_dir, schema=WORDLE_SCHEMA)
        else:
            play = functools.partial(play_shard, cache_dir=common.shard_cache_dir(config.name))
            fn = functools.partial(common.examples_from_episodes, play, schema=WORDLE_SCHEMA,
                                   extra_metadata=extra, defaults=defaults)
        return common.beam_flat_map(items, fn)
