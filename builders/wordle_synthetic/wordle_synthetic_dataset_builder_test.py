"""DatasetBuilderTestCase for wordle_synthetic, every config built small (RLDS_LANG_SMALL=3 games per recipe).

``manual_dir`` reads ``dummy_data/`` (4 games recorded by ``loggers.record`` with a random-mixture policy).
"""

import tensorflow_datasets as tfds

from ..testing import AllowNumpyLoad, SmallBuild
from . import wordle_synthetic_dataset_builder


class _Base(SmallBuild, AllowNumpyLoad, tfds.testing.DatasetBuilderTestCase):
    """Every config built with 3 games per recipe; the harness's ``np.load`` guard lifted (``AllowNumpyLoad``)."""

    DATASET_CLASS = wordle_synthetic_dataset_builder.Builder
    SKIP_CHECKSUMS = True
    SMALL = 3  # read in _split_generators: 3 games per recipe
    __test__ = False  # only the subclasses below run


class ExpertTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["expert", "random_mixture"]
    SPLITS = {"train": 3}


class AdversarialTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["adversarial"]
    SPLITS = {"train": 6}  # two recipes x 3


class BranchTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["branch"]
    SPLITS = {"train": 13}  # 3 expert games (10 turns in all) + one branch per turn


class BranchAdversarialTest(_Base):
    """``branch`` in the ILQL MDP; also checks on the built dataset that every branch replays its parent."""

    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["branch_adversarial"]
    SPLITS = {"train": 12}  # 3 optimal games of 3 turns each (9 turns in all) + one branch per turn

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        episodes = {}
        for episode in builder.as_dataset(split="train"):
            steps = list(episode["steps"].as_numpy_iterator())
            episodes[episode["episode_id"].numpy()] = {
                "parent": episode["parent_episode_id"].numpy(), "turn": int(episode["branch_turn"]),
                "seed": int(episode["seed"]), "actions": [s["action"] for s in steps],
                "texts": [s["observation"]["text"] for s in steps], "answer": episode["answer"].numpy(),
                "initial_answer": episode["initial_answer"].numpy()}
        branches = [e for e in episodes.values() if e["turn"] >= 0]
        self.assertEqual(len(branches), 9)
        self.assertTrue(any(e["answer"] != e["initial_answer"] for e in episodes.values()))  # words were redrawn
        for branch in branches:
            parent, turn = episodes[branch["parent"]], branch["turn"]
            self.assertEqual(parent["turn"], -1)
            self.assertEqual(branch["seed"], parent["seed"])
            self.assertEqual(branch["actions"][:turn], parent["actions"][:turn])
            self.assertEqual(branch["texts"][:turn + 1], parent["texts"][:turn + 1])
            self.assertNotEqual(branch["actions"][turn], parent["actions"][turn])  # WrongPolicy took over


class IlqlAdversarialTest(_Base):
    """The ILQL paper's Section-5 mixture as the authors' config builds it: optimal games of 3+ guesses branched 5
    times at turn 2 by ``RepeatPolicy(first_n=2)``, suboptimal games."""

    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["ilql_adversarial"]
    SPLITS = {"train": 21}  # 3 optimal games (3, 4 and 4 guesses: all 3+) + 5 branches of each + 3 suboptimal

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        kinds = {}
        for episode in builder.as_dataset(split="train"):
            steps = list(episode["steps"].as_numpy_iterator())
            kinds.setdefault((episode["policy"].numpy().decode(), int(episode["branch_turn"])), []).append(
                (episode["parent_episode_id"].numpy(), [s["action"] for s in steps],
                 float(sum(s["reward"] for s in steps))))
        self.assertEqual(sorted((k, len(v)) for k, v in kinds.items()),
                         [(("optimal", -1), 3), (("random_mixture", -1), 3), (("repeat_takeover", 2), 15)])
        by_parent = {}
        for parent, actions, episode_return in kinds[("repeat_takeover", 2)]:
            by_parent.setdefault(parent, []).append(actions)
            self.assertEqual(episode_return, -6.0)  # a repeated guess is never consistent: it cannot win
        self.assertEqual(sorted(len(v) for v in by_parent.values()), [5, 5, 5])
        for copies in by_parent.values():
            self.assertEqual(len({tuple(a[:2]) for a in copies}), 1)  # the optimal game's first two moves
            for actions in copies:  # then one of those two, again and again (first_n=2)
                self.assertTrue(set(a for a in actions[2:] if a) <= set(actions[:2]), actions)


class LmrlGymTest(_Base):
    """LMRL-Gym's setting: both splits, on its 431-word list, in its MDP."""

    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["lmrl_gym"]
    SPLITS = {"train": 3, "eval": 3}

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        from rlds_lang.wordle.words import lmrl_gym_words

        words = set(lmrl_gym_words().words)
        seeds = {split: {int(e["seed"]) for e in builder.as_dataset(split=split)} for split in ("train", "eval")}
        self.assertFalse(seeds["train"] & seeds["eval"])  # the splits never share a game's seed
        for episode in builder.as_dataset(split="train"):
            self.assertIn(episode["answer"].numpy().decode(), words)
            actions = [s["action"].decode() for s in episode["steps"].as_numpy_iterator()][:-1]
            self.assertTrue(actions and set(actions) <= words)
            self.assertEqual(episode["policy"].numpy().decode(), "random_mixture")


class LmrlGymCachedTest(_Base):
    """``RLDS_LANG_SHARD_CACHE`` keeps each shard's logs, so a large build resumes (tests/test_shard_cache.py)."""

    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["lmrl_gym"]
    SPLITS = {"train": 3, "eval": 3}

    def _download_and_prepare_as_dataset(self, builder):
        import os
        import tempfile
        from unittest import mock

        with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {"RLDS_LANG_SHARD_CACHE": cache}):
            super()._download_and_prepare_as_dataset(builder)
            # the test's small build keeps its shards under its own config name, apart from a full build's
            self.assertEqual(builder.builder_config.name, "lmrl_gym_small3")
            self.assertEqual(sorted(os.listdir(os.path.join(cache, builder.builder_config.name))),
                             ["lmrl_gym_eval-0000", "lmrl_gym_train-0000"])


class ManualDirTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["manual_dir"]
    SPLITS = {"train": 4}


if __name__ == "__main__":
    import tensorflow_datasets.public_api as tfds_api

    tfds_api.testing.test_main()
