"""Devices and precision (``trainers.core.device``): ``--device`` resolves in one place and an absent device is a
clear error on every command; every trainer, agent, sampler, evaluation, reward model and the PPO rollout makes its
tensors with their device (``tests.device_helpers.forgotten_device``), keeps its modules' tensors and batches on
its device (checked on ``meta``); checkpoints written on a GPU load on the CPU; bf16 autocast runs on the CPU; the
VisDial evaluation plays episodes together exactly as one at a time."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.tokenizers import make_tokenizer
from tests.device_helpers import CHECKED, ForgottenDevice, eager_attention, forgotten_device, tensors_off
from trainers.algorithms.registry import ALGORITHMS, load_agent_model, load_policy
from trainers.core import device as devices
from trainers.core.device import (
    DeviceError,
    Placement,
    chosen,
    module_device,
    placement,
    resolve_device,
    resolve_precision,
)
from trainers.core.loop import DistInfo, build_module, optimizer_step
from trainers.core.model import ModelConfig, ValueHeads, build_language_model
from trainers.core.policy import LanguageModelPolicy

TOK = make_tokenizer("wordle")
TINY = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=128)
CPU, META = torch.device("cpu"), torch.device("meta")
#: the trainers of the shared token-batch loop.
TOKEN_TRAINERS = ["bc", "ilql", "mc", "cql", "psi", "dt", "utterance_ilql", "chai"]
WORDS = ["crane", "slate", "abide", "speed", "geese", "these", "lever", "eerie"]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture(scope="module")
def batch() -> dict:
    """One token-MDP batch of two Wordle games (one cut short), as the loop's data path gives it."""
    from tests.test_token_mdp import episodes_of
    from transforms.token_mdp import TokenMDPConfig, token_batches
    from transforms.torch_bridge import TensorBatches

    games = [{"observations": ["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], "actions": ["crane", "abide"], "rewards": [-1.0, 0.0],
              "id": "won"},
             {"observations": ["", "⬛⬛⬛⬛⬛", "⬛🟨⬛⬛🟩"], "actions": ["slate", "crane"], "rewards": [-1.0, -1.0],
              "id": "cut", "terminal": False}]
    mdp = TokenMDPConfig(observation_key="observation", max_length=48)
    [first] = list(TensorBatches(token_batches(episodes_of(games), TOK, mdp, batch_size=2)))
    return first


def token_config(algorithm: str, tmp_path: Path, **kwargs):
    return ALGORITHMS[algorithm].config_class(dataset="unused", out=str(tmp_path / algorithm), model=TINY,
                                              max_length=48, **kwargs)


# -- one place resolves the device ---------------------------------------------------------------------------------

def test_auto_is_the_cpu_here_and_an_absent_cuda_device_is_an_error_naming_it(no_cuda):
    assert resolve_device("auto") == resolve_device(None) == CPU == resolve_device("CPU")
    with pytest.raises(DeviceError, match=r"^--device cuda: this machine has no CUDA device "
                                          r"\(torch.cuda.is_available\(\) is False\)$"):
        resolve_device("cuda")
    with pytest.raises(DeviceError, match=r"--device cuda:1: this machine has no CUDA device"):
        placement("cuda:1", "bf16")
    for wrong in ("tpu", "cuda:x", "gpu"):
        with pytest.raises(DeviceError, match=f"--device '{wrong}': expected auto, cpu, cuda or cuda:N"):
            resolve_device(wrong)
    with pytest.raises(DeviceError, match="--precision tf32 is a CUDA matmul mode; on cpu use fp32 or bf16"):
        resolve_precision("tf32", CPU)
    with pytest.raises(DeviceError, match="--precision 'fp16': expected one of auto, fp32, tf32, bf16"):
        resolve_precision("fp16", CPU)
    assert placement("cpu", "auto") == Placement(CPU, "fp32") and placement("cpu", "bf16").precision == "bf16"


def test_auto_is_cuda_when_present_and_torchrun_processes_take_their_local_rank(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda", 0) == resolve_device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(DeviceError, match=r"--device cuda:2: this machine has 2 CUDA device\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:2")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert resolve_device("auto") == torch.device("cuda", 1)
    assert devices.distributed_backend(torch.device("cuda", 1)) == "nccl" and devices.distributed_backend(CPU) == "gloo"
    assert devices.ddp_device_ids(torch.device("cuda", 1)) == [1] and devices.ddp_device_ids(CPU) is None


def test_a_command_s_choice_is_what_auto_means_inside_it(no_cuda):
    with chosen("cpu", "bf16"):
        assert placement() == Placement(CPU, "bf16")
        with chosen("auto", "auto"):  # a nested run with the defaults keeps the command's choice
            assert placement("auto", "auto") == Placement(CPU, "bf16")
        assert placement("cpu", "fp32").precision == "fp32"  # a config's own value wins
    assert placement() == Placement(CPU, "fp32")
    with pytest.raises(DeviceError, match="--device cuda: this machine has no CUDA device"):
        with chosen("cuda"):
            pass  # checked on entry: nothing runs on an absent device


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """``(path, parser)`` of every leaf command under ``parser``."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _commands(child, (*path, name))


def test_every_train_eval_and_results_command_takes_device_and_precision():
    from trainers.cli.main import build_parser

    commands = [(path, p) for path, p in _commands(build_parser()) if path[0] in ("train", "eval", "results")]
    names = {" ".join(path) for path, _ in commands}
    assert {"train bc", "train ilql", "train ppo", "train dpo", "train reward", "train online_pbc", "train chai", "eval",
            "results wordle", "results lmrl-gym", "results baselines", "results ppo", "results malt",
            "results preferences curves"} <= names
    for path, parser in commands:
        options = {option for action in parser._actions for option in action.option_strings}
        assert {"--device", "--precision"} <= options, path


def test_device_cuda_without_cuda_stops_train_and_eval_with_the_error(no_cuda, tmp_path, capsys):
    """A usage error, as argparse's are: one line on stderr naming the device, exit status 2, before any work."""
    from trainers.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["train", "bc", "--dataset", str(tmp_path), "--out", str(tmp_path / "bc"), "--device", "cuda"])
    assert stopped.value.code == 2 and not (tmp_path / "bc").exists()  # refused before any work
    assert capsys.readouterr().err == ("rlds-lang train: --device cuda: this machine has no CUDA device "
                                       "(torch.cuda.is_available() is False)\n")
    with pytest.raises(SystemExit) as stopped:
        main(["eval", "--optimal", "--games", "1", "--device", "cuda:1"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith("rlds-lang eval: --device cuda:1: this machine has no CUDA device")


# -- every tensor is made with its device ---------------------------------------------------------------------------

def test_the_check_catches_a_tensor_made_without_its_device():
    made_here = compile("torch.zeros(2)", str(CHECKED / "core" / "example.py"), "eval")
    with forgotten_device():
        with pytest.raises(ForgottenDevice, match=r"torch.zeros without device= at .*trainers/core/example.py:1"):
            eval(made_here, {"torch": torch})
        assert eval(compile("torch.zeros(2, device='cpu')", str(CHECKED / "x.py"), "eval"), {"torch": torch}).shape
        with torch.device("cpu"):  # a block that gives factories their device
            eval(made_here, {"torch": torch})
        torch.zeros(2)  # outside trainers/: not ours to check


@pytest.mark.parametrize("algorithm", TOKEN_TRAINERS)
def test_a_training_step_of_every_token_trainer_makes_its_tensors_on_its_device(algorithm, batch, tmp_path):
    config = token_config(algorithm, tmp_path, device="cpu")
    place = devices.placement_of(config)
    torch.manual_seed(0)
    with forgotten_device():
        module = build_module(ALGORITHMS[algorithm], config, TOK, place)
        optimizer = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=1e-3)
        for _ in range(2):  # the second step runs the targets the first one moved
            metrics = optimizer_step(module, module, optimizer, [batch], 1.0, DistInfo(), place)
    assert math.isfinite(metrics["loss"])


#: CHAI marks the states it samples at with ``torch.nonzero``, whose output size depends on values ``meta`` has not.
DATA_DEPENDENT = {"chai"}


@pytest.mark.parametrize("algorithm", [a for a in TOKEN_TRAINERS if a not in DATA_DEPENDENT])
def test_a_token_trainer_s_loss_and_target_update_compute_on_its_device(algorithm, batch, tmp_path):
    """The forward pass, loss, backward pass and target update of a token trainer, with the module and the batch
    on ``meta``: a device that, like CUDA, refuses to mix with a CPU tensor of more than one element, so a loss
    that makes a tensor with an explicit ``device="cpu"`` (which the factory check lets pass) fails here."""
    place = Placement(META)
    module = eager_attention(build_module(ALGORITHMS[algorithm], token_config(algorithm, tmp_path), TOK, place))
    out = module(place.move(batch))
    out.loss.backward()
    module.after_optimizer_step()
    assert out.loss.device == META and out.count.device == META
    assert {value.device for value in out.metrics.values()} <= {META}
    assert tensors_off(module, META) == [] and all(p.grad is None or p.grad.device == META for p in module.parameters())


def test_ppo_rollouts_and_updates_make_their_tensors_on_their_device(tmp_path):
    from tests.test_ppo import ACTIONS, PickEnv, config
    from trainers.algorithms.ppo.trainer import train_ppo

    tok = CharTokenizer("ab🟩⬛")
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32), tok.vocab_size, tok.pad_id)
    with forgotten_device():
        result = train_ppo(config(tmp_path / "ppo", updates=1, episodes=4), env=PickEnv(), allowed_actions=ACTIONS,
                           source="env", init=(lm, tok))
    assert result.updates == 1 and math.isfinite(result.final_metrics["loss/total"])


def test_ppo_samples_on_its_lm_s_device_and_collects_the_rollouts_there(tmp_path, monkeypatch):
    """The rollout policy hands the sampler its queries and uniforms on the device of its LM (``meta`` here, as
    CUDA would be) and ``collect_rollouts`` returns every turn tensor there, where the PPO update computes with
    them. The sampler is replaced by one that says ``ab`` (a forward pass on ``meta`` has no values to sample)."""
    from tests.test_ppo import ACTIONS, PickEnv
    from trainers.algorithms.ppo import rollout
    from trainers.algorithms.ppo.rollout import RolloutPolicy, collect_rollouts

    tok = CharTokenizer("ab🟩⬛")
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32), tok.vocab_size,
                              tok.pad_id).to(META)
    given: list[set[torch.device]] = []

    def says_ab(model, queries, query_mask, length, temperature, uniforms, constraint=None):
        given.append({queries.device, query_mask.device, uniforms.device, module_device(model)})
        return torch.tensor([tok.encode("ab") + [tok.eoa_id]], device="cpu")[:, :length]

    monkeypatch.setattr(rollout, "generate", says_ab)
    policy = RolloutPolicy(lm, tok, 4, 3, 1.0, ACTIONS)
    policy.info = {"ppo_update": 1}
    turns = collect_rollouts(PickEnv(), policy, [0, 1], tmp_path / "r", "env", truncate_after=1, penalty=-1.0)
    assert len(given) == 2 and all(devices_seen == {META} for devices_seen in given)
    assert len(turns) == 2 and tensors_off(turns, META) == []
    assert turns.responses.shape == (2, 3) and turns.scores.shape == (2,)


def test_reward_models_train_and_predict_with_their_tensors_on_their_device():
    from tests.reward_fixtures import judgements, text_clip, vector_clip
    from trainers.algorithms.reward.model import RewardModelConfig
    from trainers.algorithms.reward.trainer import RewardModelTrainer, evaluate

    for make_clip, model in ((text_clip, ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32)),
                             (vector_clip, ModelConfig())):
        labels = judgements(make_clip, 12, seed=1)
        trainer = RewardModelTrainer(RewardModelConfig(members=2, batch_size=4, val_every=1, model=model))
        with forgotten_device():
            metrics = trainer.train_step(labels[:8], labels[8:])
            assert math.isfinite(metrics["loss"]) and math.isfinite(evaluate(trainer.model, labels[8:], 0.1)["loss"])
            assert len(trainer.model.predict([j.left for j in labels])) == len(labels)


def test_dpo_and_the_malt_turn_trainer_make_their_tensors_on_their_device(tmp_path):
    from tests.malt_fixtures import TINY as MALT_TINY
    from tests.malt_fixtures import tiny_checkpoint
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.dpo.data import PreferencePair
    from trainers.algorithms.dpo.dpo import DPOConfig
    from trainers.algorithms.dpo.trainer import train_dpo
    from trainers.algorithms.malt.team import AgentTurn, fit_turns

    init = tiny_checkpoint(tmp_path / "init")
    pairs = [PreferencePair(("",), (), "crane", "slate", ("a", "b")),
             PreferencePair(("", "⬛🟨⬛⬛🟩"), ("crane",), "abide", "these", ("c", "d"))]
    turns = [AgentTurn(("",), (), "crane", 0), AgentTurn(("", "⬛🟨⬛⬛🟩"), ("crane",), "abide", 0)]
    config = DPOConfig(dataset="pairs in memory", init=str(init), out=str(tmp_path / "dpo"), steps=2, batch_size=2)
    with forgotten_device():
        result = train_dpo(config, load_agent_model(init), None, progress=False, pairs=pairs)
        fit_turns(BCConfig(out=str(tmp_path / "turns"), model=MALT_TINY, steps=2, batch_size=2), turns)
    assert result.steps == 2 and (tmp_path / "turns" / "checkpoint" / "model.pt").is_file()


@pytest.fixture(scope="module")
def ilql_checkpoint(tmp_path_factory) -> Path:
    """A randomly initialised ILQL model saved as a checkpoint."""
    from trainers.algorithms.ilql.ilql import ILQLConfig, ILQLModel
    from trainers.core.checkpoint import save_checkpoint

    out = tmp_path_factory.mktemp("ilql")
    torch.manual_seed(0)
    config = ILQLConfig(out=str(out), model=TINY, max_length=48)
    module = ILQLModel(config, TOK)
    optimizer = torch.optim.AdamW(module.parameters())
    return save_checkpoint(out, "ilql", config, module, TOK, {"step": 0, "optimizer": optimizer.state_dict()})


def test_agents_evaluations_and_diagnostics_make_their_tensors_on_their_device(ilql_checkpoint, batch, tmp_path):
    from trainers.evaluation.diagnostics import utterance_values, word_log_probs
    from trainers.evaluation.wordle import EvalConfig, evaluate
    from trainers.experiments.top_advantage import batch_utterance_advantages

    words = tmp_path / "words.txt"
    words.write_text("\n".join(WORDS) + "\n")
    config = EvalConfig(games=3, batch_games=2, answers=str(words), guesses=str(words))
    with forgotten_device():
        loaded = load_agent_model(ilql_checkpoint)
        constrained = load_policy(ilql_checkpoint, allowed_actions=WORDS, beta=4.0)
        assert evaluate(constrained, config, progress=False).games == 3
        free = LanguageModelPolicy(loaded.lm, TOK, heads=loaded.heads, beta=1.0, max_action_tokens=3)
        assert len(free.act_batch([([""], []), (["", "⬛⬛⬛⬛⬛"], ["slate"])], seeds=[1, 2])) == 2
        assert len(free.act_batch([([""], [])])) == 1  # without seeds: the agent's own generator
        assert utterance_values(loaded, ([""], []), WORDS[:2]).shape == (2,)
        assert word_log_probs(loaded, ([""], []), WORDS[:3]).shape == (3,)
        assert batch_utterance_advantages(loaded, batch)[0]


def test_the_utterance_level_agent_makes_its_tensors_on_its_device(tmp_path):
    from trainers.algorithms.utterance_ilql.config import UtteranceILQLConfig
    from trainers.algorithms.utterance_ilql.model import UtteranceILQLModel
    from trainers.core.checkpoint import save_checkpoint

    config = UtteranceILQLConfig(out=str(tmp_path), model=TINY, samples=2)
    save_checkpoint(tmp_path, "utterance_ilql", config, UtteranceILQLModel(config, TOK), TOK, {"step": 0})
    with forgotten_device():
        agent = load_policy(tmp_path / "checkpoint", allowed_actions=WORDS)
        assert set(agent.act_batch([([""], []), ([""], [])], seeds=[0, 1])) <= set(WORDS)


# -- modules, agents and batches live on the configured device --------------------------------------------------------

@pytest.mark.parametrize("algorithm", [*TOKEN_TRAINERS, "ppo"])
def test_every_trainer_module_moves_all_its_tensors_to_its_device(algorithm, tmp_path):
    spec = ALGORITHMS[algorithm]
    config = spec.config_class(out=str(tmp_path), model=TINY, **({} if algorithm == "ppo" else {"max_length": 48}))
    if algorithm == "ilql":
        config.target_network, config.decode_with = "trunk", "live"
    module = build_module(spec, config, TOK, Placement(META))
    assert tensors_off(module, META) == []


def test_agents_samplers_and_reward_models_keep_every_tensor_on_their_device():
    from tests.reward_fixtures import judgements, text_clip
    from trainers.algorithms.ppo.rollout import RolloutPolicy
    from trainers.algorithms.reward.model import RewardModelConfig
    from trainers.algorithms.reward.trainer import RewardModelTrainer

    lm = build_language_model(TINY, TOK.vocab_size, TOK.pad_id)
    heads = ValueHeads(TINY.n_embd, TOK.vocab_size)
    agent = LanguageModelPolicy(lm, TOK, heads=heads, beta=1.0, allowed_actions=WORDS, device=META)
    assert agent.device == META and tensors_off(agent, META) == []
    sampler = RolloutPolicy(lm, TOK, 16, 6, 1.0, WORDS)  # where its LM is (meta, moved by the agent above)
    assert tensors_off(sampler, META) == []
    trainer = RewardModelTrainer(RewardModelConfig(members=2, model=TINY))
    trainer.build(judgements(text_clip, 2))
    trainer.model.to(META)
    assert trainer.model.device == META and tensors_off(trainer.model, META) == []
    steps, owner = trainer.model.encode([text_clip(np.random.default_rng(0), "c:0")])
    assert tensors_off(steps, META) == [] and owner.device == META


class _Probe(torch.nn.Module):
    """Records the devices of the batch it is given, then stops the step."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.seen: dict[str, torch.device] = {}

    def forward(self, batch):
        self.seen = {k: v.device for k, v in batch.items() if isinstance(v, torch.Tensor)}
        raise StopIteration("probe")


def test_the_shared_loop_and_the_in_memory_loop_move_every_batch_to_the_device(batch, tmp_path, monkeypatch):
    from trainers.algorithms.bc import BCConfig
    from trainers.core import tensor_loop

    probe = _Probe()
    with pytest.raises(StopIteration):
        optimizer_step(probe, probe, torch.optim.SGD(probe.parameters(), lr=0.1), [batch], 0.0, DistInfo(),
                       Placement(META))
    assert probe.seen and set(probe.seen.values()) == {META}
    monkeypatch.setattr(tensor_loop, "placement_of", lambda config: Placement(META))
    rows = {"input_ids": torch.zeros(3, 4, dtype=torch.long), "attention_mask": torch.ones(3, 4, dtype=torch.long)}
    with pytest.raises(StopIteration):
        tensor_loop.fit_tensors(BCConfig(out=str(tmp_path), steps=1, batch_size=2), "bc", probe, TOK, rows,
                                lambda b: probe(b), progress=False)
    assert set(probe.seen) == set(rows) and set(probe.seen.values()) == {META} and probe.weight.device == META


# -- checkpoints, precision, numbers ------------------------------------------------------------------------------------

@pytest.fixture
def saved_as_cuda(monkeypatch):
    """``torch.save`` tags every storage as CUDA's (what a checkpoint written on a GPU holds)."""
    registry = [(0, lambda storage: "cuda:0", lambda storage, location: None), *torch.serialization._package_registry]
    monkeypatch.setattr(torch.serialization, "_package_registry", registry)
    yield
    monkeypatch.setattr(torch.serialization, "_package_registry", registry[1:])


def test_a_checkpoint_written_on_a_gpu_loads_and_resumes_on_the_cpu(batch, tmp_path, no_cuda, saved_as_cuda,
                                                                    monkeypatch):
    from trainers.core.checkpoint import load_trainer_state, restore_trainer_state, save_checkpoint, trainer_state
    from trainers.core.loop import warmup_schedule

    config = token_config("ilql", tmp_path, steps=1)
    spec = ALGORITHMS["ilql"]
    torch.manual_seed(0)
    module = build_module(spec, config, TOK, Placement(CPU))
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_schedule(0))
    optimizer_step(module, module, optimizer, [batch], 1.0)
    save_checkpoint(config.out, "ilql", config, module, TOK, trainer_state(optimizer, scheduler, 1, 1.0))
    monkeypatch.setattr(torch.serialization, "_package_registry", torch.serialization._package_registry[1:])
    path = Path(config.out) / "checkpoint"
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(path / "model.pt", weights_only=True)  # the file says its tensors were on a GPU
    loaded = load_agent_model(path)
    assert all(torch.equal(v, module.state_dict()[k]) and v.device == CPU for k, v in loaded.model.state_dict().items())
    assert load_policy(path, allowed_actions=WORDS).act([""], []) in WORDS
    fresh = build_module(spec, config, TOK, Placement(CPU))
    again = torch.optim.AdamW(fresh.parameters(), lr=1e-3)
    state = load_trainer_state(config, fresh)
    restore_trainer_state(state, again, torch.optim.lr_scheduler.LambdaLR(again, warmup_schedule(0)))
    assert state["step"] == 1 and all(v.device == CPU for s in again.state.values() for v in s.values())


def test_bf16_autocast_trains_on_the_cpu_and_the_agent_plays_in_it(batch, tmp_path):
    outputs = []
    for algorithm in ("bc", "ilql"):
        config = token_config(algorithm, tmp_path, device="cpu", precision="bf16")
        place = devices.placement_of(config)
        module = build_module(ALGORITHMS[algorithm], config, TOK, place)
        module.lm.lm_head.register_forward_hook(lambda m, args, out: outputs.append(out.dtype))
        metrics = optimizer_step(module, module, torch.optim.AdamW(module.parameters()), [batch], 1.0, DistInfo(),
                                 place)
        assert math.isfinite(metrics["loss"]) and outputs[-1] == torch.bfloat16
        assert all(p.dtype == torch.float32 for p in module.parameters())  # weights stay float32
    agent = LanguageModelPolicy(module.lm, TOK, heads=module.heads, beta=1.0, allowed_actions=WORDS, precision="bf16")
    assert agent.act_batch([([""], [])], seeds=[0])[0] in WORDS and outputs[-1] == torch.bfloat16


def test_numbers_are_what_float_gives_each_value():
    values = [torch.tensor(0.1), torch.tensor(1 / 3, dtype=torch.float64), torch.tensor(7), 2.5,
              torch.tensor(0.2, dtype=torch.bfloat16)]
    assert devices.numbers(values) == [float(v) for v in values]
    assert devices.numbers([1, 2.0]) == [1.0, 2.0]


# -- evaluation plays many games at once -----------------------------------------------------------------------------

def test_visdial_episodes_played_together_equal_episodes_played_one_at_a_time(tmp_path):
    from rlds_lang.subword import SubwordTokenizer
    from rlds_lang.visdial.backend import CachedBackend
    from rlds_lang.visdial.data import cache_file, load_reward_cache, read_split
    from rlds_lang.visdial.env import VisDialEnv
    from rlds_lang.visdial.fixtures import write_fixture
    from rlds_lang.visdial.rewards import RewardConfig
    from trainers.evaluation.lockstep import play_seeded
    from trainers.evaluation.visdial import evaluate_questioner

    write_fixture(str(tmp_path), {"train": 6}, dim=8, seed=2)
    dialogues = list(read_split(str(tmp_path), "train"))
    rows = {k: load_reward_cache(os.path.join(tmp_path, cache_file("train", k))) for k in ("rank", "distance")}
    texts = [d.caption for d in dialogues] + [a for d in dialogues for a in d.answers]
    tok = SubwordTokenizer.train(texts, vocab_size=300, name="visdial-test")
    torch.manual_seed(0)
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=256), tok.vocab_size, tok.pad_id)
    agent = LanguageModelPolicy(lm, tok, max_action_tokens=4, temperature=1.0)
    calls = []
    act_batch = agent.act_batch
    agent.act_batch = lambda histories, seeds=None: calls.append(len(histories)) or act_batch(histories, seeds)
    envs = [VisDialEnv(dialogues, CachedBackend(rows), RewardConfig("env_stops")) for _ in range(3)]
    alone = evaluate_questioner(agent, envs[0], 5, seed=7)
    assert max(calls) == 1
    calls.clear()
    together = evaluate_questioner(agent, envs, 5, seed=7)
    assert max(calls) == 3 and together == alone
    # the questions too (the cached answers and rewards do not depend on them), and the images each episode drew
    played = [[(e.actions, e.rewards, e.metadata["dialogue_index"]) for e, _ in play_seeded(envs[:n], agent, range(7, 12))]
              for n in (1, 3)]
    assert played[0] == played[1] and len({tuple(actions) for actions, _, _ in played[0]}) > 1
