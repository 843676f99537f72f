"""The question bot (``/fetch_q_bot_response``) and the published bots' answer vocabulary (UNK, spacing)."""

import json

import httpx
import numpy as np
import pytest

from rlds_lang.env import run_episode
from rlds_lang.visdial.backend import (
    BackendError,
    TfidfAnswerer,
    TfidfQuestioner,
    build_local_backend,
    turn,
)
from rlds_lang.visdial.data import Dialogue, read_split
from rlds_lang.visdial.env import BotQuestionPolicy, VisDialEnv
from rlds_lang.visdial.fixtures import write_fixture
from rlds_lang.visdial.http import HttpBackend
from rlds_lang.visdial.rewards import RewardConfig
from rlds_lang.visdial.server import BackendServer
from rlds_lang.visdial.vocabulary import UNK, AnswerVocabulary, join_tokens, word_tokens


def _dialogue(index, caption, questions, answers):
    return Dialogue("train", index, 100 + index, caption, tuple(questions), tuple(answers))


DIALOGUES = [
    _dialogue(0, "a dog on a red sofa", ["is the dog big", "what colour is it", "any people"], ["yes", "brown", "no"]),
    _dialogue(1, "a man riding a horse on a beach", ["is it sunny", "is the horse brown", "any birds"],
              ["yes", "no, it is white", "i can't see any"]),
    _dialogue(2, "two dogs playing in the snow", ["are the dogs big", "is it snowing", "what breed"],
              ["no", "yes", "huskies"]),
]


def test_word_tokens_split_like_the_treebank_and_join_with_the_server_repairs():
    assert word_tokens("I can't see, it's dark?") == ["i", "ca", "n't", "see", ",", "it", "'s", "dark", "?"]
    assert word_tokens("Don't know") == ["do", "n't", "know"]
    assert join_tokens(["i", "ca", "n't", "see", ",", "it", "'s", "dark", "?"]) == "i can't see, it's dark?"
    assert join_tokens(["do", "n't", "know"]) == "don't know"
    assert join_tokens(["it", "is", "n't"]) == "it isn't"


def test_answer_vocabulary_counts_questions_and_answers_and_puts_rare_words_to_unk():
    vocab = AnswerVocabulary.from_texts(["is it red", "is it blue"], ["yes it is", "no it is red", "Yes"],
                                        min_count=2)
    # counts: is 4, it 4, ? 2, red 2, yes 2 (case folded); blue, no: 1
    assert {"is", "it", "?", "red", "yes", UNK} == set(vocab.words) and len(vocab) == 6
    assert vocab.normalize("No, it is RED") == f"{UNK} {UNK} it is red"
    assert vocab.normalize("yes it is blue") == f"yes it is {UNK}"
    with pytest.raises(ValueError, match="min_count"):
        AnswerVocabulary.from_texts([], [], min_count=0)


def test_answerer_speaks_the_vocabulary_when_asked():
    features = np.eye(3, dtype=np.float32)
    vocab = AnswerVocabulary.from_texts([q for d in DIALOGUES for q in d.questions],
                                        [a for d in DIALOGUES for a in d.answers], min_count=2)
    plain = TfidfAnswerer(DIALOGUES, features)
    unk = TfidfAnswerer(DIALOGUES, features, vocab.normalize)
    assert plain.answer(features[1], "is the horse brown?") == "no, it is white"
    assert unk.answer(features[1], "is the horse brown?") == f"no {UNK} it is {UNK}"  # "," and "white" seen once
    assert unk.answer(features[1], "is it sunny?") == "yes"


def test_questioner_asks_the_round_of_the_most_similar_training_dialogue():
    bot = TfidfQuestioner(DIALOGUES)
    assert bot.question("a dog on a red sofa", []) == "is the dog big"
    assert bot.question("a man riding a horse", []) == "is it sunny"
    # round 2 after a history that matches dialogue 2 better than dialogue 0 (same caption words "dogs")
    history = [turn("question", "are the dogs big?"), turn("answer", "no")]
    assert bot.question("dogs in the snow", history) == "is it snowing"
    # a caption sharing no word: ties go to the earliest dialogue
    assert bot.question("zzz", []) == "is the dog big"
    rounds = [turn("question", "q"), turn("answer", "a")] * 3
    with pytest.raises(BackendError, match="round 4"):
        bot.question("a dog", rounds)


def test_question_bot_over_http_plays_episodes_like_the_local_backend(tmp_path):
    folder = str(tmp_path / "visdial")
    write_fixture(folder, {"train": 6, "val": 3}, dim=8, seed=4)
    features = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    guesser = lambda caption, history: features[len(history) // 2 % 3]  # noqa: E731 - a fixed, history-driven guess
    backend = build_local_backend(folder, guesser, unk_below=2)
    val = list(read_split(folder, "val"))
    train = list(read_split(folder, "train"))
    assert backend.question(train[0].caption, []) == train[0].questions[0].lower().rstrip("?")
    store = {i: f for i, f in enumerate(np.asarray(backend.pool.rows, np.float32))}

    def play(ask, answerer):
        env = VisDialEnv(val, answerer, RewardConfig("10_stop"), features=store, seed=0)
        return run_episode(env, BotQuestionPolicy(ask), seed=3)

    local = play(backend.question, backend)
    with BackendServer(backend) as server:
        client = HttpBackend(server.url)
        remote = play(client.question, client)
        with httpx.Client(base_url=server.url, timeout=30) as http:
            ends_with_question = json.dumps([turn("question", "q")])
            response = http.post("/fetch_q_bot_response", data={"history": ends_with_question, "caption": "c"})
            assert response.status_code == 422 and "complete question/answer rounds" in response.json()["detail"]
            assert http.post("/fetch_q_bot_response", data={"history": "[]", "caption": "c",
                                                             "generation_kwargs": "[1]"}).status_code == 422
        client.close()
    assert not server.thread.is_alive()
    assert local.actions == remote.actions and local.observations == remote.observations
    assert local.rewards == remote.rewards and len(local.actions) == 10
    assert all(a.endswith("?") for a in local.actions)
    # unk_below=2: every answer the server gave is made of words seen at least twice in train/val, or UNK
    vocab = AnswerVocabulary.from_texts([q for d in train + val for q in d.questions],
                                        [a for d in train + val for a in d.answers], min_count=2)
    said = [w for o in local.observations[1:] for w in word_tokens(o["text"])]
    assert said and all(w in vocab for w in said)
