"""The algorithms by name without their models: each one's config dataclass and one-line description, and the
``--agent NAME=CHECKPOINT[,key=value...]`` spec that names a trained agent. Importing it needs no PyTorch, so a
command line builds its options (``rlds-lang train NAME --help``, ``rlds-lang eval --help``) from it in a blink;
``trainers.algorithms.registry`` adds the models, trains by name and loads checkpoints.

Example::

    from trainers.algorithms.catalog import CATALOG, parse_agent

    config = CATALOG["ilql"].config_class(dataset="/tmp/ds", steps=10)
    name, path, options = parse_agent("ilql=runs/ilql/checkpoint,beta=4")
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from trainers.algorithms.bc_config import BCConfig
from trainers.algorithms.chai.config import ChaiConfig
from trainers.algorithms.cql.config import CQLConfig
from trainers.algorithms.dpo.config import DPOConfig
from trainers.algorithms.dt.config import DTConfig
from trainers.algorithms.ilql.config import ILQLConfig, MCConfig
from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.psi.config import PsiConfig
from trainers.algorithms.utterance_ilql.config import UtteranceILQLConfig


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """An algorithm as the command line shows it: its name, config dataclass and one-line description."""

    name: str
    config_class: type
    description: str


CATALOG: dict[str, CatalogEntry] = {entry.name: entry for entry in [
    CatalogEntry("bc", BCConfig, "behaviour cloning on action tokens (--top_p for %BC)"),
    CatalogEntry("ilql", ILQLConfig, "per-token implicit language Q-learning"),
    CatalogEntry("dpo", DPOConfig, "DPO on the preference pairs of response trees (--init CKPT)"),
    # online: trained by trainers.algorithms.ppo.trainer.train_ppo (its own `train ppo` parser), listed so checkpoints load
    CatalogEntry("ppo", PPOConfig, "online PPO in an environment (lm-human-preferences recipe)"),
    CatalogEntry("mc", MCConfig, "ILQL's heads regressed onto Monte-Carlo returns (no TD)"),
    CatalogEntry("cql", CQLConfig, "token-level conservative Q-learning (max TD target + CE of Q)"),
    CatalogEntry("psi", PsiConfig, "psi-learning (Huber TD towards r/r_scale + log pi_beta + gamma logsumexp Q)"),
    CatalogEntry("dt", DTConfig, "Decision Transformer (BC given a return prefix; --agent NAME=DIR,target_return=R)"),
    CatalogEntry("utterance_ilql", UtteranceILQLConfig,
                 "utterance-level ILQL (one Q and V per utterance; acts by the best of N BC samples)"),
    CatalogEntry("chai", ChaiConfig, "CHAI: utterance-level double Q over a frozen LM (--model.checkpoint BC_LM), "
                                     "target = max over K sampled next utterances"),
]}


def parse_agent(spec: str) -> tuple[str, str, dict[str, str]]:
    """``NAME=PATH[,key=value...]`` -> ``(name, path, options)``; errors name the malformed spec."""
    head, *options = spec.split(",")
    name, sep, path = head.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"--agent {spec!r}: expected NAME=CHECKPOINT[,beta=16,greedy=true,adv_clip=none]")
    parsed = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in AGENT_OPTIONS:
            raise argparse.ArgumentTypeError(f"--agent {spec!r}: unknown option {option!r} "
                                             f"(known: {', '.join(k + '=' for k in AGENT_OPTIONS)})")
        parsed[key] = value
    return name, path, parsed


#: the options of ``--agent NAME=PATH,key=value`` (``parse_agent``), each a ``load_policy`` argument.
AGENT_OPTIONS = ("beta", "greedy", "temperature", "target_return", "adv_clip")


def agent_options(options: dict[str, str]) -> dict[str, Any]:
    """``load_policy``'s keyword arguments from ``parse_agent``'s options (``adv_clip=none``: no cap); the options
    not given keep ``load_policy``'s defaults.

    >>> agent_options({"beta": "4", "greedy": "true", "adv_clip": "none"})
    {'beta': 4.0, 'greedy': True, 'adv_clip': None}
    """
    from trainers.core.config import parse_bool

    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if key == "greedy":
            kwargs[key] = parse_bool(value)
        elif key == "adv_clip" and value.lower() == "none":
            kwargs[key] = None
        else:
            kwargs[key] = float(value)
    return kwargs


__all__ = ["CatalogEntry", "CATALOG", "parse_agent", "AGENT_OPTIONS", "agent_options"]
