"""DatasetBuilderTestCase for visdial over ``dummy_data/`` (made by ``make_dummy_data.py``).

Beyond the harness's checks (features, split sizes), every build is checked episode by episode against the
manual folder: caption, questions and answers byte for byte, and the published rewards of the config.
Two configs are built here (agent_stops, the one with most episodes, and yn_v1, the v1.0 files); ``tests/test_visdial_train_eval.py``
builds ``yn`` with the same checks (``check_build``) before training on it.
"""

import os

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from ..testing import FullSizeBuild
from . import make_dummy_data, visdial_dataset_builder as vdb
from rlds_lang.visdial.data import cache_file, load_reward_cache, read_split
from rlds_lang.visdial.rewards import STOP, replay_rewards

SIZES = make_dummy_data.SIZES


class _Base(FullSizeBuild, tfds.testing.DatasetBuilderTestCase):
    """Full-size builds of one config with the episode checks added."""

    DATASET_CLASS = vdb.Builder
    SKIP_CHECKSUMS = True
    EXAMPLE_DIR = epath.Path(make_dummy_data.OUT)
    __test__ = False

    def _download_and_prepare_as_dataset(self, builder):
        super()._download_and_prepare_as_dataset(builder)
        check_build(builder, str(self.EXAMPLE_DIR))


def check_build(builder, manual_dir: str) -> None:
    """Asserts every built episode replays its dialogue of ``manual_dir`` with the config's published rewards."""
    config = builder.builder_config.reward_config()
    for split in SIZES:
        dialogues = list(read_split(manual_dir, split, builder.builder_config.visdial_version))
        rows = load_reward_cache(os.path.join(manual_dir, cache_file(split, config.score_kind)))
        for episode in builder.as_dataset(split=split):
            d = dialogues[int(episode["dialogue_index"])]
            assert int(episode["image_id"]) == d.image_id and episode["split"].numpy().decode() == split
            steps = list(episode["steps"].as_numpy_iterator())
            assert steps[0]["observation"]["text"].decode("utf-8") == d.caption
            rewards = [float(s["reward"]) for s in steps[:-1]]
            stopped = steps[-2]["action"].decode("utf-8") == STOP
            asked = len(rewards) - stopped
            stop_after = asked if config.mode == "agent_stops" else None
            assert rewards == [float(np.float32(r)) for r in replay_rewards(config, rows[d.index], d.answers, stop_after)]
            assert [s["action"].decode("utf-8") for s in steps[:asked]] == [q + "?" for q in d.questions[:asked]]
            assert [s["observation"]["text"].decode("utf-8") for s in steps[1:asked + 1]] == list(d.answers[:asked])
            assert steps[-1]["is_terminal"]


class AgentStopsTest(_Base):
    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["agent_stops"]
    SPLITS = {split: 11 * n for split, n in SIZES.items()}  # every prefix of 0..10 rounds (0..9 end with <stop>)



class YnV1Test(_Base):
    """The v1.0 layout (strings by index): the same dialogues as the v0.5 files, so the same checks hold."""

    __test__ = True
    BUILDER_CONFIG_NAMES_TO_TEST = ["yn_v1"]
    SPLITS = dict(SIZES)
