"""VisDialEnv over the cached (dataset) backend in every mode, and over the local TF-IDF answerer + guesser."""

import os

import numpy as np
import pytest

from rlds_lang.env import run_episode
from rlds_lang.visdial.backend import (
    CachedBackend,
    LocalBackend,
    Scene,
    TfidfAnswerer,
    turn,
)
from rlds_lang.visdial.data import (
    FEATURES_FILE,
    FeatureStore,
    cache_file,
    load_reward_cache,
    read_split,
)
from rlds_lang.visdial.env import DataQuestionPolicy, VisDialEnv
from rlds_lang.visdial.fixtures import write_fixture
from rlds_lang.visdial.rewards import (
    STOP,
    RewardConfig,
    percentile_score,
    replay_rewards,
)


@pytest.fixture(scope="module")
def manual(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("visdial"))
    write_fixture(folder, {"train": 5, "val": 4}, dim=32, seed=1)
    dialogues = {s: list(read_split(folder, s)) for s in ("train", "val")}
    rows = {s: {k: load_reward_cache(os.path.join(folder, cache_file(s, k))) for k in ("rank", "distance")}
            for s in ("train", "val")}
    return folder, dialogues, rows


def _replay(env, policy, dialogue, stop_after=None):
    env.set_next_dialogue(dialogue)
    policy.questions, policy.stop_after = dialogue.questions, stop_after
    return run_episode(env, policy, seed=0)


@pytest.mark.parametrize("config,stop_after", [
    (RewardConfig("env_stops", yn_kind="hard"), None),
    (RewardConfig("env_stops", yn_kind="conservative", reward_scale=2.0, reward_shift=0.5), None),
    (RewardConfig("10_stop", reward_kind="distance"), None),
    (RewardConfig("agent_stops"), 3),
    (RewardConfig("agent_stops"), 0),
    (RewardConfig("agent_stops"), 10),
])
def test_dataset_replay_matches_published_rewards(manual, config, stop_after):
    _, dialogues, rows = manual
    env = VisDialEnv(dialogues["train"], CachedBackend(rows["train"]), config)
    policy = DataQuestionPolicy()
    for d in dialogues["train"]:
        episode = _replay(env, policy, d, stop_after)
        expected = replay_rewards(config, rows["train"][config.score_kind][d.index], d.answers, stop_after)
        assert episode.rewards == [float(np.float32(r)) for r in expected]
        assert episode.observations[0]["text"] == d.caption
        stopped = stop_after is not None and stop_after < d.rounds
        n = len(expected) - stopped
        assert [o["text"] for o in episode.observations[1:n + 1]] == list(d.answers[:n])
        assert episode.actions[:n] == [q + "?" for q in d.questions[:n]]
        assert len(episode.actions) == n + stopped
        if stopped:
            assert episode.actions[-1] == STOP and episode.observations[-1]["text"] == ""
        meta = episode.metadata
        assert (meta["image_id"], meta["dialogue_index"], meta["split"], meta["mode"]) == (
            d.image_id, d.index, "train", config.mode)


def test_stop_only_in_agent_stops_where_any_action_containing_it_stops(manual):
    _, dialogues, rows = manual
    env = VisDialEnv(dialogues["train"], CachedBackend(rows["train"]), RewardConfig("10_stop"))
    env.set_next_dialogue(dialogues["train"][0])
    env.reset()
    timestep = env.step(STOP)  # an ordinary question outside agent_stops (the reference's actor_stop=False)
    assert not timestep.last() and timestep.observation["text"] == dialogues["train"][0].answers[0]
    env = VisDialEnv(dialogues["train"], CachedBackend(rows["train"]), RewardConfig("agent_stops"))
    env.reset()
    env.step("is it sunny?")
    timestep = env.step("thanks <stop>")
    assert timestep.last() and timestep.reward == 0.0 and timestep.observation["text"] == ""


def test_tfidf_answerer_retrieves_the_answer_to_the_most_similar_question(manual):
    folder, dialogues, _ = manual
    store = FeatureStore(os.path.join(folder, FEATURES_FILE), "train")
    answerer = TfidfAnswerer(dialogues["train"], store.all())
    d = dialogues["train"][2]
    assert answerer.image_of(store[2]) == 2
    for q, a in zip(d.questions, d.answers):
        first = d.questions.index(q)  # repeated questions give the earliest round's answer
        assert answerer.answer(store[2], q + "?") == d.answers[first].lower()
    assert answerer.answer(store[2], "what colour is that " + d.questions[1].split()[-1]) in [x.lower() for x in d.answers]
    # no word in common with any question about the image: every score is 0, the earliest round answers
    unseen = "zyxwv qqqq"
    assert not set(unseen.split()) & {w for q in d.questions for w in q.lower().split()}
    assert answerer.answer(store[2], unseen + "?") == d.answers[0].lower()


def test_local_backend_rewards_are_the_percentile_change_over_the_val_pool(manual):
    folder, dialogues, _ = manual
    val = FeatureStore(os.path.join(folder, FEATURES_FILE), "val")
    pool = val.all()
    answerer = TfidfAnswerer(dialogues["val"], pool)
    rng = np.random.default_rng(0)
    guesses = rng.normal(size=(11, pool.shape[1])).astype(np.float32)

    def guesser(caption, history):  # a fixed guess per round: the rewards are then computable here
        return guesses[len(history) // 2]

    backend = LocalBackend(answerer, guesser, pool)
    env = VisDialEnv(dialogues["val"], backend, RewardConfig("10_stop"), features=val)
    policy = DataQuestionPolicy()
    d = dialogues["val"][1]
    episode = _replay(env, policy, d)
    p = [percentile_score(g, pool[1], pool, true_index=1) for g in guesses]
    assert episode.rewards == pytest.approx([p[t] - p[t - 1] for t in range(1, 11)], abs=1e-6)
    # repeated questions are answered with their earliest round's answer
    assert [o["text"] for o in episode.observations[1:]] == [d.answers[d.questions.index(q)].lower() for q in d.questions]
    scene = Scene(d.caption, pool[1], d)
    history = [turn("question", d.questions[0]), turn("answer", d.answers[0])]
    assert backend.reward(scene, [], "rank") == pytest.approx(p[0])
    published = LocalBackend(answerer, guesser, pool, published_pool=True)  # true image + all 4 val rows
    dists = ((pool.astype(np.float64) - guesses[0]) ** 2).sum(axis=1)
    assert published.reward(scene, [], "rank") == pytest.approx(1 - (1 + (dists < dists[1]).sum()) / 5)
    assert backend.reward(scene, history, "distance") == pytest.approx(
        ((guesses[0] - pool[1]) ** 2).mean() - ((guesses[1] - pool[1]) ** 2).mean(), abs=1e-6)


def test_an_empty_question_is_a_wasted_round_that_reaches_no_backend(manual):
    _, dialogues, rows = manual

    class Refusing(CachedBackend):
        """A backend that, like the protocol's servers, refuses an empty question."""

        def respond(self, scene, history, kind):
            assert all(t["text"].strip() for t in history), "an empty question reached the backend"
            return super().respond(scene, history, kind)

    env = VisDialEnv(dialogues["train"], Refusing(rows["train"]), RewardConfig("10_stop"))
    env.set_next_dialogue(dialogues["train"][0])
    env.reset()
    wasted = env.step("  ")
    assert not wasted.last() and wasted.observation["text"] == "" and wasted.reward == 0.0
    asked = env.step("is it sunny?")     # the next question is the dialogue's first round, as if none was wasted
    assert asked.observation["text"] == dialogues["train"][0].answers[0]
    assert [t["text"] for t in env.history] == ["is it sunny?", dialogues["train"][0].answers[0]]
