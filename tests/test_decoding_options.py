"""The decoding options of a trained checkpoint's agent (``load_policy(..., greedy=, temperature=)``) are applied:
greedy play takes the arg-max whatever the seed, and sampling at a lower temperature puts more of its mass on the
arg-max, at the rate ``softmax(logits / temperature)`` gives it. The checkpoint is a tiny ILQL model trained with
LMRL-Gym's target network (a target trunk, decoding with the live heads), so its agent decodes with the live heads."""

from __future__ import annotations

import pytest
import torch

from rlds_lang.wordle.env import WordleEnv
from tests.test_trainers import config
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.registry import load_agent_model, load_policy, train
from trainers.core.decoding import next_token_logits

#: the allowed guesses: every first letter differs, so a game's first letter is its first sampled token.
WORDS = ["crane", "slate", "abide", "geese", "lever", "these", "eerie"]
#: games per temperature (each one first letter drawn from its own seeded stream).
GAMES = 1500
#: ``beta`` of the agents: the trained heads' advantage at a weight that keeps the first letter uncertain.
BETA = 1.0


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("decoding")
    dataset = build_dataset(wordle_like(48, seed=3), root / "data")
    cfg = config("ilql", dataset, root / "ilql", steps=20, target_network="trunk", decode_with="live")
    train("ilql", cfg, progress=False)
    return str(root / "ilql" / "checkpoint")


def first_turns(games: int) -> list[tuple[list, list]]:
    """``games`` copies of a new game's history (its first observation, no action yet)."""
    observation = WordleEnv().reset().observation
    return [([observation], []) for _ in range(games)]


def first_letter_probabilities(checkpoint: str, temperature: float) -> torch.Tensor:
    """``softmax(logits / temperature)`` of the agent's first token over the allowed first letters."""
    agent = load_policy(checkpoint, allowed_actions=WORDS, beta=BETA)
    loaded = load_agent_model(checkpoint)
    prompt = torch.tensor([agent.prompts(first_turns(1))[0]])
    logits = next_token_logits(loaded.lm, loaded.heads, prompt, torch.ones_like(prompt), BETA,
                               adv_clip=agent.adv_clip)[0]
    allowed = agent.constraint.allowed_mask(torch.zeros(1, dtype=torch.long))[0]
    return torch.softmax(logits.masked_fill(~allowed, float("-inf")) / temperature, dim=-1)


def test_the_checkpoint_decodes_with_its_live_heads(checkpoint):
    assert load_policy(checkpoint).heads.decode_with == "live"
    assert load_agent_model(checkpoint).model.target_trunk is not None
    # and with its config's advantage clip (ILQLConfig's default, the ILQL code's Wordle 0.0), unless the player says
    assert load_policy(checkpoint).adv_clip == 0.0 and load_policy(checkpoint, adv_clip=None).adv_clip is None


def test_greedy_takes_the_arg_max_whatever_the_seed(checkpoint):
    runs = []
    for seed in (1, 2):
        agent = load_policy(checkpoint, allowed_actions=WORDS, beta=BETA, greedy=True, seed=seed)
        runs.append(agent.act_batch(first_turns(64), seeds=[seed * 1000 + game for game in range(64)]))
    assert runs[0] == runs[1] and len(set(runs[0])) == 1
    best = int(first_letter_probabilities(checkpoint, 1.0).argmax())
    tokenizer = load_agent_model(checkpoint).tokenizer
    assert tokenizer.encode(runs[0][0][0]) == [best]


def test_a_lower_temperature_puts_more_mass_on_the_arg_max(checkpoint):
    tokenizer = load_agent_model(checkpoint).tokenizer
    rates = {}
    for temperature in (0.5, 2.0):
        expected = first_letter_probabilities(checkpoint, temperature)
        best = int(expected.argmax())
        agent = load_policy(checkpoint, allowed_actions=WORDS, beta=BETA, temperature=temperature)
        guesses = agent.act_batch(first_turns(GAMES), seeds=list(range(GAMES)))
        rate = sum(tokenizer.encode(guess[0]) == [best] for guess in guesses) / GAMES
        p = float(expected[best])
        standard_error = (p * (1 - p) / GAMES) ** 0.5
        assert abs(rate - p) < 4 * standard_error + 1e-9, (temperature, rate, p)
        rates[temperature] = (rate, p)
    (cold, p_cold), (hot, p_hot) = rates[0.5], rates[2.0]
    assert p_cold > p_hot + 0.1, rates   # the test can tell the two temperatures apart
    assert cold > hot, rates
