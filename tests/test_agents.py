"""Tests of the language-model agents: the prefix constraint, the beta-perturbed decoding rule, seeded
sampling, and left-padded batched decoding against one-game-at-a-time decoding (tiny random models)."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
import torch
from torch import nn

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.env import Policy, run_episode
from rlds_lang.tokenizers import wordle_tokenizer
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.words import official_guesses
from trainers.core.model import ModelConfig, ValueHeads, build_language_model
from trainers.core.decoding import PrefixConstraint, next_token_logits, positions_from_mask, sample_tokens
from trainers.core.policy import LanguageModelPolicy

TINY = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=128)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models run fastest on one thread (and do not spin against other work on a busy machine)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def tok() -> CharTokenizer:
    return wordle_tokenizer()


@pytest.fixture(scope="module")
def lm(tok):
    torch.manual_seed(0)
    return build_language_model(TINY, tok.vocab_size, pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)


class StubLM(nn.Module):
    """A causal 'LM' with fixed logits and the one-hot of each input token as its last hidden state."""

    def __init__(self, vocab_size: int, logits: torch.Tensor | None = None):
        super().__init__()
        self.vocab_size = vocab_size
        self.register_buffer("fixed", torch.zeros(vocab_size) if logits is None else logits.float())

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None, use_cache=None,
                output_hidden_states=False):
        hidden = nn.functional.one_hot(input_ids, self.vocab_size).float()
        logits = self.fixed.expand(*input_ids.shape, self.vocab_size)
        return types.SimpleNamespace(logits=logits, hidden_states=(hidden * 0, hidden) if output_hidden_states else None)


def constant_heads(hidden_size: int, q: torch.Tensor, v: float) -> ValueHeads:
    """Value heads whose target Qs are ``q`` (and ``q + 1`` for the second, so the min is ``q``) and V is ``v``."""
    heads = ValueHeads(hidden_size, len(q))
    with torch.no_grad():
        for layer, bias in ((heads.target_q1, q), (heads.target_q2, q + 1), (heads.v, torch.tensor([v]))):
            layer[-1].weight.zero_()
            layer[-1].bias.copy_(bias)
    return heads


def game_histories(actions: list[str], answer: str = "pleat") -> list[tuple[list[dict], list[str]]]:
    """The history before each turn of a game that guesses ``actions`` (prompts of different lengths)."""
    env = WordleEnv()
    env.set_next_answer(answer)
    observations = [env.reset().observation]
    histories = []
    for action in actions:
        histories.append((list(observations), list(actions[:len(observations) - 1])))
        observations.append(env.step(action).observation)
    return histories


# -- PrefixConstraint -------------------------------------------------------------------------------------
def test_prefix_constraint_allows_exactly_the_continuations(tok):
    rng = np.random.default_rng(0)
    words = sorted(rng.choice(official_guesses().words, size=300, replace=False).tolist())
    trie = PrefixConstraint(words, tok)
    prefixes = {w[:k] for w in words for k in range(6)} | {"qqq", "zzzzz", "a" * 6, "crane" + "s"}
    for prefix in prefixes:
        expected = {tok.encode(w[len(prefix)])[0] for w in words if w.startswith(prefix) and len(w) > len(prefix)}
        if prefix in words:
            expected.add(tok.eoa_id)
        assert set(trie.allowed_next(prefix)) == expected, prefix
    assert trie.max_steps == 6 and trie.num_actions == 300
    # the tensor view agrees and walking the trie spells each word
    nodes = torch.zeros(len(words), dtype=torch.long)
    for position in range(5):
        tokens = torch.tensor([tok.encode(w[position])[0] for w in words])
        assert trie.allowed_mask(nodes)[torch.arange(len(words)), tokens].all()
        nodes = trie.advance(nodes, tokens)
    assert [trie.action_at(n) for n in nodes.tolist()] == words
    assert trie.allowed_mask(nodes)[:, tok.eoa_id].all() and trie.allowed_mask(nodes).sum(-1).eq(1).all()


def test_prefix_constraint_words_that_prefix_others(tok):
    trie = PrefixConstraint(["ab", "abc", "b"], tok)
    assert set(trie.allowed_next("ab")) == {tok.eoa_id, tok.encode("c")[0]}
    masked = trie.mask_logits(torch.zeros(1, tok.vocab_size), torch.tensor([trie.node_of("ab")]))
    assert torch.isfinite(masked).sum() == 2


@pytest.mark.parametrize("actions, message", [([], "empty"), (["ok", ""], r"allowed_actions\[1\]"),
                                              (["fine", "nope!"], r"allowed_actions\[1\] = 'nope!'")])
def test_prefix_constraint_rejects_bad_action_lists(tok, actions, message):
    with pytest.raises(ValueError, match=message):
        PrefixConstraint(actions, tok)


def test_untrained_constrained_lm_always_plays_valid_guesses(lm, tok):
    env = WordleEnv()
    agent = LanguageModelPolicy(lm, tok, allowed_actions=env.guesses.words, name="untrained")
    assert isinstance(agent, Policy)
    for seed in range(20):
        episode = run_episode(env, agent, seed=seed)  # the env raises InvalidActionError on any invalid guess
        assert 1 <= len(episode.actions) <= 6 and all(a in env.guesses for a in episode.actions)


# -- the decoding rule ------------------------------------------------------------------------------------
def test_next_token_logits_is_bc_plus_beta_advantage(tok):
    torch.manual_seed(1)
    bc = torch.randn(tok.vocab_size)
    stub = StubLM(tok.vocab_size, bc)
    heads = ValueHeads(tok.vocab_size, tok.vocab_size)  # random heads on the stub's one-hot hidden state
    ids = torch.tensor([[1, 7, 9, 3], [0, 1, 12, 3]])
    mask = (ids != tok.pad_id).long()
    last = nn.functional.one_hot(ids[:, -1], tok.vocab_size).float()
    q = torch.minimum(heads.target_q1(last), heads.target_q2(last))
    v = heads.v(last).squeeze(-1)
    for beta in (0.5, 3.0):
        got = next_token_logits(stub, heads, ids, mask, beta)
        torch.testing.assert_close(got, bc.expand(2, -1) + beta * (q - v.unsqueeze(-1)), rtol=0, atol=1e-6)
    assert torch.equal(next_token_logits(stub, heads, ids, mask, 0.0), bc.expand(2, -1))
    assert torch.equal(next_token_logits(stub, None, ids, mask, 0.0), bc.expand(2, -1))


def test_next_token_logits_on_a_real_lm(tok):
    # its own LM: output_hidden_states installs transformers hooks that make a model unpicklable
    lm = build_language_model(TINY, tok.vocab_size, pad_id=tok.pad_id)
    heads = ValueHeads(TINY.n_embd, tok.vocab_size)
    ids = torch.tensor([tok.encode_prompt([""], [])])
    mask = torch.ones_like(ids)
    out = lm(input_ids=ids, output_hidden_states=True)
    hidden = out.hidden_states[-1][:, -1]
    expected = out.logits[:, -1] + 2.0 * (heads.target_q(hidden) - heads.v(hidden))
    torch.testing.assert_close(next_token_logits(lm, heads, ids, mask, 2.0), expected)
    torch.testing.assert_close(next_token_logits(lm, heads, ids, mask, 0.0), out.logits[:, -1])


def test_positions_from_mask_ignore_left_padding():
    assert positions_from_mask(torch.tensor([[0, 0, 1, 1, 1]])).tolist() == [[0, 0, 0, 1, 2]]


def test_sample_tokens_follows_the_softmax_and_never_draws_masked_tokens():
    logits = torch.log(torch.tensor([[1.0, 2.0, 0.0, 5.0]])).expand(20_000, -1)  # p = 1/8, 2/8, 0, 5/8
    uniforms = torch.rand(20_000, generator=torch.Generator().manual_seed(0))
    counts = torch.bincount(sample_tokens(logits, uniforms), minlength=4).double() / 20_000
    assert counts[2] == 0
    torch.testing.assert_close(counts, torch.tensor([1 / 8, 2 / 8, 0, 5 / 8], dtype=torch.double), atol=0.015, rtol=0)
    # temperature 2 flattens to p proportional to sqrt(1, 2, 0, 5)
    counts = torch.bincount(sample_tokens(logits, uniforms, temperature=2.0), minlength=4).double() / 20_000
    expected = torch.tensor([1, 2 ** 0.5, 0, 5 ** 0.5], dtype=torch.double)
    torch.testing.assert_close(counts, expected / expected.sum(), atol=0.015, rtol=0)
    assert sample_tokens(logits[:3], uniforms[:3], greedy=True).tolist() == [3, 3, 3]


def test_beta_perturbed_sampling_follows_q(tok):
    target = tok.encode("e")[0]
    q = torch.zeros(tok.vocab_size)
    q[target] = 1.0
    stub = StubLM(tok.vocab_size)  # uniform BC policy
    heads = constant_heads(tok.vocab_size, q, v=0.25)
    ids, mask = torch.tensor([[1, 3]]), torch.ones(1, 2, dtype=torch.long)
    uniforms = torch.rand(4000, generator=torch.Generator().manual_seed(0))
    for beta, expected in ((0.0, 1 / tok.vocab_size), (1.0, np.e / (np.e + tok.vocab_size - 1)), (25.0, 1.0)):
        logits = next_token_logits(stub, heads, ids, mask, beta).expand(4000, -1)
        share = (sample_tokens(logits, uniforms) == target).double().mean().item()
        se = max(np.sqrt(expected * (1 - expected) / 4000), 1e-3)
        assert abs(share - expected) < 4 * se, (beta, share, expected)
    # through the agent with the constraint: large beta writes the Q-argmax letter wherever it may
    words = ["eeeee", "abcde", "ebcde", "zzzzz"]
    agent = LanguageModelPolicy(stub, tok, heads=heads, beta=25.0, allowed_actions=words)
    histories = [([{"text": ""}], [])] * 50
    assert agent.act_batch(histories, seeds=range(50)) == ["eeeee"] * 50
    bc = LanguageModelPolicy(stub, tok, allowed_actions=words)  # beta = 0: the uniform BC policy's choices vary
    assert len(set(bc.act_batch(histories, seeds=range(50)))) > 1


# -- batched decoding and seeding -------------------------------------------------------------------------
@pytest.mark.parametrize("constrained", [True, False])
def test_left_padded_batch_matches_one_at_a_time(lm, tok, constrained):
    histories = game_histories(["crane", "tolls", "pleat"]) + game_histories(["abide", "speed"], answer="abide")
    allowed = official_guesses().words if constrained else None
    agent = LanguageModelPolicy(lm, tok, greedy=True, allowed_actions=allowed, max_action_tokens=7)
    batched = agent.act_batch(histories)
    assert batched == [agent.act_batch([h])[0] for h in histories]
    if constrained:
        assert all(a in official_guesses() for a in batched)
    else:
        assert all(len(a) <= 7 for a in batched)
    # sampling with per-game seeds: the same actions alone, in a batch, and through act() after reset()
    sampler = LanguageModelPolicy(lm, tok, allowed_actions=allowed, max_action_tokens=7)
    seeds = list(range(100, 100 + len(histories)))
    together = sampler.act_batch(histories, seeds=seeds)
    alone = []
    for seed, (observations, actions) in zip(seeds, histories):
        sampler.reset(seed)
        alone.append(sampler.act(observations, actions))
    assert together == alone


def test_seeded_games_are_reproducible(lm, tok):
    env = WordleEnv()
    agent = LanguageModelPolicy(lm, tok, allowed_actions=env.guesses.words, temperature=1.5)
    first = [run_episode(env, agent, seed=s).actions for s in range(4)]
    assert first == [run_episode(env, agent, seed=s).actions for s in range(4)]
    assert len({tuple(a) for a in first}) > 1
    # without seeds the shared generator (seeded by reset) serves the batch in order
    agent.reset(5)
    a = agent.act_batch(game_histories(["crane", "tolls"]))
    agent.reset(5)
    assert a == agent.act_batch(game_histories(["crane", "tolls"]))


def test_free_text_stops_at_end_of_action(tok):
    logits = torch.full((tok.vocab_size,), -10.0)
    logits[tok.encode("x")[0]] = 0.0
    agent = LanguageModelPolicy(StubLM(tok.vocab_size, logits), tok, greedy=True, max_action_tokens=4)
    assert agent.act([{"text": ""}], []) == "xxxx"  # never ends: cut at max_action_tokens
    logits[tok.eoa_id] = 5.0
    agent = LanguageModelPolicy(StubLM(tok.vocab_size, logits), tok, greedy=True)
    assert agent.act([{"text": ""}], []) == ""


def test_bad_arguments_and_histories_are_named(lm, tok):
    with pytest.raises(ValueError, match="needs value heads"):
        LanguageModelPolicy(lm, tok, beta=1.0)
    with pytest.raises(ValueError, match="temperature"):
        LanguageModelPolicy(lm, tok, temperature=0.0)
    agent = LanguageModelPolicy(lm, tok, allowed_actions=["crane"])
    with pytest.raises(ValueError, match="game 1 has 1 observations and 1 actions"):
        agent.act_batch([([""], []), ([""], ["crane"])])
    with pytest.raises(ValueError, match="seeds for"):
        agent.act_batch([([""], [])], seeds=[1, 2])
    with pytest.raises(ValueError, match="exceeds the model's 128 positions"):
        agent.act_batch([(["🟩" * 200], [])])
    with pytest.raises(ValueError, match="no 'text' field"):
        agent.act([{"feedback": None}], [])
    assert agent.act_batch([]) == []


def test_params_are_json(lm, tok):
    heads = ValueHeads(TINY.n_embd, tok.vocab_size)
    agent = LanguageModelPolicy(lm, tok, heads=heads, beta=2.0, allowed_actions=["crane", "tolls"], name="ilql")
    params = json.loads(json.dumps(agent.params()))
    assert params["beta"] == 2.0 and params["allowed_actions"] == 2 and params["name"] == "ilql"
    assert params["value_heads"] is True and len(params["allowed_actions_sha256"]) == 64
    agent.info = {"checkpoint": "runs/ilql/checkpoint", "step": 3}  # provenance shows in params
    assert agent.params()["step"] == 3 and agent.params()["beta"] == 2.0


def test_agent_pickles_and_plays_the_same(lm, tok):
    import pickle

    agent = LanguageModelPolicy(lm, tok, allowed_actions=official_guesses().words, temperature=2.0)
    env = WordleEnv()
    run_episode(env, agent, seed=0)  # decoding leaves the LM picklable (no transformers hidden-state hooks)
    copy = pickle.loads(pickle.dumps(agent))  # loggers.record(workers > 1) sends policies to processes
    assert run_episode(env, copy, seed=9).actions == run_episode(env, agent, seed=9).actions


@pytest.mark.parametrize("algorithm", ["bc", "ilql"])
def test_checkpoint_agents_decode_like_the_trained_module(tmp_path, tok, algorithm):
    from trainers.algorithms.registry import algorithm_by_name, load_policy
    from trainers.core.checkpoint import save_checkpoint

    spec = algorithm_by_name(algorithm)
    config = spec.config_class(dataset="unused", model=TINY)
    torch.manual_seed(0)
    model = spec.model_class(config, tok)
    path = save_checkpoint(tmp_path / algorithm, algorithm, config, model, tok, {"step": 3})
    agent = load_policy(path, allowed_actions="official_guesses", greedy=True)
    assert agent.name == algorithm and agent.beta == (16.0 if algorithm == "ilql" else 0.0)
    assert (agent.heads is not None) == (algorithm == "ilql")
    direct = LanguageModelPolicy(model.lm, tok, heads=getattr(model, "heads", None), beta=agent.beta, greedy=True,
                                 allowed_actions=official_guesses().words, adv_clip=agent.adv_clip)
    histories = game_histories(["crane", "tolls"])
    assert agent.act_batch(histories) == direct.act_batch(histories)


@pytest.mark.parametrize("greedy", [True, False])
def test_reused_turn_states_give_the_same_actions(lm, tok, greedy):
    from trainers.evaluation.wordle import EvalConfig, evaluate

    words = official_guesses().words
    results = [evaluate(LanguageModelPolicy(lm, tok, greedy=greedy, allowed_actions=words, reuse_states=reuse),
                        EvalConfig(games=24, batch_games=8), progress=False) for reuse in (True, False)]
    assert results[0].actions == results[1].actions
    # the states are found again: the next turn of a stored game only runs its new tokens
    agent = LanguageModelPolicy(lm, tok, greedy=greedy, allowed_actions=words)
    (first,) = game_histories(["crane"])
    guess = agent.act_batch([first])[0]
    env = WordleEnv()
    env.set_next_answer("pleat")
    observations = [env.reset().observation, env.step(guess).observation]
    past, new = agent.turn_states.split(agent.prompts([(observations, [guess])])[0])
    assert past is not None and len(new) == 1 + 5 + 1  # [EOA] + five squares + [EOO]
    assert past[0].shape[:3] == (TINY.n_layer, TINY.n_head, len(agent.prompts([first])[0]) + 5)
    agent.reset(0)
    assert agent.turn_states.states == {}
