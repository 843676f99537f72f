"""The RLDS schema of Visual Dialogue episodes (``VISDIAL_SCHEMA``).

Observation: ``text`` only -- the caption on the first step, then each answer (``""`` after ``<stop>``).
Action: a question (or ``<stop>`` in ``agent_stops``). Episode metadata: the common fields plus the image
(``image_id``; ``dialogue_index`` = its row in ``images_<split>`` of ``data_img.h5``, how features are
joined; ``split``) and the reward configuration (mode, reward kind, yes/no kind and penalty, scale, shift).
Image features are not stored in episodes.
"""

from __future__ import annotations

import numpy as np

from rlds_lang.schema import TaskSchema

VISDIAL_SCHEMA = TaskSchema(
    task="visdial",
    episode_metadata={
        "image_id": np.int64,
        "dialogue_index": np.int64,
        "split": str,
        "mode": str,
        "reward_kind": str,
        "yn_kind": str,
        "yn_reward": np.float64,
        "reward_scale": np.float64,
        "reward_shift": np.float64,
    },
)

__all__ = ["VISDIAL_SCHEMA"]
