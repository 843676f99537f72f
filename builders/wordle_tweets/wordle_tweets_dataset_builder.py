"""wordle_tweets: human Wordle games from shared tweets, words retrofitted onto the colour rows (RLDS, TFDS).

The Kaggle "Wordle Tweets" CSV (``wordle_id,tweet_id,tweet_date,tweet_username,tweet_text``) comes
through ``--manual_dir`` (``tweets.csv``). ``_split_generators`` streams it once
(``rlds_lang.wordle.tweets.read_tweets_csv``), retrofits every valid game
(``rlds_lang.wordle.retrofit``) and splits games into ``train``/``eval`` by a hash of the tweet id --
the same ``transforms.selection.split_by_episode_id`` hash, run on the ``tweet_id`` field, so the split
is stable as the file grows. ``_generate_examples`` is a Beam ``PTransform``: chunks of retrofitted
games are recorded in parallel through ``loggers.record`` in a real ``WordleEnv`` and read back.

Every rejected record is counted by reason (parse failures, malformed CSV records, duplicates, retrofit
failures). The counts are logged at the end of ``_split_generators`` (they are final then: Beam only
records accepted games) and stored in the dataset's ``metadata.json``
(``builder.info.metadata["rejections"]``, with ``accepted_games``). A file that is missing, empty or not
UTF-8 (the tweets, the answer table, a word list) stops the build with an error naming the file and line,
as does a tweets file in which no record became a game (see ``docs/guides/damaged_input.md``).

Configs: ``true_word`` / ``any_answer`` (retrofit against the day's real answer from the
``answers_by_day.csv`` table in the manual folder, or against any answer that fits every row) with the
official word lists, and the same two with ``answers.txt``/``guesses.txt`` word lists from the manual
folder (``*_manual_lists``). ``RLDS_LANG_SMALL=N`` caps each split at N games.
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
from tqdm.auto import tqdm

from loggers import tfds_examples as common
from loggers.dataset_cards import manual_folder, read_card
from loggers.beam_runner import LocalBeamRunner
from loggers.wordle_recipes import record_retrofits
from rlds_lang.wordle import retrofit as rf
from rlds_lang.wordle.schema import WORDLE_SCHEMA
from rlds_lang.wordle.tweets import TweetsCsvError, read_tweets_csv, rejection_report
from rlds_lang.wordle.words import WordList, resolve_word_list

#: this dataset's card (``CARD.toml``): sizes, source, licence and the files of the manual folder.
CARD = read_card(os.path.dirname(__file__))
_OVERALL = ("Human Wordle games shared as tweets (coloured squares), with words retrofitted onto every "
            "colour row and replayed through the Wordle environment into RLDS episodes.")
_DEFAULT_LISTS = ("official_answers", "official_guesses")


@dataclasses.dataclass
class TweetsConfig(rlds_base.DatasetConfig):
    """An RLDS dataset config plus how tweets are retrofitted.

    Attributes:
      use_true_word: retrofit against the day's answer from ``answer_table`` (else any fitting answer).
      answers: ``official_answers`` or a word-list file name in the manual folder.
      guesses: ``official_guesses`` or a word-list file name in the manual folder.
      rule: colouring rule of the retrofit and of the recording environment.
      seed: retrofit seed; each game's own seed is derived from it and the tweet id.
      eval_fraction: share of tweet ids (by hash) in the ``eval`` split.
      split_salt: salt of that hash (``split_by_episode_id``'s ``salt``).
      tweets_file: the tweets CSV's name in the manual folder.
      answer_table: the ``day,answer`` table's name in the manual folder (``use_true_word`` only).
      shard_size: games per Beam work item.
    """

    use_true_word: bool = True
    answers: str = "official_answers"
    guesses: str = "official_guesses"
    rule: str = "official"
    seed: int = 0
    eval_fraction: float = 0.05
    split_salt: str = "wordle_tweets"
    tweets_file: str = "tweets.csv"
    answer_table: str = "answers_by_day.csv"
    shard_size: int = 500


#: ``_config(name, description, **TweetsConfig fields)``: a config over ``WORDLE_SCHEMA`` plus ``TWEET_METADATA``.
_config = functools.partial(common.rlds_config, TweetsConfig, WORDLE_SCHEMA, extra_metadata=rf.TWEET_METADATA,
                            overall_description=_OVERALL)


_MANUAL_LISTS = dict(answers="answers.txt", guesses="guesses.txt")

CONFIGS = [
    _config("true_word", "Rows retrofitted against the day's real answer (answers_by_day.csv), official lists.",
            use_true_word=True),
    _config("any_answer", "Rows retrofitted against a random answer that fits every row, official lists.",
            use_true_word=False),
    _config("true_word_manual_lists", "true_word with answers.txt/guesses.txt from the manual folder.",
            use_true_word=True, **_MANUAL_LISTS),
    _config("any_answer_manual_lists", "any_answer with answers.txt/guesses.txt from the manual folder.",
            use_true_word=False, **_MANUAL_LISTS),
]


@dataclasses.dataclass(frozen=True)
class TweetShard:
    """One Beam work item: a chunk of retrofitted games of one split and the environment to record them in."""

    run_name: str
    games: tuple[rf.RetrofittedGame, ...]
    answers: WordList | str
    guesses: WordList | str
    rule: str


def record_shard(shard: TweetShard) -> Iterator[dict[str, Any]]:
    """The RLDS episodes of one shard, recorded through ``loggers.record``."""
    return record_retrofits(shard.games, shard.run_name, shard.answers, shard.guesses, shard.rule)


def _manual_file(manual_dir: epath.Path, name: str) -> str:
    """The path of ``name`` in the manual folder, with the download instructions if it is missing."""
    path = manual_dir / name
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {Builder.MANUAL_DOWNLOAD_INSTRUCTIONS}")
    return str(path)


def _word_list(spec: str, manual_dir: epath.Path) -> WordList | str:
    """A default list name as is (workers resolve it cheaply), else the file in the manual folder, loaded."""
    return spec if spec in _DEFAULT_LISTS else resolve_word_list(_manual_file(manual_dir, spec))


def retrofit_manual_dir(config: TweetsConfig, manual_dir: epath.Path) -> tuple[
        list[rf.RetrofittedGame], collections.Counter, WordList | str, WordList | str]:
    """``(games, rejections, answers, guesses)``: every valid tweet of the manual folder retrofitted as the
    config says, the rejection counts by reason, and the word lists (names or loaded lists)."""
    tweets_path = _manual_file(manual_dir, config.tweets_file)
    answers, guesses = _word_list(config.answers, manual_dir), _word_list(config.guesses, manual_dir)
    index = rf.RetrofitIndex.build(guesses, answers, config.rule)
    table = rf.load_answer_table(_manual_file(manual_dir, config.answer_table)) if config.use_true_word else None
    rejections: collections.Counter = collections.Counter()
    tweets = tqdm(read_tweets_csv(tweets_path, rejections), desc="valid tweets read", unit="game")
    games = list(rf.retrofit_tweets(tweets, index, config.seed, rejections, table))
    return games, rejections, answers, guesses


def eval_tweet_ids(tweet_ids: list[str], fraction: float, salt: str) -> set[str]:
    """The ids ``transforms.selection.split_by_episode_id`` puts in eval when run on a ``tweet_id`` field."""
    import tensorflow as tf

    from transforms.selection import split_by_episode_id

    if not tweet_ids:
        return set()
    ids = tf.data.Dataset.from_tensor_slices({"tweet_id": tf.constant(tweet_ids, tf.string)})
    _, evaluation = split_by_episode_id(ids, fraction, salt=salt, id_key="tweet_id")
    batches = evaluation.map(lambda e: e["tweet_id"]).batch(65536).as_numpy_iterator()
    return {tweet_id.decode("utf-8") for batch in batches for tweet_id in batch}


class Builder(LocalBeamRunner, common.SmallBuilds, tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for wordle_tweets (see the module docstring)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = CONFIGS
    MANUAL_DOWNLOAD_INSTRUCTIONS = CARD.instructions()

    def _info(self) -> tfds.core.DatasetInfo:
        return common.rlds_info(self, _OVERALL, ds_metadata={"rejections": {}, "accepted_games": 0})

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        config: TweetsConfig = self.builder_config
        manual_dir = epath.Path(manual_folder(dl_manager, CARD, config.name))
        games, rejections, answers, guesses = retrofit_manual_dir(config, manual_dir)
        report = rejection_report(rejections, len(games))
        logging.info("wordle_tweets/%s: %s", config.name, report)
        if not games:
            raise TweetsCsvError(f"{manual_dir / config.tweets_file}: no record became a game "
                                 f"({report})")
        self.info.metadata["rejections"] = dict(sorted(rejections.items()))
        self.info.metadata["accepted_games"] = len(games)
        evaluation = eval_tweet_ids([g.tweet.tweet_id for g in games], config.eval_fraction, config.split_salt)
        limit = common.small_limit()
        splits = {}
        for split, keep in (("train", False), ("eval", True)):
            chosen = [g for g in games if (g.tweet.tweet_id in evaluation) == keep][:limit]
            shards = [TweetShard(f"tweets-{split}-{k:05d}", tuple(chosen[s:s + config.shard_size]), answers, guesses,
                                 config.rule) for k, s in enumerate(range(0, len(chosen), config.shard_size))]
            splits[split] = self._generate_examples(shards)
        return splits

    def _generate_examples(self, shards):
        fn = functools.partial(common.examples_from_episodes, record_shard, schema=WORDLE_SCHEMA,
                               extra_metadata=rf.TWEET_METADATA)
        return common.beam_flat_map(shards, fn)
