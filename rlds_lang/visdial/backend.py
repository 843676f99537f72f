"""Backends of the Visual Dialogue environment: who answers a question and how much it helped the guesser.

A ``Backend`` answers the question that ends a dialogue history and reports the guesser's score change
(``rewards.score_change``), or the guesser's score before any question. Three implementations:

- ``CachedBackend`` (dataset mode, no server): the dialogue's own answer of the round and the published
  reward-cache entry; the question asked is not looked at, so it replays human dialogues exactly.
- ``LocalBackend``: a TF-IDF answerer (``TfidfAnswerer``, scikit-learn) that returns, for the image, the
  dataset answer to the most similar dataset question (optionally in the published bots' vocabulary,
  ``vocabulary.AnswerVocabulary``), a TF-IDF questioner (``TfidfQuestioner``, the published server's
  question bot, ``/fetch_q_bot_response``) that asks the question a similar training dialogue asked at
  that round, and an injected guesser (any callable
  ``(caption, history) -> predicted feature``, e.g. the PyTorch model ``rlds-lang visdial guesser``
  trains) scored against a pool of val features. They stand in for the paper's pretrained answer and
  guesser bots (visdial-rl), which are not available here.
- ``rlds_lang.visdial.http.HttpBackend``: the published server protocol over HTTP.

A history is a list of turns ``{"speaker": "question" | "answer", "text": ...}`` (the protocol's shape).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from rlds_lang.visdial.data import Dialogue
from rlds_lang.visdial.rewards import distance_score, percentile_from_distances, score_change

Turn = Mapping[str, str]
#: a guesser: ``(caption, history of complete rounds) -> predicted image feature``.
Guesser = Callable[[str, Sequence[Turn]], np.ndarray]


class BackendError(RuntimeError):
    """A backend could not answer (server unreachable, bad response); the message says which request."""


@dataclasses.dataclass(frozen=True)
class Scene:
    """What a backend knows of the episode: the caption, the true image feature (if known) and the dialogue."""

    caption: str
    feature: np.ndarray | None = None
    dialogue: Dialogue | None = None


def turn(speaker: str, text: str) -> dict[str, str]:
    """One history entry of the protocol."""
    return {"speaker": speaker, "text": text}


def questions_asked(history: Sequence[Turn]) -> int:
    """How many questions a history holds (the round being answered is this number)."""
    return sum(1 for t in history if t["speaker"] == "question")


class Backend(Protocol):
    """Answers questions and scores the guesser (see the module docstring)."""

    def initial(self, scene: Scene, kind: str) -> float:
        """The guesser's score of kind ``rank`` / ``distance`` before any question (``v0``)."""

    def respond(self, scene: Scene, history: Sequence[Turn], kind: str) -> tuple[str, float]:
        """``(answer, score change)`` for the question that ends ``history``."""


class CachedBackend:
    """Dataset mode: answers and score changes recorded in the data (``rows[kind][dialogue.index]``)."""

    def __init__(self, rows: Mapping[str, Sequence[Sequence[float]]]):
        self.rows = dict(rows)

    def _row(self, scene: Scene, kind: str) -> Sequence[float]:
        if scene.dialogue is None:
            raise BackendError("CachedBackend replays dataset dialogues: the scene needs its dialogue")
        if kind not in self.rows:
            raise BackendError(f"no {kind!r} reward cache was loaded (have {sorted(self.rows)})")
        return self.rows[kind][scene.dialogue.index]

    def initial(self, scene: Scene, kind: str) -> float:
        """The cache row's ``v0``."""
        return float(self._row(scene, kind)[0])

    def respond(self, scene: Scene, history: Sequence[Turn], kind: str) -> tuple[str, float]:
        """The recorded answer of the round being asked and the cache row's change for it."""
        r = questions_asked(history)
        dialogue = scene.dialogue
        if dialogue is None or not 1 <= r <= dialogue.rounds:
            raise BackendError(f"round {r} is not in the recorded dialogue")
        return dialogue.answers[r - 1], float(self._row(scene, kind)[r])


#: how far (L2, relative to the row's norm) a sent feature may be from a pool row and still be that image:
#: a client that L2-normalises with another routine (float32 vs float64 arithmetic, another epsilon) differs
#: from ours in the last bits, about 1e-7 relative; two different images are orders of magnitude further apart.
MATCH_TOLERANCE = 1e-5


class SquaredDistances:
    """Image features ``rows`` [N, dim] prepared for fast squared distances to a vector and lookup of the row a
    vector stands for (exact bytes first, else the nearest row within ``MATCH_TOLERANCE``)."""

    def __init__(self, rows: np.ndarray, tolerance: float = MATCH_TOLERANCE):
        self.rows = np.asarray(rows, np.float64)
        self.norms = (self.rows ** 2).sum(axis=1)
        self.tolerance = float(tolerance)
        self._index: dict[bytes, int] = {}
        for i, row in enumerate(np.asarray(rows, np.float32)):
            self._index.setdefault(row.tobytes(), i)

    def __len__(self) -> int:
        return len(self.rows)

    def to(self, vector: np.ndarray) -> np.ndarray:
        """Squared distance of every row to ``vector`` (``|x|^2 - 2 x.v + |v|^2``, float64)."""
        v = np.asarray(vector, np.float64)
        return np.maximum(self.norms - 2.0 * (self.rows @ v) + float(v @ v), 0.0)

    def index_of(self, vector: np.ndarray) -> int | None:
        """The row ``vector`` stands for: the first row equal to it as float32, else the nearest row when it is
        within ``tolerance`` x the row's norm (the same image normalised by another routine), else ``None``."""
        exact = self._index.get(np.asarray(vector, np.float32).tobytes())
        if exact is not None or not len(self.rows):
            return exact
        dists = self.to(vector)
        nearest = int(dists.argmin())
        if math.sqrt(float(dists[nearest])) <= self.tolerance * max(math.sqrt(float(self.norms[nearest])), 1e-30):
            return nearest
        return None


class TfidfAnswerer:
    """Answers with the dataset answer, for the same image, to the most similar dataset question.

    The image is the dialogue whose feature is nearest to the given one (an exact match for dataset
    images). Similarity is cosine over TF-IDF word 1-2 grams (scikit-learn) fitted on every question.
    Answers come back lower-cased, as the published bots answer, or through ``normalize`` (e.g.
    ``AnswerVocabulary.normalize``: rare words as ``UNK``). A question sharing no word with the image's
    questions scores 0 everywhere and gets the earliest round's answer (ties go to the earliest).
    """

    def __init__(self, dialogues: Sequence[Dialogue], features: np.ndarray,
                 normalize: Callable[[str], str] | None = None):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if len(dialogues) != len(features) or not dialogues:
            raise ValueError(f"TfidfAnswerer needs one feature row per dialogue, got {len(dialogues)} dialogues "
                             f"and {len(features)} rows")
        self.features = SquaredDistances(features)
        self.questions = [list(d.questions) for d in dialogues]
        self.answers = [[(normalize or str.lower)(a) for a in d.answers] for d in dialogues]
        self.vectorizer = TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b")
        self.vectorizer.fit([q for qs in self.questions for q in qs] or ["empty"])
        self._matrices = [self.vectorizer.transform(qs) for qs in self.questions]

    def image_of(self, feature: np.ndarray) -> int:
        """Index of the dialogue whose image feature is nearest to ``feature``."""
        exact = self.features.index_of(feature)
        return exact if exact is not None else int(self.features.to(feature).argmin())

    def answer(self, feature: np.ndarray, question: str) -> str:
        """The answer to the most similar question about the nearest image (ties: the earliest round)."""
        i = self.image_of(feature)
        if not self.questions[i]:
            return "UNK"
        scores = (self._matrices[i] @ self.vectorizer.transform([question.rstrip("?")]).T).toarray().ravel()
        return self.answers[i][int(scores.argmax())]


class TfidfQuestioner:
    """The question a similar training dialogue asked at the same round: a retrieval question bot.

    For a caption and ``r`` complete rounds, the ``candidates`` training dialogues with the most similar
    captions (cosine over TF-IDF word 1-2 grams, scikit-learn) that have a round ``r + 1`` are compared
    on their caption and first ``r`` rounds with the given ones, and the best one's question ``r + 1`` is
    returned, lower-cased, without ``?`` (the dataset's form; ties go to the earliest dialogue). It
    stands in for the published server's supervised question bot, so a user can evaluate a dataset-like
    questioner against the same answerer and guesser as a trained agent.
    """

    def __init__(self, dialogues: Sequence[Dialogue], candidates: int = 50):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not dialogues:
            raise ValueError("TfidfQuestioner needs at least one dialogue")
        self.dialogues = list(dialogues)
        self.candidates = int(candidates)
        self.vectorizer = TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b")
        self.vectorizer.fit([self._context(d.caption, d.questions, d.answers) for d in self.dialogues])
        self._captions = self.vectorizer.transform([d.caption for d in self.dialogues])
        self._rounds = np.array([d.rounds for d in self.dialogues])

    @staticmethod
    def _context(caption: str, questions: Sequence[str], answers: Sequence[str]) -> str:
        return " ".join([caption, *(f"{q} {a}" for q, a in zip(questions, answers))])

    def question(self, caption: str, history: Sequence[Turn]) -> str:
        """The next question after ``history`` (complete rounds) about an image captioned ``caption``."""
        r = questions_asked(history)
        able = np.flatnonzero(self._rounds > r)
        if not len(able):
            raise BackendError(f"no training dialogue has a round {r + 1}")
        by_caption = (self._captions[able] @ self.vectorizer.transform([caption]).T).toarray().ravel()
        keep = able[np.argsort(-by_caption, kind="stable")[:self.candidates]]
        keep.sort()
        asked = [t["text"].rstrip("?") for t in history if t["speaker"] == "question"]
        told = [t["text"] for t in history if t["speaker"] == "answer"]
        query = self.vectorizer.transform([self._context(caption, asked, told)])
        contexts = self.vectorizer.transform([self._context(self.dialogues[i].caption, self.dialogues[i].questions[:r],
                                                            self.dialogues[i].answers[:r]) for i in keep])
        best = keep[int((contexts @ query.T).toarray().ravel().argmax())]
        return self.dialogues[best].questions[r].lower().rstrip("?")


class LocalBackend:
    """A ``TfidfAnswerer`` plus an injected guesser, scored against ``pool`` (the val image features).

    The true image counts once in the ranking pool: when its feature is a pool row (the same bytes, or the
    nearest row within ``MATCH_TOLERANCE``, as a client normalising with another routine sends it) it is
    ranked there, else it is added (``rewards.percentile_score``). ``published_pool=True`` ranks it as the reference
    server does, prepended to the whole pool (``rewards.percentile_from_distances``). ``questioner``
    (optional) asks the questions of ``/fetch_q_bot_response``.
    """

    def __init__(self, answerer: TfidfAnswerer, guesser: Guesser, pool: np.ndarray, published_pool: bool = False,
                 questioner: TfidfQuestioner | None = None):
        self.answerer = answerer
        self.questioner = questioner
        self.guesser = guesser
        self.pool = SquaredDistances(pool)
        self.published_pool = bool(published_pool)

    @property
    def feature_dim(self) -> int:
        """Size of an image feature."""
        return int(self.pool.rows.shape[1])

    def score(self, scene: Scene, history: Sequence[Turn], kind: str) -> float:
        """The guesser's score (percentile or distance) after the complete rounds of ``history``."""
        if scene.feature is None:
            raise BackendError("LocalBackend needs the true image feature")
        predicted = np.asarray(self.guesser(scene.caption, list(history)), np.float32)
        if kind == "distance":
            return distance_score(predicted, scene.feature)
        if kind != "rank":
            raise BackendError(f"unknown score kind {kind!r}")
        index = self.pool.index_of(scene.feature)
        dists = self.pool.to(predicted)
        if index is not None:
            return percentile_from_distances(dists, float(dists[index]), index, self.published_pool)
        true_dist = float(((np.asarray(scene.feature, np.float64) - predicted) ** 2).sum())
        return percentile_from_distances(dists, true_dist, None, self.published_pool)

    def initial(self, scene: Scene, kind: str) -> float:
        """The guesser's score from the caption alone."""
        return self.score(scene, [], kind)

    def respond(self, scene: Scene, history: Sequence[Turn], kind: str) -> tuple[str, float]:
        """The answerer's reply and the guesser's score change that its round brings."""
        answer = self.answer(scene, history)
        before = self.score(scene, history[:-1], kind)
        after = self.score(scene, [*history, turn("answer", answer)], kind)
        return answer, score_change(kind, before, after)

    def answer(self, scene: Scene, history: Sequence[Turn]) -> str:
        """The answerer's reply to the question ending ``history``."""
        if not history or history[-1]["speaker"] != "question":
            raise BackendError("the history must end with the new question")
        if scene.feature is None:
            raise BackendError("LocalBackend needs the true image feature")
        return self.answerer.answer(scene.feature, history[-1]["text"])

    def question(self, caption: str, history: Sequence[Turn]) -> str:
        """The question bot's next question after ``history`` (complete rounds)."""
        if self.questioner is None:
            raise BackendError("this backend has no question bot (give LocalBackend a questioner)")
        return self.questioner.question(caption, history)

    def reward(self, scene: Scene, history: Sequence[Turn], kind: str) -> float:
        """``v0`` for an empty history, else the change made by its last complete round."""
        if not history:
            return self.initial(scene, kind)
        return score_change(kind, self.score(scene, history[:-2], kind), self.score(scene, history, kind))


def build_local_backend(manual_dir: str, guesser: Guesser, version: str = "0.5",
                        answer_splits: Sequence[str] = ("train", "val"), pool_split: str = "val",
                        normalize: bool = True, published_pool: bool = False, unk_below: int = 0) -> LocalBackend:
    """A ``LocalBackend`` from a manual folder: the answerer knows the images of ``answer_splits`` (those
    present), the ranking pool is ``pool_split``'s features (``published_pool``: see ``LocalBackend``),
    the question bot is fitted on the first of ``answer_splits``. ``unk_below`` > 0 puts answers in the
    vocabulary of words seen that often in the questions and answers of ``answer_splits`` (the published
    bots: 5, ``vocabulary.PUBLISHED_MIN_COUNT``); 0 keeps the dataset answers, lower-cased."""
    import os

    from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, dialogue_file, read_split

    path = os.path.join(manual_dir, FEATURES_FILE)
    dialogues: list[Dialogue] = []
    rows = []
    for split in answer_splits:
        if not os.path.exists(os.path.join(manual_dir, dialogue_file(split, version))):
            continue
        found = list(read_split(manual_dir, split, version))
        store = FeatureStore(path, split, normalize, expected=len(found))
        dialogues += found
        rows.append(store.all())
        store.close()
    pool_store = FeatureStore(path, pool_split, normalize)
    pool = pool_store.all()
    pool_store.close()
    if not dialogues:
        raise FileNotFoundError(f"no dialogues of {list(answer_splits)} (visdial_{version}_<split>.json) in {manual_dir}")
    normalizer = None
    if unk_below > 0:
        from rlds_lang.visdial.vocabulary import AnswerVocabulary

        normalizer = AnswerVocabulary.from_texts((q for d in dialogues for q in d.questions),
                                                 (a for d in dialogues for a in d.answers), unk_below).normalize
    first = [d for d in dialogues if d.split == dialogues[0].split]
    return LocalBackend(TfidfAnswerer(dialogues, np.concatenate(rows), normalizer), guesser, pool, published_pool,
                        TfidfQuestioner(first))


__all__ = ["Backend", "BackendError", "CachedBackend", "Guesser", "LocalBackend", "MATCH_TOLERANCE", "Scene",
           "SquaredDistances",
           "TfidfAnswerer", "TfidfQuestioner", "Turn",
           "build_local_backend", "questions_asked", "turn"]
