"""DatasetBuilderTestCase for wordle_tweets over ``dummy_data/`` (made by ``make_dummy_data.py``).

Beyond the harness's checks (features, split sizes), every build is checked for: the rejection counts
stored in ``metadata.json`` (exactly ``make_dummy_data.EXPECTED``), episodes whose feedback reproduces the
tweet's colour rows with the environment's rewards, the eval split equal to ``split_by_episode_id`` on
``tweet_id``, and ``filter_top_p`` (%BC) working on the built dataset as a transform.
"""

import csv
import math
import os
from unittest import mock

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from . import make_dummy_data, wordle_tweets_dataset_builder
from rlds_lang.wordle.tweets import parse_share
from transforms.selection import episode_returns, filter_top_p, split_by_episode_id


def _dummy_rows() -> dict[str, tuple[tuple[int, ...], ...]]:
    """tweet id -> parsed colour rows of every parseable dummy tweet."""
    with open(f"{make_dummy_data.OUT}/tweets.csv", encoding="utf-8", newline="") as f:
        records = list(csv.DictReader(f))
    parsed = {r["tweet_id"]: parse_share(r["tweet_text"]) for r in records}
    return {k: v.rows for k, v in parsed.items() if hasattr(v, "rows")}


def _ids(episodes) -> list[bytes]:
    return list(episodes.map(lambda e: e["tweet_id"]).as_numpy_iterator())


class _Base(tfds.testing.DatasetBuilderTestCase):
    """Lifts the harness's ``np.load`` guard (the engine reads its own feedback-matrix cache by path) and
    adds the tweet-specific checks to every config's build."""

    DATASET_CLASS = wordle_tweets_dataset_builder.Builder
    SKIP_CHECKSUMS = True
    __test__ = False

    def setUp(self):
        super().setUp()
        # wordle_synthetic's test sets RLDS_LANG_SMALL for the whole process; these builds are full size.
        environ = mock.patch.dict(os.environ)
        environ.start()
        self.addCleanup(environ.stop)
        os.environ.pop("RLDS_LANG_SMALL", None)
        for patcher in list(self.patchers):
            if getattr(patcher, "attribute", None) == "load" and "numpy" in repr(getattr(patcher, "getter", lambda: "")()):
                patcher.stop()
                self.patchers.remove(patcher)

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        name = builder.builder_config.name
        reloaded = tfds.builder_from_directory(builder.data_dir)
        self.assertEqual(dict(reloaded.info.metadata["rejections"]), make_dummy_data.EXPECTED[name])
        self.assertEqual(reloaded.info.metadata["accepted_games"], sum(self.SPLITS.values()))
        self._check_episodes(builder)

    def _check_episodes(self, builder):
        rows = _dummy_rows()
        train, evaluation = builder.as_dataset(split="train"), builder.as_dataset(split="eval")
        for split in (train, evaluation):
            for episode in split:
                tweet_rows = rows[episode["tweet_id"].numpy().decode()]
                steps = list(episode["steps"].as_numpy_iterator())
                self.assertEqual([tuple(s["observation"]["feedback"]) for s in steps[1:]], list(tweet_rows))
                solved = all(c == 2 for c in tweet_rows[-1])
                expected = [-1.0] * (len(tweet_rows) - 1) + [0.0 if solved else -1.0, 0.0]
                self.assertEqual([float(s["reward"]) for s in steps], expected)
                self.assertEqual(episode["retrofit_mode"].numpy().decode(), "true_word" if builder.builder_config.use_true_word
                                 else "any_answer")
                self.assertEqual(episode["claimed_result"].numpy().decode(), f"{len(tweet_rows) if solved else 'X'}/6")
        union = train.concatenate(evaluation)
        _, again = split_by_episode_id(union, builder.builder_config.eval_fraction, salt=builder.builder_config.split_salt,
                                       id_key="tweet_id")
        self.assertEqual(sorted(_ids(again)), sorted(_ids(evaluation)))
        returns = episode_returns(train)
        best = episode_returns(filter_top_p(train, 0.25))
        self.assertEqual(len(best), math.ceil(0.25 * len(returns)))
        self.assertGreaterEqual(best.min(), np.sort(returns)[::-1][len(best) - 1])


class TrueWordTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["true_word"]  # official lists
    SPLITS = {"train": 48, "eval": 1}


class AnyAnswerManualListsTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["any_answer_manual_lists"]  # lists from the manual folder
    SPLITS = {"train": 49, "eval": 1}


def test_every_config_counts_its_rejections():
    """What each config's build would accept and reject, without a TFDS build (the two builds above cover
    the rest of the pipeline): the counts of ``make_dummy_data.EXPECTED``, and no record lost."""
    with open(f"{make_dummy_data.OUT}/tweets.csv", encoding="utf-8", newline="") as f:
        records = sum(1 for _ in csv.DictReader(f))
    for config in wordle_tweets_dataset_builder.CONFIGS:
        games, rejections, _, _ = wordle_tweets_dataset_builder.retrofit_manual_dir(config, epath.Path(make_dummy_data.OUT))
        assert dict(rejections) == make_dummy_data.EXPECTED[config.name], config.name
        assert len(games) + sum(rejections.values()) == records, config.name
        assert all(g.mode.value == ("true_word" if config.use_true_word else "any_answer") for g in games)


def test_dummy_data_is_what_the_script_makes(tmp_path, monkeypatch):
    """dummy_data/ is reproducible from make_dummy_data.py (seeded), byte for byte."""
    committed = epath.Path(make_dummy_data.OUT)
    monkeypatch.setattr(make_dummy_data, "OUT", str(tmp_path))
    make_dummy_data.main()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["answers.txt", "answers_by_day.csv", "guesses.txt", "tweets.csv"]
    for name in names:
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name


if __name__ == "__main__":
    import tensorflow_datasets.public_api as tfds_api

    tfds_api.testing.test_main()
