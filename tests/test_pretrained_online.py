"""PPO, DPO and reward models from a pretrained causal LM (``--model.pretrained DIR``, a tiny GPT-2 and its BPE
tokenizer saved in a temporary folder): the policy, the frozen reference and the value/reward heads sit on the
pretrained LM, every text goes through its tokenizer, and the checkpoints play (or score) without the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from rlds_lang.pretrained_tokenizer import PretrainedTokenizer
from tests.pretrained_fixtures import WORDS, play_three_games, text_judgements
from tests.pretrained_fixtures import tiny, tok  # noqa: F401  (module fixtures)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def words(tmp_path_factory) -> Path:
    """The toy words as a Wordle word list (answers and guesses)."""
    path = tmp_path_factory.mktemp("words") / "words.txt"
    path.write_text("\n".join(WORDS) + "\n")
    return path


# --- PPO ---------------------------------------------------------------------------------------------------------

def test_train_ppo_from_a_pretrained_model_samples_with_its_tokenizer_and_keeps_it_as_the_reference(tiny, tok, words,
                                                                                                     tmp_path):
    from loggers import read_episodes
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import initial_model
    from trainers.cli.main import main
    from trainers.core.model import ModelConfig

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    out = tmp_path / "ppo"
    main(["train", "ppo", "--task", "wordle", "--model.pretrained", str(folder), "--answers", str(words),
          "--guesses", str(words), "--updates", "1", "--episodes", "2", "--ppo_epochs", "1", "--lr", "1e-3",
          "--out", str(out), "--no-progress"])
    checkpoint = out / "checkpoint"
    saved = PretrainedTokenizer.load(checkpoint / "tokenizer.json")
    assert saved.to_dict()["hf_tokenizer"] == tok.to_dict()["hf_tokenizer"] and saved.roles == tok.roles
    # the rollouts were sampled and decoded with the pretrained tokenizer: every guess is a word of the list
    games = list(read_episodes(out / "rollouts" / "update-00001"))
    guesses = [str(step["action"]) for game in games for step in game["steps"][:-1]]
    assert len(games) == 2 and guesses and set(guesses) <= set(WORDS)
    # ... and as its tokens: each response is the guess's BPE tokens and [EOA] (a word of this BPE is one token,
    # where a character tokenizer would have sampled five letters)
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert row["response_tokens"] == pytest.approx(sum(len(tok.encode(g)) + 1 for g in guesses) / len(guesses))
    assert row["response_tokens"] < 6
    # the frozen reference is the pretrained start (the same seed rebuilds it), the policy moved away from it
    start = initial_model(PPOConfig(model=ModelConfig(pretrained=str(folder))))[1].lm.state_dict()
    state = torch.load(checkpoint / "trainer_state.pt", weights_only=True)
    assert state["reference"].keys() == start.keys()
    for name, value in start.items():
        assert torch.equal(state["reference"][name], value), name
    policy = torch.load(checkpoint / "model.pt", weights_only=True)
    assert not torch.equal(policy["lm.transformer.h.0.mlp.c_fc.weight"], start["transformer.h.0.mlp.c_fc.weight"])
    assert json.loads((checkpoint / "config.json").read_text())["config"]["model"]["pretrained"] == str(folder)
    shutil.rmtree(folder)                                           # the checkpoint alone must be enough to play
    play_three_games(checkpoint, tmp_path)


def test_ppo_refuses_an_init_checkpoint_beside_a_pretrained_model(tiny):
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import initial_model
    from trainers.core.model import ModelConfig

    with pytest.raises(ValueError, match="give one or the other"):
        initial_model(PPOConfig(init="runs/bc/checkpoint", model=ModelConfig(pretrained=str(tiny))))


# --- DPO ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> Path:
    from tests.malt_fixtures import wordle_trees

    folder = tmp_path_factory.mktemp("trees")
    wordle_trees(folder, trees=2)
    return folder


def test_dpo_from_a_pretrained_model_encodes_pairs_with_its_tokenizer_against_the_pretrained_reference(tiny, tok,
                                                                                                       trees, tmp_path):
    from trainers.algorithms.dpo.dpo import DPOConfig, pair_logps
    from trainers.algorithms.dpo.trainer import prepare
    from trainers.algorithms.registry import pretrained_start
    from trainers.core.model import ModelConfig, language_model_for

    config = DPOConfig(dataset=str(trees), model=ModelConfig(pretrained=str(tiny)), max_length=96,
                       out=str(tmp_path / "unused"))
    torch.manual_seed(config.seed)
    _, tokenizer, module, tensors = prepare(config, pretrained_start(config))
    assert tokenizer == tok and module.lm.get_input_embeddings().num_embeddings == tok.vocab_size
    row = tensors["chosen_input_ids"][0][tensors["chosen_attention_mask"][0].bool()].tolist()
    assert row[0] == tok.bos_id and row[-1] == tok.eoa_id and tok.eoo_id in row
    # the reference is the pretrained start: the same seed builds the same LM (its added rows are drawn at random)
    torch.manual_seed(config.seed)
    reference = language_model_for(config.model, tok).eval()
    with torch.no_grad():
        chosen, rejected = pair_logps(reference, tensors)
    assert torch.allclose(tensors["ref_chosen_logps"], chosen, atol=1e-5)
    assert torch.allclose(tensors["ref_rejected_logps"], rejected, atol=1e-5)
    with torch.no_grad():
        out = module(tensors)
    assert float(out.metrics["rewards/margin"]) == pytest.approx(0.0, abs=1e-5)   # the policy starts there too


def test_train_dpo_cli_from_a_pretrained_model_and_its_checkpoint_plays(tiny, tok, trees, tmp_path, capsys):
    from trainers.algorithms.registry import load_agent_model
    from trainers.cli.main import main

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    out = tmp_path / "dpo"
    main(["train", "dpo", "--dataset", str(trees), "--model.pretrained", str(folder), "--steps", "2",
          "--batch_size", "4", "--max_length", "96", "--out", str(out), "--no-progress"])
    assert "dpo: 2 steps" in capsys.readouterr().out
    shutil.rmtree(folder)
    loaded = load_agent_model(out / "checkpoint")
    assert loaded.algorithm == "dpo" and loaded.tokenizer.to_dict()["hf_tokenizer"] == tok.to_dict()["hf_tokenizer"]
    play_three_games(out / "checkpoint", tmp_path)


def test_dpo_refuses_both_an_init_and_a_pretrained_model(tiny):
    from trainers.algorithms.dpo.dpo import DPOConfig
    from trainers.algorithms.registry import fit_dpo
    from trainers.core.model import ModelConfig

    with pytest.raises(ValueError, match="give one or the other"):
        fit_dpo(DPOConfig(dataset="x", init="runs/bc/checkpoint", model=ModelConfig(pretrained=str(tiny))))
    with pytest.raises(ValueError, match="--model.pretrained"):
        fit_dpo(DPOConfig(dataset="x"))


# --- reward models -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wordle_judgements() -> dict:
    """Synthetic judgements of segments of a few recorded Wordle games: ``{"train": [...], "validation": [...]}``."""
    import numpy as np

    from loggers import record_and_read
    from rlds_lang.preferences.labellers import SyntheticLabeller
    from rlds_lang.preferences.segments import clips_from_episode
    from rlds_lang.preferences.types import Judgement
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy
    from trainers.experiments.preferences.wordle_demo import random_pairs

    games = list(record_and_read(WordleEnv(seed=3), make_policy("random_mixture", prob_smart=0.5), 8, seed=3,
                                 run_name="pretrained-reward-fixture"))
    labeller, rng = SyntheticLabeller(0.0, 0.0, 0), np.random.default_rng(0)

    def labelled(episodes, n):
        clips = [clip for ep in episodes for clip in clips_from_episode(ep, segment_length=4)]
        return [Judgement(a, b, labeller.label(a, b), labeller="synthetic") for a, b in random_pairs(clips, n, rng)]

    return {"train": labelled(games[:6], 16), "validation": labelled(games[6:], 6)}


def test_train_reward_from_a_pretrained_model_puts_its_body_under_the_heads_and_scores_without_its_folder(
        tiny, tok, wordle_judgements, tmp_path, monkeypatch, capsys):
    import sys
    import types

    from transformers import GPT2LMHeadModel

    from trainers.algorithms.reward.model import RewardModel
    from trainers.cli.main import main

    def read_judgements(dataset, split):
        return iter(wordle_judgements[split])

    monkeypatch.setitem(sys.modules, "loggers.preferences_dataset",
                        types.SimpleNamespace(read_judgements=read_judgements))
    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    pretrained = GPT2LMHeadModel.from_pretrained(folder).transformer.h[0].mlp.c_fc.weight.detach()
    out = tmp_path / "reward"
    main(["train", "reward", "--dataset", "/built/prefs", "--model.pretrained", str(folder), "--out", str(out),
          "--steps", "3", "--members", "2", "--batch_size", "4", "--hidden", "8", "--val_split", "validation",
          "--lr", "1e-3", "--log_every", "1", "--val_every", "3", "--no-progress"])
    assert "reward model: 3 steps" in capsys.readouterr().out
    shutil.rmtree(folder)                                           # the checkpoint alone must be enough to score
    model = RewardModel.load(out / "checkpoint", "cpu")
    assert model.tokenizer.to_dict()["hf_tokenizer"] == tok.to_dict()["hf_tokenizer"]
    for member in model.members:                                    # each member: the pretrained body, fine-tuned
        block = member.trunk.h[0].mlp.c_fc.weight
        assert member.head[0].in_features == 32 and member.trunk.wte.num_embeddings == tok.vocab_size
        assert not torch.equal(block, pretrained) and torch.allclose(block, pretrained, atol=0.05)
    clips = [j.left for j in wordle_judgements["validation"]]
    steps, _ = model.encode(clips[:1])
    first = steps["input_ids"][0][steps["attention_mask"][0].bool()].tolist()
    assert first[0] == tok.bos_id and first[-1] == tok.eoa_id and tok.eoo_id in first   # its own tokenizer's layout
    rewards, _ = model.member_step_rewards(clips)
    assert torch.isfinite(rewards).all() and len(set(rewards[:, 0].round(decimals=5).tolist())) > 1


# --- fast twins of the command-line runs above (no recording, no tf.data) -----------------------------------------

def test_ppos_sampler_prompts_and_decodes_with_the_pretrained_tokenizer(tiny, tok):
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import initial_model, rollout_policy
    from trainers.core.model import ModelConfig

    config, model, tokenizer = initial_model(PPOConfig(model=ModelConfig(pretrained=str(tiny)), seed=1))
    assert tokenizer == tok and model.value_head.in_features == 32
    policy = rollout_policy(config, model, tokenizer, list(WORDS))
    policy.reset(5)
    guess = policy.act(["", "⬛🟨⬛⬛🟩"], ["crane"])
    query, response = policy.samples[(5, 1)]
    assert guess in WORDS
    assert query == tok.encode_prompt(["", "⬛🟨⬛⬛🟩"], ["crane"])
    assert response[:len(tok.encode(guess)) + 1] == tok.encode(guess) + [tok.eoa_id]


def test_a_reward_model_on_a_pretrained_trunk_trains_saves_and_scores_without_the_folder(tiny, tok, tmp_path):
    from transformers import GPT2LMHeadModel

    from trainers.algorithms.reward.model import RewardModel, RewardModelConfig
    from trainers.algorithms.reward.trainer import RewardModelTrainer
    from trainers.core.model import ModelConfig

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    pretrained = GPT2LMHeadModel.from_pretrained(folder).transformer.h[0].mlp.c_fc.weight.detach()
    config = RewardModelConfig(model=ModelConfig(pretrained=str(folder)), members=2, hidden=8, batch_size=4,
                               lr=1e-3, device="cpu")
    trainer = RewardModelTrainer(config)
    for _ in range(2):
        trainer.train_step(text_judgements(8, seed=0))
    assert trainer.tokenizer.to_dict()["hf_tokenizer"] == tok.to_dict()["hf_tokenizer"]
    for member in trainer.model.members:
        block = member.trunk.h[0].mlp.c_fc.weight
        assert not torch.equal(block, pretrained) and torch.allclose(block, pretrained, atol=0.05)
    clips = [j.left for j in text_judgements(4, seed=1)]
    expected, _ = trainer.model.member_step_rewards(clips)
    trainer.model.save(tmp_path / "checkpoint")
    shutil.rmtree(folder)
    loaded = RewardModel.load(tmp_path / "checkpoint", "cpu")
    assert (tmp_path / "checkpoint" / "lm" / "config.json").is_file() and loaded.tokenizer == trainer.tokenizer
    assert torch.equal(loaded.member_step_rewards(clips)[0], expected)


# --- MALT --------------------------------------------------------------------------------------------------------

def test_malt_refuses_a_start_trained_from_a_pretrained_model_and_says_why(tiny, tok, tmp_path):
    from trainers.algorithms.bc import BCConfig, BCModel
    from trainers.algorithms.malt.malt import MALTConfig, run_malt
    from trainers.core.checkpoint import save_checkpoint
    from trainers.core.model import ModelConfig

    config = BCConfig(out=str(tmp_path / "bc"), model=ModelConfig(pretrained=str(tiny)))
    checkpoint = save_checkpoint(tmp_path / "bc", "bc", config, BCModel(config, tok), tok, {"step": 0})
    with pytest.raises(ValueError, match=r"trained from the pretrained LM .*tokenizer is not in that folder"):
        run_malt(MALTConfig(init=str(checkpoint), out=str(tmp_path / "malt")), progress=False)
    assert not (tmp_path / "malt").exists()                         # refused before anything is written
