"""Pretrained causal LMs with their own tokenizer (``ModelConfig.pretrained``): found without network, their
tokenizer lays out the token MDP with every text tokenized on its own (no BPE merge across an observation/action
boundary), the action's tokens marked and the reward on its last one; BC and ILQL train from a tiny GPT-2 saved
with ``save_pretrained`` and the agents play from the checkpoint, which no longer needs the model folder."""

from __future__ import annotations

import ast
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from rlds_lang.pretrained_tokenizer import ADDED, PretrainedTokenizer
from rlds_lang.tokenizers import load_tokenizer
from tests.pretrained_fixtures import ENDOFTEXT, episodes, play_three_games, train_config
from tests.pretrained_fixtures import tiny, tok  # noqa: F401  (module fixtures)
from tests.toy_data import build_dataset, wordle_like
from trainers.core.model import ModelConfig, language_model_for
from trainers.core.pretrained import pretrained_tokenizer, resolve_pretrained, task_tokenizer
from transforms.token_layout import StepsBatch, TokenMDPConfig, layout

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(24, seed=3), tmp_path_factory.mktemp("wordle_like"))


@pytest.fixture
def no_network(monkeypatch) -> list:
    """Every attempt to resolve a host or open a connection is recorded (and refused); the hub is not offline
    by its own setting, so only ``local_files_only`` keeps it off the network."""
    import huggingface_hub.constants

    attempts: list = []

    def refuse(*args, **kwargs):
        attempts.append(args[:2])
        raise OSError("network is not allowed in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return attempts


def one_episode(observations, actions, rewards) -> StepsBatch:
    """One episode of ``len(observations)`` steps whose last step has no action and ends it."""
    return episodes((observations, actions, rewards))


# --- the token view ---------------------------------------------------------------------------------------------

def test_the_special_ids_are_distinct_and_the_models_own_token_begins_episodes(tok):
    ids = [tok.pad_id, tok.bos_id, tok.eos_id, tok.eoo_id, tok.eoa_id]
    assert len(set(ids)) == 5
    assert tok.hf.id_to_token(tok.bos_id) == ENDOFTEXT            # GPT-2's document start, as in its pretraining
    assert [tok.hf.id_to_token(i) for i in (tok.eos_id, tok.eoo_id, tok.eoa_id, tok.pad_id)] == \
        [ADDED["eos"], ADDED["eoo"], ADDED["eoa"], ADDED["pad"]]
    assert tok.vocab_size == tok.hf.get_vocab_size(with_added_tokens=True) == max(ids) + 1


def test_observation_and_action_are_tokenized_apart_so_no_merge_crosses_the_boundary(tok):
    observation, action = "cr", "anezq"                            # "crane" is one token of this BPE
    assert len(tok.encode("crane")) == 1
    joint = tok.encode(observation + action)
    apart = tok.encode(observation) + tok.encode(action)
    assert joint != apart, "precondition: tokenizing across the boundary would merge"
    out = layout(one_episode([observation, "⬛"], [action], [-1.0]), tok, TokenMDPConfig(observation_key="o"))
    ids = out["input_ids"].tolist()
    n_obs, n_act = len(tok.encode(observation)), len(tok.encode(action))
    assert n_act >= 2, "precondition: the action is several tokens, so its last one is not its first"
    assert ids == ([tok.bos_id] + tok.encode(observation) + [tok.eoo_id] + tok.encode(action) + [tok.eoa_id]
                   + tok.encode("⬛") + [tok.eoo_id, tok.eos_id])
    first_action = 1 + n_obs + 1
    eoa = first_action + n_act
    assert out["action_mask"].tolist() == [first_action <= i <= eoa for i in range(len(ids))]
    assert tok.decode(ids[first_action:eoa]) == action and tok.decode(ids[1:1 + n_obs]) == observation
    # the reward lands on the action's last token ([EOA], as with every tokenizer), nowhere else
    assert out["rewards"].tolist() == [-1.0 if i == eoa else 0.0 for i in range(len(ids))]
    assert out["turn_end"].tolist() == [i == eoa for i in range(len(ids))]


def test_the_agents_prompt_is_the_layouts_prefix_with_every_text_tokenized_apart(tok):
    observations, actions = ["cr", "⬛🟨"], ["anezq"]
    out = layout(one_episode(observations, actions, [-1.0]), tok, TokenMDPConfig(observation_key="o"))
    prompt = tok.encode_prompt(observations, actions)
    assert prompt == out["input_ids"].tolist()[:-1]                # all but [EOS]
    assert prompt[1:1 + len(tok.encode("cr"))] == tok.encode("cr")
    assert tok.encode_prompt(observations, actions, strict=True) == prompt


def test_text_that_spells_a_special_token_is_text_and_every_text_comes_back(tok):
    for text in ["<|eoa|>", ENDOFTEXT, "<|pad|>x", "slate🟩\r\n", "é ⬛ 😀", ""]:
        ids = tok.encode(text)
        assert not set(ids) & tok.special_ids, (text, ids)
        assert tok.decode(ids) == text
    assert tok.decode([tok.bos_id, *tok.encode("ab"), tok.eoa_id], skip_special=False) == f"{ENDOFTEXT}ab<|eoa|>"
    with pytest.raises(ValueError, match="id 9999 at position 1"):
        tok.decode([5, 9999])


def test_the_tokenizer_saves_and_loads_with_the_same_ids(tok, tmp_path):
    tok.save(tmp_path / "tokenizer.json")
    back = load_tokenizer(tmp_path / "tokenizer.json")
    assert isinstance(back, PretrainedTokenizer) and back == tok
    assert (back.pad_id, back.bos_id, back.eos_id, back.eoo_id, back.eoa_id) == \
        (tok.pad_id, tok.bos_id, tok.eos_id, tok.eoo_id, tok.eoa_id)
    assert back.encode_batch(["crane", "⬛🟩", "<|eoo|>"]) == tok.encode_batch(["crane", "⬛🟩", "<|eoo|>"])
    description = (tmp_path / "tokenizer.json").read_text().replace('"eoa": "<|eoa|>",', "")
    (tmp_path / "broken.json").write_text(description)
    with pytest.raises(ValueError, match=r"broken\.json.*'roles'"):
        load_tokenizer(tmp_path / "broken.json")


def test_the_core_adapter_imports_no_transformers():
    source = (REPO / "rlds_lang" / "pretrained_tokenizer.py").read_text(encoding="utf-8")
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert "transformers" not in imported and "torch" not in imported


# --- finding the model without network --------------------------------------------------------------------------

def test_a_folder_is_used_as_given_and_a_bad_one_is_named(tiny, tmp_path):
    assert resolve_pretrained(str(tiny)) == tiny
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        resolve_pretrained(str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="no such folder"):
        resolve_pretrained(str(tmp_path / "missing"))


def test_a_name_resolves_from_the_local_cache_without_network(tiny, tmp_path, monkeypatch, no_network):
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    snapshot = cache / "models--tiny--gpt2" / "snapshots" / "0123abcd"
    shutil.copytree(tiny, snapshot)
    (cache / "models--tiny--gpt2" / "refs").mkdir()
    (cache / "models--tiny--gpt2" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    assert resolve_pretrained("tiny/gpt2") == snapshot
    assert pretrained_tokenizer("tiny/gpt2").encode("crane") == pretrained_tokenizer(str(tiny)).encode("crane")
    assert no_network == []


def test_a_missing_name_says_where_it_looked_and_never_uses_the_network(tmp_path, monkeypatch, no_network):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(FileNotFoundError) as error:
        resolve_pretrained("nobody/no-such-model")
    message = str(error.value)
    assert str(tmp_path / "hub") in message and "models--nobody--no-such-model" in message
    assert "not a folder" in message
    assert no_network == []


def test_a_named_tokenizer_beside_a_pretrained_model_is_refused(tiny):
    from trainers.algorithms.bc import BCConfig

    assert isinstance(task_tokenizer(BCConfig(model=ModelConfig(pretrained=str(tiny)))), PretrainedTokenizer)
    with pytest.raises(ValueError, match="brings its own tokenizer"):
        task_tokenizer(BCConfig(tokenizer="lmrl_gym_words", model=ModelConfig(pretrained=str(tiny))))


# --- the model ---------------------------------------------------------------------------------------------------

def test_the_model_keeps_its_pretrained_weights_and_grows_rows_for_the_added_tokens(tiny, tok):
    from transformers import GPT2LMHeadModel

    original = GPT2LMHeadModel.from_pretrained(tiny)
    lm = language_model_for(ModelConfig(pretrained=str(tiny)), tok)
    rows = original.config.vocab_size
    assert lm.get_input_embeddings().weight.shape[0] == tok.vocab_size > rows
    assert torch.equal(lm.get_input_embeddings().weight[:rows], original.get_input_embeddings().weight)
    for name, value in original.transformer.h.state_dict().items():
        assert torch.equal(lm.transformer.h.state_dict()[name], value), name
    assert (lm.config.pad_token_id, lm.config.bos_token_id, lm.config.eos_token_id) == \
        (tok.pad_id, tok.bos_id, tok.eos_id)
    assert lm(input_ids=torch.tensor([tok.encode_prompt(["cr"], [])])).logits.shape[-1] == tok.vocab_size


@pytest.mark.parametrize("clash", [{"checkpoint": "x"}, {"logit_scale": 10.0}, {"spelled_embeddings": True}])
def test_options_of_a_model_built_here_are_refused_beside_a_pretrained_one(tiny, tok, clash):
    with pytest.raises(ValueError, match=f"cannot be combined with {next(iter(clash))}"):
        language_model_for(ModelConfig(pretrained=str(tiny), **clash), tok)


def test_a_pretrained_model_with_another_tokenizer_is_refused(tiny):
    from rlds_lang.tokenizers import wordle_tokenizer

    with pytest.raises(ValueError, match="needs the model's own tokenizer"):
        language_model_for(ModelConfig(pretrained=str(tiny)), wordle_tokenizer())


def test_ilqls_separate_value_trunk_and_heads_start_on_the_pretrained_trunk(tiny, tok):
    from transformers import GPT2LMHeadModel

    from trainers.algorithms.ilql.ilql import ILQLConfig, ILQLModel

    original = GPT2LMHeadModel.from_pretrained(tiny)
    model = ILQLModel(ILQLConfig(model=ModelConfig(pretrained=str(tiny)), separate_value_trunk=True), tok)
    block = original.transformer.h[0].attn.c_attn.weight
    assert torch.equal(model.lm.policy.transformer.h[0].attn.c_attn.weight, block)
    assert torch.equal(model.lm.value.h[0].attn.c_attn.weight, block)
    assert model.heads.q1[0].in_features == original.config.n_embd


# --- training and playing ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["bc", "ilql", "mc", "cql"])
def test_one_step_of_bc_and_ilql_trains_the_pretrained_trunk_and_the_heads_on_it(algorithm, tiny, tok):
    from trainers.algorithms.registry import algorithm_by_name
    from trainers.core.loop import accumulate_gradients
    from transforms.token_layout import sequences
    from transforms.torch_bridge import collate_token_mdp

    config = train_config(algorithm, "unused", Path("unused"), tiny)
    module = algorithm_by_name(algorithm).model_class(config, tok)
    games = episodes((["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], ["crane", "slate"], [-1.0, 0.0]),
                     (["", "⬛⬛⬛⬛⬛"], ["essay"], [-1.0]))
    batch = collate_token_mdp(sequences(layout(games, tok, TokenMDPConfig(observation_key="o"))), tok.pad_id)
    metrics = accumulate_gradients(module, [batch])
    assert np.isfinite(metrics["loss"])
    trunk = getattr(module.lm, "policy", module.lm).transformer.h[0].mlp.c_fc.weight
    assert trunk.grad is not None and trunk.grad.abs().sum() > 0
    if algorithm != "bc":  # the value trainers' heads learn on the pretrained trunk
        assert module.heads.q1[0].weight.grad.abs().sum() > 0 and module.heads.v[0].weight.grad.abs().sum() > 0
    if algorithm == "ilql":
        assert module.heads.target_q1[0].weight.grad is None       # the target heads follow by Polyak averaging


@pytest.mark.parametrize("algorithm", ["bc", "ilql", "mc", "cql", "psi", "dt"])
def test_a_checkpoint_from_a_pretrained_model_loads_and_plays_without_the_models_folder(algorithm, tiny, tok, tmp_path):
    from trainers.algorithms.registry import algorithm_by_name, built_from_checkpoint, load_agent_model
    from trainers.core.checkpoint import save_checkpoint

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    config = train_config(algorithm, "unused", tmp_path / "run", folder)
    module = algorithm_by_name(algorithm).model_class(config, task_tokenizer(config))
    with torch.no_grad():
        next(module.parameters()).add_(1.0)                          # a trained change the folder does not hold
    checkpoint = save_checkpoint(tmp_path / "run", algorithm, config, module, tok, {"step": 3})
    shutil.rmtree(folder)
    assert built_from_checkpoint(config, checkpoint).model.pretrained == str(checkpoint / "lm")
    loaded = load_agent_model(checkpoint)
    assert loaded.config.model.pretrained == str(folder)             # the config says what it was trained from
    for name, value in module.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], value), name
    play_three_games(checkpoint, tmp_path)


@pytest.mark.parametrize("algorithm", ["bc", "ilql"])
def test_bc_and_ilql_train_from_a_pretrained_model_and_play_without_its_folder(algorithm, tiny, tok, wordle_dataset,
                                                                              tmp_path):
    from transformers import GPT2LMHeadModel

    from trainers.algorithms.registry import load_agent_model, train

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    pretrained = GPT2LMHeadModel.from_pretrained(folder).transformer.h[0].mlp.c_fc.weight
    result = train(algorithm, train_config(algorithm, wordle_dataset, tmp_path / "run", folder), progress=False)
    assert result.steps == 3 and np.isfinite(result.final_metrics["loss"])
    shutil.rmtree(folder)                                           # the checkpoint alone must be enough to play
    loaded = load_agent_model(tmp_path / "run" / "checkpoint")
    saved = loaded.tokenizer.to_dict()
    assert (saved["hf_tokenizer"], saved["roles"], saved["source"]) == (tok.to_dict()["hf_tokenizer"], tok.roles,
                                                                        str(folder))
    lm = getattr(loaded.lm, "policy", loaded.lm)
    assert not torch.equal(lm.transformer.h[0].mlp.c_fc.weight, pretrained)   # fine-tuned...
    assert torch.allclose(lm.transformer.h[0].mlp.c_fc.weight, pretrained, atol=0.1)  # ...from the pretrained weights
    if algorithm == "ilql":
        state = loaded.model.state_dict()
        assert not torch.equal(state["heads.target_q1.0.weight"], state["heads.q1.0.weight"])
    play_three_games(tmp_path / "run" / "checkpoint", tmp_path)


def test_rlds_lang_train_takes_model_pretrained(tiny, wordle_dataset, tmp_path, capsys):
    from trainers.cli.main import main

    main(["train", "bc", "--dataset", wordle_dataset, "--model.pretrained", str(tiny), "--steps", "2",
          "--batch_size", "4", "--max_length", "64", "--out", str(tmp_path / "bc"), "--no-progress"])
    assert "bc: 2 steps" in capsys.readouterr().out
    assert isinstance(load_tokenizer(tmp_path / "bc" / "checkpoint" / "tokenizer.json"), PretrainedTokenizer)
