"""DatasetBuilderTestCase for rlds_logs: the config ``dummy`` builds the shipped logs of a plain text environment."""

import tensorflow_datasets as tfds

from . import rlds_logs_dataset_builder


class DummyLogsTest(tfds.testing.DatasetBuilderTestCase):
    """The 4 shipped episodes build, with text observations and actions and the recorded metadata."""

    DATASET_CLASS = rlds_logs_dataset_builder.Builder
    BUILDER_CONFIG_NAMES_TO_TEST = ["dummy"]
    SKIP_CHECKSUMS = True
    SPLITS = {"train": 4}

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        episodes = {episode["episode_id"].numpy(): episode for episode in builder.as_dataset(split="train")}
        first = episodes[b"dummy-00000000"]
        self.assertEqual(first["task"].numpy(), b"echo")
        steps = list(first["steps"].as_numpy_iterator())
        self.assertEqual([s["observation"] for s in steps], [b"apple", b"pear", b"fig", b""])
        self.assertEqual([s["action"] for s in steps], [b"apple", b"pear", b"fig", b""])
        missed = list(episodes[b"dummy-00000001"]["steps"].as_numpy_iterator())
        self.assertEqual([s["reward"] for s in missed], [1.0, 0.0, 1.0, 0.0])


if __name__ == "__main__":
    tfds.testing.test_main()
