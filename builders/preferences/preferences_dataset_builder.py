"""preferences: pairs of clips with a labeller's judgement, from logs written by ``loggers.preferences``.

One example per judgement: the label (``left``/``right``/``equal``/``skip``), the labeller, the seconds it
took, how the pair was selected and the reward-model ensemble's disagreement on it, and both clips (ids,
source episode and step range, the rendering the labeller was shown, the true rewards, the padding flags,
and every step's observation and action serialised losslessly with EnvLogger's codec --
``loggers.preferences.decode_value``, or ``loggers.preferences_dataset.read_judgements`` to get ``Judgement``
objects back). Splits hold out whole episodes (``rlds_lang.preferences.database.EpisodeSplit``: 20% of the
source episodes, by a hash of the episode id): ``train`` and ``validation`` hold the judgements whose two clips
come from training, or from validation, episodes, so no validation clip is in a training judgement;
``straddling`` holds those with one clip on each side (use them for neither, or for training only when
validation is not needed). A split with no judgement is left out (TFDS cannot build an empty split); the
counts are logged and a build with no training judgement stops with them.

Build: ``rlds-lang build preferences --manual-dir LOGS --data-dir DATA_DIR`` where ``LOGS`` holds ``segments/``
and ``sessions/`` as ``loggers.preferences.PreferenceRecorder`` writes them.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import tensorflow_datasets as tfds

from loggers import tfds_examples as common
from loggers.dataset_cards import manual_folder, read_card
from loggers.preferences import judgement_examples, judgement_split_counts

#: this dataset's card (``CARD.toml``): sizes, source, licence and the folders of the manual folder.
CARD = read_card(os.path.dirname(__file__))
_DESCRIPTION = ("Preference judgements about pairs of clips (segments of RLDS episodes) recorded as RLDS through "
                "EnvLogger; each example is one judgement with both clips.")


def _exact_float64(shape: tuple) -> tfds.features.Tensor:
    """A float64 feature stored as its raw bytes: a plain float feature goes through ``tf.train.FloatList``,
    which is float32 and rounds every value that is not float32-exact (measured times, float64 rewards)."""
    return tfds.features.Tensor(shape=shape, dtype=np.float64, encoding=tfds.features.Encoding.BYTES)


def _clip_features() -> tfds.features.FeaturesDict:
    return tfds.features.FeaturesDict({
        "clip_id": tfds.features.Text(), "source_episode_id": tfds.features.Text(),
        "start": tfds.features.Scalar(np.int64), "stop": tfds.features.Scalar(np.int64),
        "rendering": tfds.features.Text(),
        "rewards": _exact_float64((None,)),
        "padding": tfds.features.Tensor(shape=(None,), dtype=np.bool_),
        "steps": tfds.features.Tensor(shape=(None,), dtype=np.object_),
    })


class Builder(tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for preferences (see the module docstring)."""

    VERSION = tfds.core.Version("1.2.0")
    RELEASE_NOTES = {"1.0.0": "Initial release.",
                     "1.1.0": "seconds, disagreement and rewards stored as float64 bytes: 1.0.0 rounded them to "
                              "float32.",
                     "1.2.0": "train/validation hold out whole episodes, and judgements across them are the "
                              "straddling split: 1.1.0 split by pair, so validation clips were in training pairs."}
    MANUAL_DOWNLOAD_INSTRUCTIONS = CARD.instructions()

    def _info(self) -> tfds.core.DatasetInfo:
        features = tfds.features.FeaturesDict({
            "judgement_id": tfds.features.Text(), "session_id": tfds.features.Text(),
            "label": tfds.features.Text(), "labeller": tfds.features.Text(),
            "seconds": _exact_float64(()), "selection": tfds.features.Text(),
            "disagreement": _exact_float64(()),
            "left": _clip_features(), "right": _clip_features(),
        })
        return self.dataset_info_from_configs(description=_DESCRIPTION, features=features, homepage=common.HOMEPAGE,
                                              supervised_keys=None)

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        root = manual_folder(dl_manager, CARD, "")
        counts = judgement_split_counts(root)
        logging.info("%s: judgements per split (by episode): %s", root, counts)
        if not counts["train"]:
            raise ValueError(f"{root}: no training judgement (judgements per split, by episode: {counts})")
        return {split: self._generate_examples(root, split) for split, count in counts.items() if count}

    def _generate_examples(self, root, split: str):
        return judgement_examples(root, split)
