"""Our reward caches (``trainers.tasks.visdial_caches``) against the reference's cache procedure, re-implemented from
its code and run on our server: ``scripts/data/vis_dial/cache_dataset_reward.py`` loads the split's JSON, builds each
dialogue's events with ``Scene.from_json`` (every question with a ``?`` appended), normalises the image features with
sklearn's L2 ``normalize``, and posts ``/fetch_reward_rank`` (``/fetch_reward`` for the distance cache) once with an
empty history and once per answer with the events up to it. ``p0``, every round's value and the round at which
``env_stops`` stops (``PercentileCutoffRule(1.0, 0.5)``, ``Event.is_final``) must agree.

The server is started on a free 127.0.0.1 port by the test and stops at its end.
"""

import json
import os

import httpx
import numpy as np
import pytest

from rlds_lang.visdial.data import FEATURES_FILE, ROUNDS, cache_file, dialogue_file
from rlds_lang.visdial.server import BackendServer
from tests.test_visdial_server import setup  # noqa: F401  (the module fixture: data, trained guesser, backend)
from trainers.tasks.visdial_caches import question_text, write_reward_caches

#: the reference's endpoint of each cache kind (config/vis_dial/cache_dataset_reward.yaml's ``reward_url``).
ENDPOINTS = {"rank": "/fetch_reward_rank", "distance": "/fetch_reward"}


def reference_features(folder: str, split: str) -> np.ndarray:
    """``VisDialogueData``'s features: the split's HDF5 rows, L2-normalised row by row (sklearn's ``normalize``)."""
    import h5py

    with h5py.File(os.path.join(folder, FEATURES_FILE), "r") as h5:
        raw = np.asarray(h5[f"images_{split}"])
    return raw / np.linalg.norm(raw, axis=1, keepdims=True).astype(raw.dtype)


def reference_cache(http: httpx.Client, folder: str, split: str, kind: str, mark: str = "?") -> list[list[float]]:
    """``cache_reward`` of the reference: per dialogue, the reward of the empty history, then of the history up to
    each answer (``Scene.from_json``'s events: ``question + mark``, ``answer``)."""
    with open(os.path.join(folder, dialogue_file(split, "0.5")), encoding="utf-8") as f:
        data = json.load(f)
    features = reference_features(folder, split)
    rows = []
    for scene, feature in zip(data, features):
        events = [event for round_ in scene["dialog"] for event in (
            {"speaker": "question", "text": round_["question"] + mark}, {"speaker": "answer", "text": round_["answer"]})]
        histories = [[]] + [events[:2 * (r + 1)] for r in range(len(scene["dialog"]))]
        rows.append([http.post(ENDPOINTS[kind], data={"history": json.dumps(history), "caption": scene["caption"],
                                                      "img_features": json.dumps(feature.tolist())}).json()
                     for history in histories])
    return rows


def reference_stop_round(row: list[float], goal: float = 1.0, fraction: float = 0.5) -> int:
    """The round (1-based) whose answer ``env_stops`` ends at: the first where ``PercentileCutoffRule`` fires on the
    summed progress (``sum(progress) / (goal - p0) >= fraction``), else the 10th."""
    for r in range(1, ROUNDS + 1):
        if goal != row[0] and sum(row[1:r + 1]) / (goal - row[0]) >= fraction:
            return r
    return ROUNDS


def test_our_caches_are_the_reference_procedure_on_our_server(setup, tmp_path):  # noqa: F811
    folder, _, _, _, backend = setup
    written = write_reward_caches(backend, folder, str(tmp_path), splits=("val",))
    assert sorted(os.path.basename(p) for p in written) == sorted(cache_file("val", k) for k in ENDPOINTS)
    with BackendServer(backend) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        theirs = {kind: reference_cache(http, folder, "val", kind) for kind in ENDPOINTS}
        without_mark = reference_cache(http, folder, "val", "rank", mark="")
    assert not server.thread.is_alive()
    for kind in ENDPOINTS:
        with open(os.path.join(tmp_path, cache_file("val", kind))) as f:
            ours = json.load(f)
        assert len(ours) == len(theirs[kind]) == 4 and all(len(row) == ROUNDS + 1 for row in ours)
        assert [row[0] for row in ours] == pytest.approx([row[0] for row in theirs[kind]], abs=1e-12)  # p0
        np.testing.assert_allclose(ours, theirs[kind], rtol=0, atol=1e-12, err_msg=kind)  # every round
    with open(os.path.join(tmp_path, cache_file("val", "rank"))) as f:
        ours = json.load(f)
    assert [reference_stop_round(row) for row in ours] == [reference_stop_round(row) for row in theirs["rank"]]
    # the '?' matters on this server: scored without it, the rounds come out otherwise
    assert not np.allclose(without_mark, theirs["rank"], rtol=0, atol=1e-12)


def test_questions_are_sent_with_the_mark_the_reference_appends():
    assert question_text("what color is the dog") == "what color is the dog?"
    assert question_text("is it?") == "is it??"  # unconditionally, as Scene.from_json
