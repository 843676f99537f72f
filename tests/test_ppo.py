"""PPO end to end on a tiny one-turn task (TRL-style): training changes the model, a rewarded rare action becomes
more likely, batch x accumulation invariance, exact resume, rollouts recorded as RLDS, CLI and checkpoints."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from dm_env import specs

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.env import LanguageEnv, text_spec
from tests.ppo_helpers import one_thread  # noqa: F401  (autouse fixture)
from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.ppo.networks import (
    PolicyWithValue,
    frozen_reference,
    score_responses,
)
from trainers.algorithms.ppo.rollout import RolloutPolicy, collect_rollouts
from trainers.algorithms.ppo.trainer import ppo_update, prepare_batch, train_ppo
from trainers.core.model import ModelConfig, build_language_model
from trainers.core.plots import CURVES_ENV
from trainers.core.padding import left_pad

ACTIONS = ["ab", "ba"]
SLOW_ROLLOUT_SECONDS = 2.0  # a crashed call's extra time, which a resumed run's total must count


class PickEnv(LanguageEnv):
    """One turn: the agent says a word; ``ab`` earns 1, anything else 0."""

    task_name = "pick"

    def observation_spec(self) -> dict[str, Any]:
        return {"text": text_spec("text"), "turn": specs.Array((), np.int32, name="turn")}

    def _reset(self):
        return {"text": "", "turn": np.int32(0)}

    def _step(self, action: str):
        return {"text": "🟩" if action == "ab" else "⬛", "turn": np.int32(1)}, float(action == "ab"), True


@pytest.fixture(scope="module")
def tok() -> CharTokenizer:
    return CharTokenizer("ab🟩⬛")


@pytest.fixture(scope="module")
def biased_lm(tok):
    """A tiny LM fitted so that ``ab`` (the rewarded action) is rare: P(ab) about 0.1."""
    torch.manual_seed(0)
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32), tok.vocab_size,
                              pad_id=tok.pad_id)
    seqs = torch.tensor([[tok.bos_id, tok.eoo_id, *tok.encode(w), tok.eoa_id] for w in ["ab"] + ["ba"] * 9])
    opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
    for _ in range(40):
        logits = lm(input_ids=seqs).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), seqs[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return lm.eval()


def p_ab(lm, tok, temperature: float = 1.0) -> float:
    """Probability of the action ``ab`` under the constrained policy."""
    policy = RolloutPolicy(lm, tok, 4, 3, temperature, ACTIONS)
    ids, mask = left_pad([[tok.bos_id, tok.eoo_id]], 4, tok.pad_id)
    response = torch.tensor([[*tok.encode("ab"), tok.eoa_id]])
    with torch.no_grad():
        return float(score_responses(lm, ids, mask, response, temperature, policy.constraint).logprobs.sum().exp())


def config(out: Path, **kwargs) -> PPOConfig:
    """The tiny task's PPO config (scaled up learning rate, small KL) with ``kwargs`` overrides."""
    base = dict(task="pick", out=str(out), updates=4, episodes=16, query_length=4, response_length=3,
                temperature=1.0, lr=3e-3, kl_coef=0.01, adaptive_kl=False, checkpoint_every=2, tokenizer="pick",
                model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32))
    return PPOConfig(**{**base, **kwargs})


def run(cfg: PPOConfig, lm, tok, **kwargs):
    """PPO on ``PickEnv`` with environment rewards, starting from a copy of ``lm``."""
    return train_ppo(cfg, env=PickEnv(), allowed_actions=ACTIONS, source="env", init=(copy.deepcopy(lm), tok), **kwargs)


def final_state(out: Path) -> dict[str, torch.Tensor]:
    """The ``state_dict`` in a run's checkpoint."""
    return torch.load(out / "checkpoint" / "model.pt", weights_only=True)


def test_rewarded_rare_action_becomes_likely_and_training_changes_the_model(biased_lm, tok, tmp_path, monkeypatch):
    monkeypatch.setenv(CURVES_ENV, "1")  # the suite turns the curves off (conftest.py); this test draws them
    before = p_ab(biased_lm, tok)
    assert before < 0.25
    result = run(config(tmp_path / "ppo", updates=6), biased_lm, tok)
    state = final_state(tmp_path / "ppo")
    trained = copy.deepcopy(biased_lm)
    trained.load_state_dict({k[3:]: v for k, v in state.items() if k.startswith("lm.")})
    after = p_ab(trained, tok)
    assert after > before + 0.25, (before, after)
    assert float(state["value_head.weight"].abs().sum()) > 0  # the zero-initialised value head learned
    changed = [k for k, v in biased_lm.state_dict().items() if not torch.equal(v, state["lm." + k])]
    assert len(changed) > 5
    rows = [json.loads(line) for line in (tmp_path / "ppo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 7))
    for key in ("score", "objective/kl", "objective/kl_coef", "policy/entropy", "policy/clipfrac", "val/clipfrac",
                "val/error", "policy/approxkl", "rollout_tokens_per_second", "update_tokens_per_second"):
        assert all(np.isfinite(r[key]) for r in rows), key
    assert rows[-1]["score"] > rows[0]["score"]
    assert [r["lr"] for r in rows] == pytest.approx([3e-3 * (1 - u / 6) for u in range(6)])  # annealed linearly to 0
    assert (tmp_path / "ppo" / "training_curves.png").stat().st_size > 0 and list((tmp_path / "ppo" / "tb").iterdir())
    assert result.updates == 6 and result.rollout_tokens_per_second > 0


def test_rollouts_are_recorded_as_rlds_episodes(biased_lm, tok, tmp_path):
    from loggers import read_episodes

    policy = RolloutPolicy(copy.deepcopy(biased_lm), tok, 4, 3, 1.0, ACTIONS)
    policy.info = {"ppo_update": 1}
    rollouts = collect_rollouts(PickEnv(), policy, list(range(10)), tmp_path / "r", "env", truncate_after=1, penalty=-1.0)
    episodes = list(read_episodes(tmp_path / "r"))
    assert len(episodes) == 10 == len(rollouts)
    actions = [ep["steps"][0]["action"] for ep in episodes]
    assert set(actions) <= set(ACTIONS) and all(ep["policy"] == "ppo" for ep in episodes)
    assert json.loads(episodes[0]["policy_params"])["ppo_update"] == 1
    by_id = sorted(episodes, key=lambda ep: ep["episode_id"])
    assert rollouts.scores.tolist() == [float(ep["steps"][0]["reward"]) for ep in by_id]
    assert bool(rollouts.mask.all())  # every constrained response ends with [EOA] at index 2


def test_one_minibatch_equals_accumulated_micro_batches(biased_lm, tok, tmp_path):
    policy = RolloutPolicy(copy.deepcopy(biased_lm), tok, 4, 3, 1.0, ACTIONS)
    rollouts = collect_rollouts(PickEnv(), policy, list(range(12)), tmp_path / "r", "env", truncate_after=1, penalty=-1.0)
    results = []
    for accum in (1, 4):
        model = PolicyWithValue(copy.deepcopy(biased_lm))
        cfg = config(tmp_path, grad_accum=accum, ppo_epochs=2)
        batch = prepare_batch(model, frozen_reference(model.lm), rollouts, 1.0, policy.constraint, 0.01)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        metrics = ppo_update(model, optimizer, batch, cfg, update=1, constraint=policy.constraint)
        results.append((model.state_dict(), metrics))
    (a, ma), (b, mb) = results
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)
    assert not torch.equal(a["lm.transformer.wte.weight"], biased_lm.state_dict()["transformer.wte.weight"])
    assert ma["loss/total"] == pytest.approx(mb["loss/total"], abs=1e-5)


def test_resume_is_exact(biased_lm, tok, tmp_path, monkeypatch):
    run(config(tmp_path / "full"), biased_lm, tok)
    import trainers.algorithms.ppo.trainer as ppo_train

    real = ppo_train.collect_rollouts

    def crash_at_update_3(env, policy, seeds, data_dir, *args, **kwargs):
        if str(data_dir).endswith("update-00003"):
            raise KeyboardInterrupt("simulated crash")
        if str(data_dir).endswith("update-00001"):
            time.sleep(SLOW_ROLLOUT_SECONDS)  # the crashed call trains measurably longer than the resumed one
        return real(env, policy, seeds, data_dir, *args, **kwargs)

    monkeypatch.setattr(ppo_train, "collect_rollouts", crash_at_update_3)
    with pytest.raises(KeyboardInterrupt):
        run(config(tmp_path / "resumed"), biased_lm, tok)
    monkeypatch.setattr(ppo_train, "collect_rollouts", real)
    saved = torch.load(tmp_path / "resumed" / "checkpoint" / "trainer_state.pt", weights_only=False)["train_seconds"]
    result = run(config(tmp_path / "resumed"), biased_lm, tok)
    # the training time counts the call before the crash (up to its checkpoint) and this one (up to its last
    # checkpoint), and the result reports what the last checkpoint carries
    assert saved >= SLOW_ROLLOUT_SECONDS
    assert saved < result.total_seconds <= saved + result.seconds
    final_seconds = torch.load(tmp_path / "resumed" / "checkpoint" / "trainer_state.pt",
                               weights_only=False)["train_seconds"]
    assert result.total_seconds == final_seconds
    assert result.time_text() == f"{result.total_seconds:.0f} s of training ({result.seconds:.0f} s in this invocation)"
    full, resumed = final_state(tmp_path / "full"), final_state(tmp_path / "resumed")
    assert all(torch.equal(full[k], resumed[k]) for k in full)
    rows = [(tmp_path / name / "metrics.jsonl").read_text().splitlines() for name in ("full", "resumed")]
    strip = lambda line: {k: v for k, v in json.loads(line).items() if "per_second" not in k}  # noqa: E731
    assert [strip(r) for r in rows[0]] == [strip(r) for r in rows[1]]


def test_checkpoint_loads_as_an_agent_and_cli_parses(tmp_path, tok):
    from rlds_lang.tokenizers import TOKENIZERS
    from trainers.algorithms.registry import load_policy
    from trainers.cli.main import build_parser
    from trainers.core.config import dataclass_from_args

    TOKENIZERS["pick"] = lambda: tok
    try:
        cfg = config(tmp_path / "ppo", updates=1, episodes=2)
        train_ppo(cfg, env=PickEnv(), allowed_actions=ACTIONS, source="env")
        agent = load_policy(tmp_path / "ppo" / "checkpoint", allowed_actions=ACTIONS)
        assert agent.act([{"text": ""}], []) in ACTIONS and agent.info["algorithm"] == "ppo"
    finally:
        del TOKENIZERS["pick"]
    args = build_parser().parse_args(["train", "ppo", "--init", "runs/bc/checkpoint", "--reward", "model:/tmp/rm",
                                      "--kl_coef", "0.2", "--model.n_layer", "1"])
    parsed = dataclass_from_args(PPOConfig, args)
    assert (parsed.init, parsed.reward, parsed.kl_coef, parsed.model.n_layer) == ("runs/bc/checkpoint", "model:/tmp/rm",
                                                                                  0.2, 1)
    with pytest.raises(ValueError, match="expected 'env'"):
        from trainers.algorithms.ppo.rewards import reward_source

        reward_source("bogus")


def test_turn_and_episode_scorers_replace_the_environment_rewards(biased_lm, tok, tmp_path):
    policy = RolloutPolicy(copy.deepcopy(biased_lm), tok, 4, 3, 1.0, ACTIONS)
    seen = []

    def length_scorer(turns):
        seen.extend(turns)
        return [0.5 if t.response == "ba" else -0.5 for t in turns]

    class EpisodeScorer:
        def score_episodes(self, episodes):
            return [2.0 for _ in episodes]

    by_turn = collect_rollouts(PickEnv(), policy, list(range(6)), tmp_path / "t", length_scorer, 1, -1.0)
    assert len(seen) == 6 and all(t.observations == ("",) and t.actions == () for t in seen)
    assert sorted(by_turn.scores.tolist()) == sorted(0.5 if t.response == "ba" else -0.5 for t in seen)
    by_episode = collect_rollouts(PickEnv(), policy, list(range(6)), tmp_path / "e", EpisodeScorer(), 1, -1.0)
    assert by_episode.scores.tolist() == [2.0] * 6


def test_a_fresh_run_never_overwrites_recorded_rollouts(biased_lm, tok, tmp_path):
    old = tmp_path / "ppo" / "rollouts" / "update-00001"
    old.mkdir(parents=True)
    (old / "chunk_00000").write_text("recorded earlier")
    with pytest.raises(FileExistsError, match="never overwritten"):
        run(config(tmp_path / "ppo", updates=1), biased_lm, tok)
    assert (old / "chunk_00000").read_text() == "recorded earlier"


def test_the_adaptive_kl_controller_steers_beta_in_the_ppo_loop(biased_lm, tok, tmp_path):
    """Each update's beta is the previous one moved by Ziegler et al.'s rule on the previous update's measured KL
    (``optim.AdaptiveKLController``); a loop that never calls ``update`` keeps beta at its start value."""
    target, horizon = 1e3, 16  # a KL far below target, horizon = the episodes of an update: beta x 0.8 per update
    cfg = config(tmp_path / "ppo", updates=3, adaptive_kl=True, kl_coef=0.05, kl_target=target, kl_horizon=horizon)
    run(cfg, biased_lm, tok)
    rows = [json.loads(line) for line in (tmp_path / "ppo" / "metrics.jsonl").read_text().splitlines()]
    betas = [r["objective/kl_coef"] for r in rows]
    assert betas[0] == pytest.approx(0.05)
    for before, after in zip(rows, rows[1:]):
        error = float(np.clip(before["objective/kl"] / target - 1.0, -0.2, 0.2))
        assert after["objective/kl_coef"] == pytest.approx(before["objective/kl_coef"] * (1 + error * before["turns"] / horizon))
    assert betas == pytest.approx([0.05, 0.04, 0.032])  # it moved, towards more KL
    state = torch.load(tmp_path / "ppo" / "checkpoint" / "trainer_state.pt", weights_only=False)
    last = rows[-1]  # the controller's value after the last update is saved for resuming
    expected = last["objective/kl_coef"] * (1 + float(np.clip(last["objective/kl"] / target - 1, -0.2, 0.2))
                                            * last["turns"] / horizon)
    assert state["kl"]["value"] == pytest.approx(expected)
