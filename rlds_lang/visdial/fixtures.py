"""Small synthetic Visual Dialogue data in the exact published layouts (tests, builder dummy data, demos).

``write_fixture(folder)`` writes, for every split, ``visdial_<version>_<split>.json`` (v0.5: strings inline;
v1.0: question/answer tables), one ``data_img.h5`` with ``images_<split>`` [N, dim] float32 rows, and the
two reward caches (``<split>_rank_reward_cache1.json``, ``<split>_reward_cache2.json``; rows of 11 floats).
Everything is drawn from ``numpy.random.default_rng(seed)``: the same arguments give the same bytes.
The features are sparse (a few non-zero entries per row, gzip-compressed), so a 4096-wide file stays small.
The cache values are synthetic (multiples of 1/64, exactly representable in float32), not a guesser's.

Example::

    from rlds_lang.visdial.fixtures import write_fixture
    write_fixture("/tmp/visdial_manual", sizes={"train": 6, "val": 4, "test": 3})
"""

from __future__ import annotations

import json
import os
from typing import Mapping

import numpy as np

from rlds_lang.visdial.data import FEATURES_FILE, ROUNDS, cache_file, dialogue_file

OBJECTS = ("dog", "cat", "car", "man", "woman", "bus", "tree", "pizza", "kite", "horse")
COLORS = ("red", "blue", "white", "black", "green", "brown")
#: (question template, answer kinds) of the synthetic dialogues; ``{o}`` is an object.
QUESTIONS = (("is there a {o}", "yn"), ("what color is the {o}", "color"), ("how many people are there", "count"),
             ("is it sunny", "yn"), ("is the photo in color", "yn"), ("can you see the sky", "yn"),
             ("what is the {o} doing", "doing"), ("is it indoors", "yn"), ("any animals", "yn"),
             ("what is in the background", "object"))
DOING = ("sitting", "standing", "running", "not sure", "looks like eating")
DEFAULT_SIZES = {"train": 6, "val": 4, "test": 3}


def _answer(kind: str, rng: np.random.Generator) -> str:
    if kind == "yn":
        return str(rng.choice(["yes", "no", "yes it is", "i think so", "no , it is not"]))
    if kind == "color":
        return str(rng.choice(COLORS))
    if kind == "count":
        return str(rng.choice(["1", "2", "3", "none", "i can't tell"]))
    if kind == "doing":
        return str(rng.choice(DOING))
    return f"a {rng.choice(OBJECTS)}"


def make_dialogues(n: int, rng: np.random.Generator, start_image_id: int = 1000) -> list[dict]:
    """``n`` dialogues in the v0.5 layout (strings inline, 100 options with the answer at ``gt_index``)."""
    out = []
    for i in range(n):
        obj = str(rng.choice(OBJECTS))
        dialog = []
        for r in range(ROUNDS):
            template, kind = QUESTIONS[int(rng.integers(len(QUESTIONS)))] if r else QUESTIONS[0]
            answer = _answer(kind, rng)
            gt = int(rng.integers(100))
            options = [f"option {k}" for k in range(100)]
            options[gt] = answer
            dialog.append({"question": template.format(o=obj), "answer": answer, "options": options, "gt_index": gt})
        caption = f"a {rng.choice(COLORS)} {obj} next to a {rng.choice(OBJECTS)}"
        out.append({"image_id": start_image_id + i, "caption": caption, "dialog": dialog})
    return out


def to_v1(dialogues: list[dict], split: str) -> dict:
    """The same dialogues in the v1.0 layout (strings by index into ``data.questions`` / ``data.answers``)."""
    questions: dict[str, int] = {}
    answers: dict[str, int] = {}
    dialogs = []
    for d in dialogues:
        rounds = []
        for turn in d["dialog"]:
            q = questions.setdefault(turn["question"], len(questions))
            options = [answers.setdefault(o, len(answers)) for o in turn["options"]]
            rounds.append({"question": q, "answer": answers[turn["answer"]], "answer_options": options,
                           "gt_index": turn["gt_index"]})
        dialogs.append({"image_id": d["image_id"], "caption": d["caption"], "dialog": rounds})
    return {"version": "1.0", "split": split,
            "data": {"questions": list(questions), "answers": list(answers), "dialogs": dialogs}}


def make_features(n: int, dim: int, rng: np.random.Generator, nonzero: int = 8) -> np.ndarray:
    """[n, dim] float32 sparse positive rows (like ReLU activations)."""
    rows = np.zeros((n, dim), np.float32)
    for i in range(n):
        cols = rng.choice(dim, size=min(nonzero, dim), replace=False)
        rows[i, cols] = rng.integers(1, 64, size=len(cols)) / 8.0
    return rows


def make_cache_rows(n: int, rng: np.random.Generator, kind: str) -> list[list[float]]:
    """``n`` rows ``[v0, d1..d10]``: rank rows keep v0 + running sum in [0, 1]; values are multiples of 1/64."""
    rows = []
    for _ in range(n):
        if kind == "rank":
            v0 = int(rng.integers(8, 40)) / 64
            steps = rng.integers(-2, 6, size=ROUNDS) / 64
            p = np.clip(v0 + np.cumsum(steps), 0.0, 1.0)
            deltas = np.diff(np.concatenate([[v0], p]))
        else:
            v0 = int(rng.integers(64, 128)) / 64
            deltas = rng.integers(-2, 6, size=ROUNDS) / 64
        rows.append([float(v0), *map(float, deltas)])
    return rows


def write_fixture(folder: str, sizes: Mapping[str, int] | None = None, version: str = "0.5", dim: int = 4096,
                  seed: int = 0) -> dict[str, list[dict]]:
    """Writes a manual folder in the published layout; returns the v0.5-style dialogues of each split."""
    import h5py

    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    written = {}
    with h5py.File(os.path.join(folder, FEATURES_FILE), "w") as h5:
        image_id = 1000
        for split, n in sizes.items():
            dialogues = make_dialogues(n, rng, image_id)
            image_id += n
            written[split] = dialogues
            payload = dialogues if version == "0.5" else to_v1(dialogues, split)
            with open(os.path.join(folder, dialogue_file(split, version)), "w", encoding="utf-8") as f:
                json.dump(payload, f)
            h5.create_dataset(f"images_{split}", data=make_features(n, dim, rng), compression="gzip")
            for kind in ("rank", "distance"):
                with open(os.path.join(folder, cache_file(split, kind)), "w", encoding="utf-8") as f:
                    json.dump(make_cache_rows(n, rng, kind), f)
    return written


__all__ = ["DEFAULT_SIZES", "make_cache_rows", "make_dialogues", "make_features", "to_v1", "write_fixture"]
