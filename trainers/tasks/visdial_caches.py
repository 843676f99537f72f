"""Reward caches in the reference's format, computed by our Visual Dialogue backend on the dataset's dialogues.

The reference's VisDial environment reads ``p_0`` (and, in ``10_stop`` / ``agent_stops``, every round's
change) from the reward caches: ``<split>_rank_reward_cache1.json`` (percentile rank) and
``<split>_reward_cache2.json`` (distance), one row ``[v0, d1 .. d10]`` per dialogue. The published caches
hold the authors' guesser's scores; a client that talks to *our* server must read caches of *our* guesser,
or its stop rule compares our ``p_t`` with their ``p_0``. ``write_reward_caches`` writes them: row ``i`` is
what our server's ``/fetch_reward_rank`` (``/fetch_reward``) returns for dialogue ``i``'s caption and true
image with an empty history (``v0``), then with the dialogue's own first ``r`` rounds (the change made by
round ``r``) -- the human dialogue, as the published caches were made: the reference's
``scripts/data/vis_dial/cache_dataset_reward.py`` posts the history of its ``Scene.from_json`` events, whose
questions are the dataset's with a ``?`` appended (``question + '?'``, src/visdial/visdial_base.py:125), as
``question_text`` does here.

``rlds-lang visdial serve --manual-dir D --guesser G --write-caches OUT`` writes them (and does not serve).

Example::

    paths = write_reward_caches(backend, "~/visdial_manual", "out/caches", splits=("val",))
"""

from __future__ import annotations

import json
import os
from typing import Sequence

import numpy as np

from rlds_lang.visdial.backend import LocalBackend, Scene, turn
from rlds_lang.visdial.data import CACHE_ROW, FEATURES_FILE, Dialogue, FeatureStore, cache_file, read_split
from rlds_lang.visdial.rewards import REWARD_KINDS


def question_text(question: str) -> str:
    """A dataset question as the reference's cache procedure sends it: with a ``?`` appended, always (its
    ``Scene.from_json``; the published questions carry none).

    >>> question_text("is there a dog")
    'is there a dog?'
    """
    return question + "?"


def cache_row(backend: LocalBackend, dialogue: Dialogue, feature: np.ndarray, kind: str) -> list[float]:
    """``[v0, d1 .. d10]`` of one dialogue: the backend's reward with no round, then after each of its rounds
    (questions as ``question_text`` writes them)."""
    if dialogue.rounds != CACHE_ROW - 1:
        raise ValueError(f"dialogue {dialogue.index} of {dialogue.split} has {dialogue.rounds} rounds; a reward-cache "
                         f"row needs {CACHE_ROW - 1}")
    scene = Scene(dialogue.caption, feature)
    history: list[dict[str, str]] = []
    row = [float(backend.reward(scene, history, kind))]
    for question, answer in zip(dialogue.questions, dialogue.answers):
        history += [turn("question", question_text(question)), turn("answer", answer)]
        row.append(float(backend.reward(scene, history, kind)))
    return row


def write_reward_caches(backend: LocalBackend, manual_dir: str, out: str, splits: Sequence[str] = ("val",),
                        version: str = "0.5", normalize: bool = True,
                        kinds: Sequence[str] = REWARD_KINDS) -> list[str]:
    """Writes the rank and distance caches of every split into ``out`` (the reference's file names); returns
    their paths. Features are read as the server reads them (``normalize``: L2, the published default)."""
    os.makedirs(out, exist_ok=True)
    paths = []
    for split in splits:
        dialogues = list(read_split(manual_dir, split, version))
        store = FeatureStore(os.path.join(manual_dir, FEATURES_FILE), split, normalize, expected=len(dialogues))
        try:
            rows = {kind: [cache_row(backend, d, store[d.index], kind) for d in dialogues] for kind in kinds}
        finally:
            store.close()
        for kind, kind_rows in rows.items():
            path = os.path.join(out, cache_file(split, kind))
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(kind_rows, f)
            os.replace(tmp, path)
            paths.append(path)
    return paths


__all__ = ["question_text", "cache_row", "write_reward_caches"]
