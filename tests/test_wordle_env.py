"""WordleEnv: dm_env conformance, rewards and termination, hidden-word modes, invalid guesses."""

import unittest

import dm_env
import pytest
from dm_env import test_utils

from rlds_lang.env import InvalidActionError, run_episode
from rlds_lang.wordle import game
from rlds_lang.wordle.env import WordleEnv


class WordleConformanceTest(test_utils.EnvironmentTestMixin, unittest.TestCase):
    """dm_env's own conformance suite, with valid guesses as actions."""

    def make_object_under_test(self):
        return WordleEnv(seed=3)

    def make_action_sequence(self):
        yield from ["crane", "slate", "moist", "abide", "fight", "zesty"] * 4

    def make_action(self):
        return "crane"


def test_rewards_and_win():
    env = WordleEnv(seed=0)
    env.set_next_answer("abide")
    ts = env.reset()
    assert ts.first() and ts.observation["text"] == "" and list(ts.observation["feedback"]) == [-1] * 5
    ts = env.step("speed")
    assert ts.reward == -1.0 and ts.mid() and ts.observation["text"] == "⬛⬛🟨⬛🟨"
    assert ts.observation["turn"] == 1
    ts = env.step("abide")
    assert ts.last() and ts.reward == 0.0 and ts.discount == 0.0
    assert env.episode_metadata()["answer"] == "abide"


def test_loss_after_six_guesses():
    env = WordleEnv(seed=0)
    env.set_next_answer("abide")
    env.reset()
    steps = [env.step(w) for w in ["crane", "slate", "moist", "fight", "zesty", "lunch"]]
    assert [s.reward for s in steps] == [-1.0] * 6
    assert steps[-1].last() and not any(s.last() for s in steps[:-1])


@pytest.mark.parametrize("guess, why", [("cran", "5 lowercase"), ("CRANE", "5 lowercase"), ("cr4ne", "5 lowercase"),
                                        ("zzzzz", "not in the guess list"), ("crâne", "5 lowercase")])
def test_invalid_guesses_raise(guess, why):
    env = WordleEnv(seed=0)
    env.reset()
    with pytest.raises(InvalidActionError, match=why) as err:
        env.step(guess)
    assert repr(guess) in str(err.value)


def test_unenforced_guess_list_accepts_any_letters():
    env = WordleEnv(seed=0, enforce_guess_list=False)
    env.set_next_answer("abide")
    env.reset()
    assert env.step("zzzzz").observation["text"] == "⬛⬛⬛⬛⬛"


def test_adversarial_resample_keeps_answer_consistent():
    env = WordleEnv(seed=5, mode="adversarial_resample", rule="ilql")
    env.reset()
    history = []
    for guess in ["crane", "slate", "moist", "abide", "fight"]:
        ts = env.step(guess)
        history.append((guess, tuple(int(c) for c in ts.observation["feedback"])))
        if ts.last():
            break
        # the redrawn answer explains every feedback so far
        assert all(game.colour(g, env.answer, "ilql") == p for g, p in history)
    assert env.episode_metadata()["mode"] == "adversarial_resample"


def test_seeded_answers_are_deterministic():
    a, b = WordleEnv(seed=11), WordleEnv(seed=11)
    assert [(a.reset(), a.answer)[1] for _ in range(5)] == [(b.reset(), b.answer)[1] for _ in range(5)]


class _Scripted:
    name = "scripted"

    def __init__(self, words):
        self.words = words

    def reset(self, seed):
        pass

    def params(self):
        return {"words": self.words}

    def act(self, observations, actions):
        assert len(observations) == len(actions) + 1
        return self.words[len(actions)]


def test_run_episode_collects_the_game():
    env = WordleEnv(seed=0)
    env.set_next_answer("abide")
    ep = run_episode(env, _Scripted(["speed", "abbey", "abide"]))
    assert ep.actions == ["speed", "abbey", "abide"]
    assert ep.rewards == [-1.0, -1.0, 0.0] and ep.total_reward == -2.0
    assert [o["text"] for o in ep.observations] == ["", "⬛⬛🟨⬛🟨", "🟩🟩⬛🟨⬛", "🟩🟩🟩🟩🟩"]
    assert isinstance(env.reset(), dm_env.TimeStep)
