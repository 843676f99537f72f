"""DatasetBuilderTestCase for preferences over ``dummy_data/`` (written by ``make_dummy_data.py``): the splits
hold out whole episodes and every example decodes back to the judgement the logs hold, clips included."""

import tensorflow_datasets as tfds

from ..testing import AllowNumpyLoad
from . import make_dummy_data, preferences_dataset_builder
from loggers.preferences import read_preference_logs
from loggers.preferences_dataset import judgement_from_example


class PreferencesTest(AllowNumpyLoad, tfds.testing.DatasetBuilderTestCase):
    """Builds from the dummy logs; checks split sizes and a lossless decode of every example."""

    DATASET_CLASS = preferences_dataset_builder.Builder
    SKIP_CHECKSUMS = True
    SPLITS = make_dummy_data.EXPECTED

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        logged = {(j.left.clip_id, j.right.clip_id): j for j in read_preference_logs(self.dummy_data)}
        episodes = {}
        for split in self.SPLITS:
            episodes[split] = set()
            for example in tfds.as_numpy(builder.as_dataset(split=split)):
                got = judgement_from_example(example)
                episodes[split] |= {got.left.source_episode_id, got.right.source_episode_id}
                want = logged[(got.left.clip_id, got.right.clip_id)]
                self.assertEqual((got.label, got.labeller, got.selection), (want.label, want.labeller, want.selection))
                for a, b in ((got.left, want.left), (got.right, want.right)):
                    self.assertEqual((a.actions, a.rewards, a.padding, a.start, a.stop), (b.actions, b.rewards,
                                                                                         b.padding, b.start, b.stop))
                    self.assertEqual([o["text"] for o in a.observations], [o["text"] for o in b.observations])
        self.assertFalse(episodes["train"] & episodes["validation"])  # no validation clip is trained on


if __name__ == "__main__":
    tfds.testing.test_main()
