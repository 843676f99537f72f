"""DatasetBuilderTestCase for response_trees: ``random_mixture`` built small (RLDS_LANG_SMALL=2 trees) and
``manual_dir`` over ``dummy_data/`` (written by ``make_dummy_data.py``); both checked to rebuild into trees."""

import tensorflow_datasets as tfds

from ..testing import AllowNumpyLoad, SmallBuild
from . import make_dummy_data, response_trees_dataset_builder
from rlds_lang.trees import expected_rewards, rebuild_trees


class _Base(SmallBuild, AllowNumpyLoad, tfds.testing.DatasetBuilderTestCase):
    """Lifts the harness's ``np.load`` guard (the Wordle engine reads its own feedback-matrix cache by path) and
    checks that the built episodes rebuild into trees whose stored expected rewards are recomputed exactly."""

    DATASET_CLASS = response_trees_dataset_builder.Builder
    SKIP_CHECKSUMS = True
    __test__ = False
    NUM_TREES = 0
    SMALL = 2  # read in _split_generators: 2 trees

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        episodes = []
        for episode in tfds.as_numpy(builder.as_dataset(split="train")):
            steps = [{**s, "node_id": s["node_id"].decode(), "parent_node_id": s["parent_node_id"].decode(),
                      "action": s["action"].decode()} for s in episode["steps"]]
            episodes.append({"episode_id": episode["episode_id"].decode(), "steps": steps})
        trees = rebuild_trees(episodes)
        self.assertEqual(len(trees), self.NUM_TREES)
        stored = {s["node_id"]: float(s["expected_reward"]) for e in episodes for s in e["steps"][:-1]}
        for tree in trees:
            for node, value in zip(tree.ids, expected_rewards(tree)[:, 0]):
                self.assertAlmostEqual(stored[node], value, places=5)


class RandomMixtureTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["random_mixture"]
    SPLITS = {"train": 18}  # 2 trees x 3 x 3 paths (no game of these seeds is won within two guesses)
    NUM_TREES = 2


class ManualDirTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["manual_dir"]
    SPLITS = {"train": make_dummy_data.EXPECTED_EPISODES}
    NUM_TREES = 2


if __name__ == "__main__":
    import tensorflow_datasets.public_api as tfds_api

    tfds_api.testing.test_main()
