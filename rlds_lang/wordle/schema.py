"""The RLDS schema of Wordle episodes (``WORDLE_SCHEMA``).

Observation: ``text`` (the last feedback as coloured squares), ``feedback`` (int8[5], -1 before the first
guess) and ``turn`` (int32, guesses made). Action: the guess as text. Episode metadata: the common fields
that ``loggers.record`` adds (episode_id, task, policy, policy_params, seed) plus what
``WordleEnv.episode_metadata()`` reports. TensorFlow is not imported here.

Example::

    from rlds_lang.wordle.schema import WORDLE_SCHEMA
    config = WORDLE_SCHEMA.dataset_config("expert", "Optimal-policy games")
"""

from __future__ import annotations

import numpy as np

from rlds_lang.schema import FieldSpec, TaskSchema

#: Wordle's task schema; its episode metadata matches ``WordleEnv.episode_metadata()``.
WORDLE_SCHEMA = TaskSchema(
    task="wordle",
    observation_fields={"feedback": FieldSpec(np.int8, (5,)), "turn": FieldSpec(np.int32)},
    episode_metadata={
        "answer": str,
        "initial_answer": str,
        "mode": str,
        "rule": str,
        "answers_name": str,
        "answers_sha256": str,
        "guesses_name": str,
        "guesses_sha256": str,
        "max_guesses": np.int32,
    },
)

__all__ = ["WORDLE_SCHEMA"]
