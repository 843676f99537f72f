"""DatasetBuilderTestCase for reddit_comments over ``dummy_data/`` (made by ``make_dummy_data.py``), in both layouts.

Beyond the harness's checks (features, split sizes), every build is checked for: the rejection counts in
``metadata.json`` (``make_dummy_data.EXPECTED``), one-step episodes whose action is the data comment byte
for byte, whose observation is its parent (or ``""``) and whose reward is the config's.
"""

import collections
import os
import shutil
import tempfile

import pytest
import tensorflow_datasets as tfds
from etils import epath

from ..testing import FullSizeBuild
from . import make_dummy_data, reddit_comments_dataset_builder as rcb
from rlds_lang.reddit.data import read_folder
from rlds_lang.reddit.upvote_model import UPVOTE_MODEL_ENV, UpvoteClassifier, UpvoteModelConfig

PUBLISHED = os.path.join(make_dummy_data.OUT, "published")
DUMP = os.path.join(make_dummy_data.OUT, "dump")


class _Base(FullSizeBuild, tfds.testing.DatasetBuilderTestCase):
    """Full-size builds with the reddit-specific checks added to every config's build."""

    DATASET_CLASS = rcb.Builder
    SKIP_CHECKSUMS = True
    LAYOUT = "published"
    __test__ = False

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        reloaded = tfds.builder_from_directory(builder.data_dir)
        expected = make_dummy_data.EXPECTED[self.LAYOUT]
        self.assertEqual(dict(reloaded.info.metadata["rejections"]), expected["rejections"])
        self.assertEqual(reloaded.info.metadata["accepted_comments"], expected["accepted"])
        self._check_episodes(builder)

    def _check_episodes(self, builder):
        config = builder.builder_config
        comments = {c.comment_id: c for c in read_folder(str(self.EXAMPLE_DIR), collections.Counter())}
        for split in ("train", "eval", "test"):
            for episode in builder.as_dataset(split=split):
                comment = comments[episode["comment_id"].numpy().decode()]
                steps = list(episode["steps"].as_numpy_iterator())
                self.assertEqual(len(steps), 2)
                self.assertEqual(steps[0]["action"].decode("utf-8"), comment.text)
                parent = comment.parent_text if config.include_parent else ""
                self.assertEqual(steps[0]["observation"]["text"].decode("utf-8"), parent)
                self.assertEqual(episode["split"].numpy().decode(), split)
                self.assertEqual(episode["reward_kind"].numpy().decode(), config.reward_kind)
                self.assertIn(float(steps[0]["reward"]), self.REWARDS(comment))
                self.assertTrue(steps[1]["is_terminal"])


class ToxicityPublishedTest(_Base):
    __test__ = True
    EXAMPLE_DIR = epath.Path(PUBLISHED)
    BUILDER_CONFIG_NAMES_TO_TEST = ["toxicity"]
    SPLITS = {"train": 15, "eval": 5, "test": 6}

    @staticmethod
    def REWARDS(comment):
        return {0.0, -5.0, -10.0}


class UpvotesRealDumpNoParentTest(_Base):
    __test__ = True
    LAYOUT = "dump"
    EXAMPLE_DIR = epath.Path(DUMP)
    BUILDER_CONFIG_NAMES_TO_TEST = ["upvotes_real_no_parent"]
    SPLITS = {"train": 14, "eval": 1, "test": 1}  # two dump files (plain and .zst) with the same comments, kept once

    @staticmethod
    def REWARDS(comment):
        return {1.0 if comment.score > 0 else -1.0}

    def _download_and_prepare_as_dataset(self, builder):
        """Both files count their bad lines; the second file's comments are dropped as duplicates, counted."""
        tfds.testing.DatasetBuilderTestCase._download_and_prepare_as_dataset(self, builder)
        reloaded = tfds.builder_from_directory(builder.data_dir)
        expected = make_dummy_data.EXPECTED["dump"]
        counts = {k: 2 * v for k, v in expected["rejections"].items()}
        counts["duplicate_comment"] = expected["accepted"]
        self.assertEqual(dict(reloaded.info.metadata["rejections"]), counts)
        self.assertEqual(reloaded.info.metadata["accepted_comments"], expected["accepted"])
        self._check_episodes(builder)


class UpvotesModelPublishedTest(_Base):
    __test__ = True
    EXAMPLE_DIR = epath.Path(PUBLISHED)
    BUILDER_CONFIG_NAMES_TO_TEST = ["upvotes_model"]
    SPLITS = {"train": 15, "eval": 5, "test": 6}

    def setUp(self):
        super().setUp()
        folder = tempfile.mkdtemp(prefix="upvote_model-")
        self.addCleanup(shutil.rmtree, folder, True)
        UpvoteClassifier(UpvoteModelConfig(buckets=64, dim=4)).save(folder)
        previous = os.environ.get(UPVOTE_MODEL_ENV)
        os.environ[UPVOTE_MODEL_ENV] = folder
        self.addCleanup(lambda: os.environ.pop(UPVOTE_MODEL_ENV) if previous is None
                        else os.environ.__setitem__(UPVOTE_MODEL_ENV, previous))

    @staticmethod
    def REWARDS(comment):
        return {0.0, 1.0}


def test_upvotes_model_without_a_model_says_how_to_train_one(monkeypatch):
    monkeypatch.delenv(UPVOTE_MODEL_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="rlds-lang reddit upvotes") as e:
        config = next(c for c in rcb.CONFIGS if c.name == "upvotes_model")
        rcb.raw_rewards(config, [], epath.Path(PUBLISHED))
    assert "upvote_model" in str(e.value) and UPVOTE_MODEL_ENV in str(e.value)


def test_configs_cover_every_kind_with_and_without_parent():
    names = {c.name: c for c in rcb.CONFIGS}
    assert sorted(names) == sorted(f"{k}{s}" for k in ("toxicity", "toxicity_noised", "upvotes_real", "upvotes_model")
                                   for s in ("", "_no_parent"))
    assert names["toxicity_no_parent"].include_parent is False and names["toxicity"].reward_scale == -5.0
    assert names["upvotes_real"].reward_scale == 1.0


def test_dummy_data_is_what_the_script_makes(tmp_path, monkeypatch):
    """dummy_data/ is reproducible from make_dummy_data.py, byte for byte (the .zst too)."""
    monkeypatch.setattr(make_dummy_data, "OUT", str(tmp_path))
    make_dummy_data.main()
    for sub in ("published", "dump"):
        names = sorted(os.listdir(tmp_path / sub))
        assert names == sorted(os.listdir(os.path.join(rcb_out(), sub)))
        for name in names:
            assert (tmp_path / sub / name).read_bytes() == open(os.path.join(rcb_out(), sub, name), "rb").read(), name


def rcb_out() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "dummy_data")


if __name__ == "__main__":
    import tensorflow_datasets.public_api as tfds_api

    tfds_api.testing.test_main()
