"""Tests of trainers.evaluation.wordle: paired seeded games, statistics against numpy, lockstep batching that does not
change results, invalid actions, the comparison table, the plot and the JSON round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from rlds_lang.tokenizers import wordle_tokenizer
from rlds_lang.wordle.policies import OptimalPolicy, RandomMixturePolicy
from rlds_lang.wordle.words import official_answers, word_list_from
from trainers.core.model import ModelConfig, build_language_model
from trainers.core.policy import LanguageModelPolicy
from trainers.evaluation.stats import paired_difference
from trainers.evaluation.wordle import (
    EvalConfig,
    EvalResult,
    answer_schedule,
    evaluate,
    load_results,
    plot_results,
    results_table,
    save_results,
    torch_threads,
)

ANSWERS = ["pleat", "crane", "tolls", "abide", "speed"]
GUESSES = ANSWERS + ["mound", "fjord", "vinyl", "quirk", "gawky", "ebony", "salet"]


@pytest.fixture(scope="module")
def optimal_30() -> EvalResult:
    return evaluate(OptimalPolicy(), EvalConfig(games=30, seed=3), progress=False)


@pytest.fixture(scope="module")
def small_lists(tmp_path_factory) -> dict[str, str]:
    """A 5-answer / 12-guess game, so that even an untrained LM wins some games and results vary."""
    folder = tmp_path_factory.mktemp("lists")
    (folder / "answers.txt").write_text("\n".join(ANSWERS) + "\n")
    (folder / "guesses.txt").write_text("\n".join(GUESSES) + "\n")
    return {"answers": str(folder / "answers.txt"), "guesses": str(folder / "guesses.txt")}


@pytest.fixture(scope="module")
def lm():
    tok = wordle_tokenizer()
    torch.manual_seed(0)
    return build_language_model(ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=128), tok.vocab_size,
                                pad_id=tok.pad_id)


def test_optimal_policy_statistics(optimal_30):
    r = optimal_30
    assert r.games == 30 and r.invalid == 0 and r.name == "optimal"
    assert r.win_rate == 1.0 and r.win_rate_stderr == 0.0
    assert 3.0 <= r.mean_guesses <= 4.0
    np.testing.assert_array_equal(r.rewards, 1.0 - r.guesses)  # -1 per guess but the winning one
    assert r.mean_reward == pytest.approx(np.mean(r.rewards))
    assert r.stderr == pytest.approx(np.std(r.rewards, ddof=1) / np.sqrt(30))
    assert r.stderr > 0
    # game i starts from answer i of the schedule, and the optimal policy's last guess is that answer
    assert r.answers == answer_schedule(official_answers(), 30, seed=3)
    assert [actions[-1] for actions in r.actions] == r.answers
    assert r.params["guess_pool"] == "all" and r.config["games"] == 30 and r.seconds > 0


def test_agents_with_the_same_config_play_the_same_games(optimal_30):
    other = evaluate(RandomMixturePolicy(prob_smart=0.8), EvalConfig(games=30, seed=3), name="mix", progress=False)
    assert other.answers == optimal_30.answers and other.name == "mix"
    wins = other.wins
    assert [a[-1] for a, w in zip(other.actions, wins) if w] == [x for x, w in zip(other.answers, wins) if w]
    shifted = evaluate(OptimalPolicy(), EvalConfig(games=30, seed=4), progress=False)
    assert shifted.answers != optimal_30.answers
    # scripted policies are seeded per game: the same config replays the same games
    again = evaluate(RandomMixturePolicy(prob_smart=0.8), EvalConfig(games=30, seed=3), name="mix", progress=False)
    assert again.actions == other.actions


def test_answer_schedule_cycles_through_permutations():
    words = word_list_from(ANSWERS, "five")
    schedule = answer_schedule(words, 12, seed=0)
    assert sorted(schedule[:5]) == sorted(ANSWERS) and sorted(schedule[5:10]) == sorted(ANSWERS)
    assert schedule == answer_schedule(words, 12, seed=0) and schedule != answer_schedule(words, 12, seed=1)


@pytest.mark.parametrize("greedy", [True, False])
def test_lockstep_batches_do_not_change_results(lm, small_lists, greedy):
    tok = wordle_tokenizer()
    agent = LanguageModelPolicy(lm, tok, greedy=greedy, allowed_actions=GUESSES, name="lm")
    one = evaluate(agent, EvalConfig(games=40, batch_games=1, **small_lists), progress=False)
    many = evaluate(agent, EvalConfig(games=40, batch_games=64, **small_lists), progress=False)
    some = evaluate(agent, EvalConfig(games=40, batch_games=7, **small_lists), progress=False)
    assert one.actions == many.actions == some.actions
    np.testing.assert_array_equal(one.rewards, many.rewards)
    np.testing.assert_array_equal(one.wins, some.wins)
    assert one.invalid == 0 and 0 < one.win_rate < 1  # the results are not trivially constant
    assert all(a in GUESSES for game in one.actions for a in game)


def test_invalid_actions_lose_the_game(lm):
    class Garbage:
        """A policy whose second guess is not a word."""
        name = "garbage"

        def reset(self, seed: int) -> None:
            pass

        def act(self, observations, actions) -> str:
            return "crane" if not actions else "xx"

        def params(self) -> dict:
            return {}

    r = evaluate(Garbage(), EvalConfig(games=6, seed=1), progress=False)
    assert r.invalid == sum(a != "crane" for a in r.answers) > 0
    for answer, actions, reward, guesses, won in zip(r.answers, r.actions, r.rewards, r.guesses, r.wins):
        if answer != "crane":
            assert actions == ["crane", "xx"] and reward == -6.0 and guesses == 6 and not won
    # a free-text untrained LM writes invalid guesses, each ending its game as lost
    free = evaluate(LanguageModelPolicy(lm, wordle_tokenizer(), max_action_tokens=6), EvalConfig(games=8),
                    progress=False)
    assert free.invalid == 8 and (free.rewards == -6).all() and not free.wins.any()


def test_results_table_with_paired_baseline(optimal_30):
    mix = evaluate(RandomMixturePolicy(prob_smart=0.5), EvalConfig(games=30, seed=3), name="mix", progress=False)
    table = results_table([optimal_30, mix], baseline="optimal")
    lines = table.splitlines()
    assert lines[0].startswith("| agent | games | mean reward ± SE | win rate ± SE | mean guesses |")
    assert len(lines) == 4 and lines[2].startswith("| optimal | 30 | ") and lines[3].startswith("| mix | 30 | ")
    assert f"{optimal_30.mean_reward:.3f} ± {optimal_30.stderr:.3f}" in lines[2]
    assert f"{mix.win_rate:.3f} ± {mix.win_rate_stderr:.3f}" in lines[3]
    diff = mix.rewards - optimal_30.rewards
    delta, se = paired_difference(mix, optimal_30)
    assert delta == pytest.approx(diff.mean()) and se == pytest.approx(diff.std(ddof=1) / math.sqrt(30))
    assert f"{delta:+.3f} ± {se:.3f}" in lines[3]
    assert lines[3].endswith(" yes |" if abs(delta) > 2 * se else " no |") and "—" in lines[2]
    # a markdown table: every row has the header's number of cells (no bare "|" inside a cell)
    assert len({line.count("|") for line in lines}) == 1
    assert "Δ" not in results_table([optimal_30, mix])
    with pytest.raises(ValueError, match="baseline 'nobody'"):
        results_table([mix], baseline="nobody")
    short = evaluate(OptimalPolicy(), EvalConfig(games=5, seed=3), name="short", progress=False)
    with pytest.raises(ValueError, match="5 games"):
        results_table([optimal_30, short], baseline="optimal")


def test_plot_results_writes_a_png(optimal_30, tmp_path):
    path = plot_results([optimal_30, optimal_30], tmp_path / "plots" / "eval.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_save_load_round_trip(optimal_30, tmp_path):
    path = save_results([optimal_30], tmp_path / "results.json")
    (back,) = load_results(path)
    assert back.name == optimal_30.name and back.invalid == optimal_30.invalid
    np.testing.assert_array_equal(back.rewards, optimal_30.rewards)
    np.testing.assert_array_equal(back.guesses, optimal_30.guesses)
    np.testing.assert_array_equal(back.wins, optimal_30.wins)
    assert back.answers == optimal_30.answers and back.actions == optimal_30.actions
    assert back.params == optimal_30.params and back.config == optimal_30.config
    assert back.stderr == optimal_30.stderr
    document = json.loads(path.read_text())
    document["results"][0].pop("wins")
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"results\.json: results\[0\]: .*'wins'"):
        load_results(path)
    path.write_text("{}")
    with pytest.raises(ValueError, match="not an evaluation results file"):
        load_results(path)


def test_bad_configs_and_results_are_refused():
    with pytest.raises(ValueError, match="games"):
        EvalConfig(games=0)
    with pytest.raises(ValueError, match="batch_games"):
        EvalConfig(batch_games=0)
    with pytest.raises(ValueError, match="differ in length"):
        EvalResult("x", rewards=[0.0, 1.0], guesses=[1], wins=[True], invalid=0, seconds=0.0)
    one = EvalResult("one", rewards=[-2.0], guesses=[3], wins=[True], invalid=0, seconds=0.0)
    assert math.isnan(one.stderr)


def test_adversarial_mode_and_threads_are_restored():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    r = evaluate(OptimalPolicy(), EvalConfig(games=4, mode="adversarial_resample"), progress=False)
    assert r.games == 4 and r.config["mode"] == "adversarial_resample" and (r.guesses >= 1).all()
