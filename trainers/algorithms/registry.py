"""The algorithms by name: each one's config dataclass and model, how to train one by name, and how a checkpoint
folder comes back as a model or a playing agent. The one place that loads checkpoints by name: trainers that start
from a model (DPO, PPO, online %BC) are handed it.

Example::

    from trainers.algorithms.registry import algorithm_by_name, train

    config = algorithm_by_name("ilql").config_class(dataset="/tmp/ds", steps=10, out="/tmp/ilql")
    result = train("ilql", config)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from trainers.algorithms.bc import BCModel
from trainers.algorithms.catalog import AGENT_OPTIONS, CATALOG, agent_options, parse_agent
from trainers.algorithms.chai.model import ChaiModel
from trainers.algorithms.cql.model import CQLModel
from trainers.algorithms.dpo.config import DPOConfig
from trainers.algorithms.dpo.dpo import DPOModel
from trainers.algorithms.dpo.trainer import train_dpo
from trainers.algorithms.dt.model import DTModel
from trainers.algorithms.ilql.ilql import ILQLModel
from trainers.algorithms.ilql.mc import MCModel
from trainers.algorithms.ppo.networks import PPOModel
from trainers.algorithms.psi.model import PsiModel
from trainers.algorithms.utterance_ilql.model import UtteranceILQLModel
from trainers.core import loop
from trainers.core.checkpoint import (
    LoadedModel,
    built_from_checkpoint,
    checkpoint_step,
    load_state_file,
    read_checkpoint_config,
)
from trainers.core.device import resolve_device
from trainers.core.loop import AlgorithmSpec, TrainResult
from trainers.core.provenance import repository_path


def fit_dpo(config: DPOConfig, progress: bool = True) -> TrainResult:
    """DPO from its config: loads the starting policy (``config.init``, or the pretrained LM of
    ``config.model.pretrained`` with its own tokenizer) and the reference (``config.reference``, default the
    starting policy) and runs ``trainers.algorithms.dpo.trainer.train_dpo``."""
    pretrained = config.model.pretrained
    if not config.init and not pretrained:
        raise ValueError("DPOConfig.init is empty: give the checkpoint folder of the starting policy (or a "
                         "pretrained LM: --model.pretrained PATH_OR_NAME)")
    if config.init and pretrained:
        raise ValueError(f"DPOConfig: init={config.init!r} and model.pretrained={pretrained!r}: the init checkpoint "
                         f"brings its model and tokenizer; give one or the other")
    torch.manual_seed(config.seed)  # loading builds each model from random weights first: seeded, like training
    start = load_agent_model(config.init) if config.init else pretrained_start(config)
    reference = load_agent_model(config.reference).lm if config.reference else None
    return train_dpo(config, start, reference, progress)


def pretrained_start(config: DPOConfig) -> LoadedModel:
    """The starting policy of a DPO run from ``config.model.pretrained``: that LM (embedding table grown by the
    token MDP's special tokens) and its own tokenizer, as ``load_agent_model`` would hand back a checkpoint's."""
    from trainers.core.pretrained import task_tokenizer

    tokenizer = task_tokenizer(config)
    return LoadedModel("pretrained", config, DPOModel(config, tokenizer).eval(), tokenizer, 0)


#: each algorithm's module (its ``forward`` is the loss), by name; its config and description are the catalog's.
MODEL_CLASSES: dict[str, type] = {"bc": BCModel, "ilql": ILQLModel, "dpo": DPOModel, "ppo": PPOModel, "mc": MCModel,
                                  "cql": CQLModel, "psi": PsiModel, "dt": DTModel,
                                  "utterance_ilql": UtteranceILQLModel, "chai": ChaiModel}
#: the algorithms that run their own steps (``AlgorithmSpec.fit``) instead of the shared token-batch loop.
FITS = {"dpo": fit_dpo}

ALGORITHMS: dict[str, AlgorithmSpec] = {
    name: AlgorithmSpec(name, entry.config_class, MODEL_CLASSES[name], entry.description, fit=FITS.get(name))
    for name, entry in CATALOG.items()}


def algorithm_by_name(name: str) -> AlgorithmSpec:
    """The registered algorithm ``name``; the error lists the known ones."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; known: {sorted(ALGORITHMS)}") from None


def train(algorithm: str, config: Any, progress: bool = True) -> TrainResult:
    """Trains the registered ``algorithm`` with ``config`` (``trainers.core.loop.train``)."""
    return loop.train(algorithm_by_name(algorithm), config, progress)


def load_agent_model(path: str | os.PathLike, device: str | torch.device | None = None) -> LoadedModel:
    """Rebuilds the trained module of a checkpoint folder (see the module docstring for the layout) on ``device``
    (``trainers.core.device.resolve_device``; None: ``auto``), wherever it was trained."""
    from rlds_lang.tokenizers import load_tokenizer

    path = Path(path)
    algorithm, config_dict = read_checkpoint_config(path)
    spec = algorithm_by_name(algorithm)
    config = spec.config_from_dict(config_dict)
    tokenizer = load_tokenizer(path / "tokenizer.json")
    target = resolve_device(device)
    with torch.device("cpu"):
        model = spec.model_class(built_from_checkpoint(config, path), tokenizer)
    model.load_state_dict(load_state_file(path / "model.pt"))
    model.to(target).eval().requires_grad_(False)
    return LoadedModel(algorithm, config, model, tokenizer, checkpoint_step(path))


#: ``load_policy``'s ``adv_clip`` default: the checkpoint's own.
FROM_CHECKPOINT = "checkpoint"


def load_policy(path: str | os.PathLike, allowed_actions: Any = None, name: str | None = None,
                beta: float | None = None, greedy: bool = False, temperature: float = 1.0, seed: int = 0,
                max_action_tokens: int = 16, target_return: float | None = None,
                adv_clip: float | None | str = FROM_CHECKPOINT, device: str | torch.device | None = None,
                precision: str | None = None):
    """A checkpoint as a playing agent (``trainers.core.policy.LanguageModelPolicy``) on ``device`` in
    ``precision`` (``trainers.core.device``; None: ``auto``).

    ``beta`` defaults to the checkpoint's own (ILQL's ``config.beta``; BC has no value heads, so 0), and so does
    ``adv_clip``, the cap on ``beta * (Q - V)`` (the config's ``adv_clip``; None: no cap). A checkpoint saved
    before configs had ``adv_clip`` was played uncapped, and is again (None, not today's default).
    ``allowed_actions``: a word list (name, ``WordList`` or sequence of words) to constrain decoding to.
    ``max_action_tokens``: longest free-text action (e.g. a Visual Dialogue question).
    ``target_return``: the return a return-conditioned agent (``dt``) plays for; None: its checkpoint's own.
    """
    from rlds_lang.wordle.words import WordList, resolve_word_list
    from trainers.core.policy import LanguageModelPolicy

    loaded = load_agent_model(path, device)
    conditioned = hasattr(loaded.lm, "target_return")
    if target_return is not None:
        set_target_return(loaded, target_return, path)
    if isinstance(allowed_actions, (str, WordList)):
        allowed_actions = resolve_word_list(allowed_actions).words
    if hasattr(loaded.model, "utterance_heads"):  # utterance-level values: the best of N sampled utterances
        from trainers.algorithms.utterance_ilql.policy import BestOfSamplesPolicy

        if beta is not None or greedy:
            raise ValueError(f"{path}: beta and greedy are settings of token-level agents, not of {loaded.algorithm} "
                             f"(it samples its candidates)")
        agent = BestOfSamplesPolicy(loaded, loaded.config.samples, allowed_actions=allowed_actions,
                                    name=name or loaded.algorithm, seed=seed, temperature=temperature,
                                    max_action_tokens=max_action_tokens, precision=precision)
        agent.info = {"checkpoint": str(path), "algorithm": loaded.algorithm, "step": loaded.step}
        return agent
    if beta is None:
        beta = float(getattr(loaded.config, "beta", 0.0)) if loaded.heads is not None else 0.0
    if adv_clip == FROM_CHECKPOINT:
        adv_clip = read_checkpoint_config(path)[1].get("adv_clip")  # absent: saved before the cap existed
    policy = LanguageModelPolicy(loaded.lm, loaded.tokenizer, heads=loaded.heads, beta=beta, adv_clip=adv_clip,
                                 temperature=temperature,
                                 greedy=greedy, allowed_actions=allowed_actions, name=name or loaded.algorithm,
                                 seed=seed, max_action_tokens=max_action_tokens, device=device, precision=precision)
    policy.info = {"checkpoint": repository_path(path), "algorithm": loaded.algorithm, "step": loaded.step}
    if conditioned:
        policy.info["target_return"] = loaded.lm.target_return
    return policy


def set_target_return(loaded: LoadedModel, target_return: float, path: str | os.PathLike = "") -> None:
    """Makes a return-conditioned agent (``dt``) play for ``target_return``; an error naming the checkpoint and
    its algorithm for any other."""
    if not hasattr(loaded.lm, "target_return"):
        raise ValueError(f"{path}: target_return is a setting of return-conditioned agents (dt), "
                         f"not of {loaded.algorithm}")
    loaded.lm.target_return = float(target_return)


__all__ = ["MODEL_CLASSES", "FITS", "ALGORITHMS", "algorithm_by_name", "train", "fit_dpo", "pretrained_start", "load_agent_model", "built_from_checkpoint", "FROM_CHECKPOINT", "load_policy",
           "set_target_return", "parse_agent", "AGENT_OPTIONS", "agent_options"]
