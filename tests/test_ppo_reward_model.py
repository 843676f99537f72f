"""PPO against a learned reward model: ``trainers.algorithms.reward.scorer.load_reward_model`` loads what ``rlds-lang train
reward`` writes and scores PPO's turns identically to the trained model; ``rlds-lang train ppo --reward
model:<dir>`` trains on those scores (the recorded rollouts' rewards are the model's, the true game return is
logged beside them)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tests.ppo_helpers import one_thread  # noqa: F401  (autouse fixture)
from trainers.algorithms.ppo.rewards import episode_turns, returns_to_go, reward_source
from trainers.algorithms.reward.model import RewardModelConfig
from trainers.algorithms.reward.scorer import (
    RewardModelScorer,
    load_reward_model,
    turn_clip,
)
from trainers.core.model import ModelConfig

TINY_REWARD = RewardModelConfig(steps=4, members=2, lr=1e-3, hidden=16, log_every=2, val_every=2,
                                model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32))


@pytest.fixture(scope="module")
def wordle_episodes() -> list[dict]:
    """A few recorded Wordle games of a half-smart policy (returns spread over several values)."""
    from loggers import record_and_read
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy

    return list(record_and_read(WordleEnv(seed=3), make_policy("random_mixture", prob_smart=0.5), 12, seed=3,
                                run_name="reward-model-fixture"))


@pytest.fixture(scope="module")
def trained(wordle_episodes, tmp_path_factory):
    """A tiny reward model trained on synthetic labels of the fixture games (what `train reward` writes)."""
    from rlds_lang.preferences.labellers import SyntheticLabeller
    from rlds_lang.preferences.segments import clips_from_episode
    from rlds_lang.preferences.types import Judgement
    from trainers.algorithms.reward.trainer import train_reward
    from trainers.experiments.preferences.wordle_demo import random_pairs

    labeller = SyntheticLabeller(0.0, 0.0, 0)
    rng = np.random.default_rng(0)

    def labelled(episodes, n):
        clips = [clip for ep in episodes for clip in clips_from_episode(ep, segment_length=8)]
        return [Judgement(a, b, labeller.label(a, b), labeller="synthetic") for a, b in random_pairs(clips, n, rng)]

    out = tmp_path_factory.mktemp("reward")
    config = dataclasses.replace(TINY_REWARD, out=str(out))  # validation on games never trained on
    return train_reward(config, labelled(wordle_episodes[:9], 30), labelled(wordle_episodes[9:], 10), progress=False)


def test_load_reward_model_scores_exactly_like_the_trained_model(trained, wordle_episodes):
    turns = [turn for ep in wordle_episodes for turn in episode_turns(ep)]
    loaded = load_reward_model(trained.out)
    assert isinstance(loaded, RewardModelScorer) and (trained.out / "metrics.json").is_file()
    expected = RewardModelScorer(trained.model).score_turns(turns)
    assert loaded.score_turns(turns) == expected                      # bit-identical after save -> load
    assert load_reward_model(trained.out / "checkpoint").score_turns(turns) == expected  # the folder itself works
    assert len(set(np.round(expected, 6))) > 3                         # not a constant
    assert loaded.score_turns(turns) == expected                      # scoring never moves the normaliser
    # the definition: mean over members of the raw step reward divided by the member's std over the saved window
    raw, _ = trained.model.member_step_rewards([turn_clip(t, i) for i, t in enumerate(turns)])
    window = np.load(trained.out / "checkpoint" / "normalisation.npy")
    assert expected == pytest.approx((raw.numpy() / window.std(0)).mean(1).tolist(), abs=1e-6)
    # a turn's score is the step's reward inside the recorded game's clip (no bias: sums keep the raw ranking)
    from rlds_lang.preferences.segments import clips_from_episode

    per_step = loaded.score_clips(clips_from_episode(wordle_episodes[0], segment_length=8))
    in_clips = [float(r) for clip_rewards in per_step for r in clip_rewards][:len(episode_turns(wordle_episodes[0]))]
    assert in_clips == pytest.approx(expected[:len(in_clips)], abs=1e-6)
    # another batch pads to another width: equal up to float rounding
    assert reward_source(f"model:{trained.out}").score_turns(turns[:5]) == pytest.approx(expected[:5], abs=1e-5)


def test_load_reward_model_errors_name_the_folder_or_file(trained, tmp_path):
    import shutil

    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere")):
        load_reward_model(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty.*train reward"):
        load_reward_model(tmp_path / "empty")
    bad = tmp_path / "bad"
    shutil.copytree(trained.out / "checkpoint", bad)
    (bad / "weights.pt").unlink()
    with pytest.raises(FileNotFoundError, match="bad: reward-model checkpoint is missing weights.pt"):
        load_reward_model(bad)
    (bad / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"bad/config.json: not valid JSON"):
        load_reward_model(bad)
    (bad / "config.json").write_text(json.dumps({"kind": "bc"}))
    with pytest.raises(ValueError, match=r"bad/config.json: field 'kind' is 'bc'"):
        load_reward_model(bad)
    garbled = tmp_path / "garbled"
    shutil.copytree(trained.out / "checkpoint", garbled)
    (garbled / "weights.pt").write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match=r"garbled/weights.pt: cannot load"):
        load_reward_model(garbled)


def test_train_ppo_cli_with_a_learned_reward_uses_the_models_rewards(trained, tmp_path):
    from loggers import read_episodes
    from trainers.cli.main import main

    out = tmp_path / "ppo"
    main(["train", "ppo", "--task", "wordle", "--reward", f"model:{trained.out}", "--updates", "1", "--episodes", "2",
          "--ppo_epochs", "1", "--model.n_layer", "1", "--model.n_embd", "32", "--model.n_head", "2",
          "--model.n_positions", "128", "--out", str(out), "--no-progress"])
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    episodes = sorted(read_episodes(out / "rollouts" / "update-00001"), key=lambda ep: str(ep["episode_id"]))
    scorer = load_reward_model(trained.out)
    learned = [scorer.score_turns(episode_turns(ep)) for ep in episodes]
    scores = [s for rewards in learned for s in returns_to_go(rewards)]
    true = [sum(float(s["reward"]) for s in ep["steps"][:-1]) for ep in episodes]
    assert row["turns"] == len(scores)
    assert row["score"] == pytest.approx(float(np.mean(scores)), abs=1e-5)        # PPO trained on the model's scores
    assert row["episode_return"] == pytest.approx(float(np.mean([sum(r) for r in learned])), abs=1e-5)
    assert row["true_return"] == pytest.approx(float(np.mean(true))) and -6 <= row["true_return"] <= 0
    assert row["score"] != pytest.approx(float(np.mean([r for ep in episodes for r in returns_to_go(
        [float(s["reward"]) for s in ep["steps"][:-1]])])))                          # ... not the environment's
    saved = json.loads((out / "config.json").read_text())
    assert saved["config"]["reward"] == f"model:{trained.out}"


def test_a_saved_gain_scales_the_scores_and_fit_gain_gives_unit_std(trained, wordle_episodes, tmp_path):
    import shutil

    from rlds_lang.preferences.segments import clips_from_episode
    from trainers.algorithms.reward.scorer import GAIN_FILE, fit_gain, save_gain

    turns = [turn for ep in wordle_episodes for turn in episode_turns(ep)]
    folder = tmp_path / "reward"
    shutil.copytree(trained.out, folder)
    plain = load_reward_model(folder)
    games = [clip for ep in wordle_episodes for clip in clips_from_episode(ep, segment_length=40)]
    gain = fit_gain(plain, games)
    save_gain(folder, gain, "the fixture games")
    scaled = load_reward_model(folder)
    assert scaled.gain == pytest.approx(gain) and json.loads((folder / GAIN_FILE).read_text())["fit_on"]
    assert scaled.score_turns(turns) == pytest.approx([gain * s for s in plain.score_turns(turns)], rel=1e-6)
    assert float(scaled.returns(games).std()) == pytest.approx(1.0, abs=1e-6)
    (folder / GAIN_FILE).write_text('{"gain": "much"}')
    with pytest.raises(ValueError, match=GAIN_FILE):
        load_reward_model(folder)
