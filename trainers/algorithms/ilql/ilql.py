"""Per-token Implicit Language Q-Learning (ILQL; Snell, Kostrikov, Su, Yang, Levine 2022, arXiv 2206.11871).

The token-level MDP (``transforms.token_mdp``): the state before an action token is the whole sequence
before it, the action is that token, observation tokens are deterministic environment transitions, and the
episode's per-turn reward sits on the last token of each action utterance. On the transformer's last hidden
states sit twin ``Q`` heads over the vocabulary and a ``V`` head (``trainers.core.model.ValueHeads``); their
target copies move only by Polyak averaging. One training step minimises

    q_weight    * sum_i (Q_i(s_t, a_t) - [r_t + gamma * (1 - done_t) * V(s_{t+1})])^2    (TD, V detached)
  + v_weight    * |tau - 1[min_i Q^target_i(s_t, a_t) < V(s_t)]| * (min_i Q^target_i - V)^2  (expectile)
  + cql_weight  * sum_i CE(Q_i(s_t, .), a_t)                                              (CQL)
  + awac_weight * -exp(awac_beta * (Q - V)) log pi(a_t | s_t)                              (BC / AWAC)

averaged over the dataset's action tokens; ``s_{t+1}`` is the state before the next action token. At
inference, actions are sampled from the BC logits perturbed by ``min(beta * (min_i Q_i - V), adv_clip)`` with the
target or the live Q heads (``decode_with``; ``trainers.core.decoding``; ``adv_clip=None``: no cap).

Two target networks (``target_network``): ``"heads"`` (the default, with which the committed results were made)
keeps target copies of the Q heads on the live trunk, so ``Q^target`` above is the target heads on the live
hidden states. ``"trunk"`` keeps, as LMRL-Gym's ILQL does (``GPT2ILQLTrain``'s ``target_base_params``), a Polyak
copy of the value trunk too (the value transformer with ``separate_value_trunk``, else the shared transformer
body) and computes ``Q^target`` as the target heads on the target trunk's hidden states; ``V`` and the live Q
heads stay on the live trunk. (The ILQL authors keep a whole target transformer, which is ``"trunk"`` with
``separate_value_trunk``.)

Where the defaults come from: ``tau=0.7``, ``gamma=0.99``, ``alpha=0.005`` (Polyak), ``cql_weight=1e-4``,
``awac_weight=1``, ``awac_beta=0`` (plain BC weights), twin Q heads, and ``beta=16`` with ``adv_clip=0.0`` at
inference are the ILQL authors' Wordle configuration (config/wordle/train_iql.yaml and eval_policy.yaml of
Sea-Snell/Implicit-Language-Q-Learning). Differences, all to train on 2 CPU cores: the paper fine-tunes
three pretrained GPT-2 small models (policy, value, target value); here one small randomly initialised
transformer carries the LM head and the value heads (the authors' ``seperate_policy: false`` variant), and the
target network is by default the pair of target Q heads on the shared trunk, and agents decode with them.
``separate_value_trunk=True`` gives the value heads their own transformer (their ``seperate_policy: true``).

LMRL-Gym's Wordle rows (``llm_rl_scripts/wordle/{ilql,mc}/train_*_gpt2.py`` of abdulhaim/LMRL-Gym): a Polyak
target of the value trunk, decoding with the live heads' ``min(Q1, Q2)`` (its ``GPT2ValueRLInference`` of the
trained ``base_params`` and heads), AdamW at a constant learning rate 3e-5 (1e-5 for MC) with betas (0.9, 0.95),
no weight decay, no gradient clipping, CQL weight 0.01 and heads starting at -4.4: ``LMRL_GYM_ILQL`` (and
``trainers.algorithms.ilql.mc.LMRL_GYM_MC``) hold those settings, ``ILQLConfig(**LMRL_GYM_ILQL, dataset=...)``.

Example (the CLI: ``rlds-lang train ilql --dataset DIR --steps 500``)::

    from trainers.algorithms.ilql.ilql import ILQLConfig
    from trainers.algorithms.registry import train

    result = train("ilql", ILQLConfig(dataset="/tmp/tfds/wordle_synthetic/branch/1.1.0", steps=200, out="runs/ilql"))
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from trainers.algorithms.ilql.losses import (
    Transitions,
    bc_loss,
    cql_loss,
    expectile_loss,
    polyak_update,
    q_loss,
    transitions,
)
from trainers.algorithms.ilql.config import (
    LMRL_GYM_ILQL,
    LMRL_GYM_OPTIMIZER,
    TARGET_NETWORKS,
    ILQLConfig,
    ValueLearningConfig,
)
from trainers.core.model import (
    PolicyValueLM,
    ValueHeads,
    action_targets,
    hidden_size,
    language_model_for,
    trunk_hidden,
    value_trunk,
)
from trainers.core.objective import LossOutput, masked_mean


def awac_weights(advantage: torch.Tensor, awac_beta: float) -> torch.Tensor | None:
    """The AWAC weights of the BC term, ``exp(awac_beta * advantage)`` (the ILQL code's ``exp_weights``:
    ``torch.exp(self.beta * (qs - vs))``, src/models/iql_model.py:329), or None at ``awac_beta = 0`` (plain BC).

    >>> awac_weights(torch.tensor([1.0, -1.0]), 2.0).log().tolist()
    [2.0, -2.0]
    """
    return torch.exp(awac_beta * advantage) if awac_beta else None


class ILQLModel(nn.Module):
    """The LM (behaviour policy) plus ILQL's value heads; ``forward(batch)`` is the ILQL loss."""

    #: whether the targets read the policy's logits (psi's log pi_beta); ILQL's do not.
    reads_policy = False
    #: whether the targets bootstrap from the next state (then an action whose next state was cut away has no
    #: target and leaves the value losses); MC's returns do not.
    bootstraps = True

    def __init__(self, config: ILQLConfig, tokenizer):
        super().__init__()
        self.config = config
        #: the tokenizer's ``[EOO]`` and ``[EOA]`` ids: where the next states are (``transitions``).
        self.separators = (tokenizer.eoo_id, tokenizer.eoa_id)
        self.lm = language_model_for(config.model, tokenizer)
        if config.separate_value_trunk:
            self.lm = PolicyValueLM(self.lm, language_model_for(config.model, tokenizer))
        self.heads = ValueHeads(hidden_size(self.lm), tokenizer.vocab_size, decode_with=config.decode_with)
        if config.head_init_value is not None:
            self.heads.start_at(config.head_init_value)
        #: with ``target_network="trunk"``: the Polyak copy of the value trunk the target Q heads read; else None.
        self.target_trunk = (copy.deepcopy(value_trunk(self.lm)).requires_grad_(False).eval()
                             if self.target_network() == "trunk" else None)

    def target_network(self) -> str:
        """``ILQLConfig.target_network``: ``"heads"`` or ``"trunk"``."""
        return self.config.target_network

    def train(self, mode: bool = True) -> "ILQLModel":
        """``nn.Module.train``, leaving the target trunk in eval mode (it is never trained)."""
        super().train(mode)
        if self.target_trunk is not None:
            self.target_trunk.eval()
        return self

    @torch.no_grad()
    def target_values(self, batch: dict[str, torch.Tensor], hidden: torch.Tensor) -> torch.Tensor:
        """``min(target Q1, target Q2)`` at every position: the target heads on the target trunk's hidden states, or
        on ``hidden`` (the live trunk's, ``[batch, time, n_embd]``) without a target trunk. ``[batch, time, vocab]``."""
        if self.target_trunk is not None:
            hidden = trunk_hidden(self.target_trunk, batch["input_ids"], batch["attention_mask"])
        return self.heads.target_q(hidden)

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """The weighted sum of the TD, expectile, CQL and BC/AWAC terms on the batch's action tokens."""
        c = self.config
        actions, mask = action_targets(batch)
        if self.policy_is_fixed():  # only the value trunk trains; the policy runs (without gradient) if read
            hidden = self.lm.value_hidden(batch["input_ids"], batch["attention_mask"])
            logits = self.fixed_policy_logits(batch) if self.reads_policy else None
        else:
            out = self.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                          output_hidden_states=True)
            logits, hidden = out.logits[:, :-1], out.hidden_states[-1]

        # the heads at every position: a next state can be the last one (a cut sequence's)
        q1, q2, v_all = self.heads(hidden)
        q1, q2, v = q1[:, :-1], q2[:, :-1], v_all[:, :-1]
        taken = actions.unsqueeze(-1)
        q1_taken, q2_taken = q1.gather(-1, taken).squeeze(-1), q2.gather(-1, taken).squeeze(-1)
        target_all = self.target_values(batch, hidden)
        target_q = target_all[:, :-1].gather(-1, taken).squeeze(-1)
        steps = transitions(batch, *self.separators)
        q_targets, v_targets = self.regression_targets(batch, steps, v_all, target_q, target_all=target_all,
                                                       logits=logits)
        valid = steps.valid(mask) if self.bootstraps else mask

        temperature = c.cql_temperature
        losses = {
            "q_loss": self.q_regression_loss(q1_taken, q_targets, valid) + self.q_regression_loss(q2_taken, q_targets, valid),
            "v_loss": expectile_loss(v_targets - v, c.tau, valid),
            "cql_loss": cql_loss(q1, actions, valid, temperature) + cql_loss(q2, actions, valid, temperature),
        }
        advantage = (target_q - v).detach()
        weights = awac_weights(advantage, c.awac_beta)
        losses["awac_loss"] = bc_loss(logits, actions, mask, weights) if logits is not None else q1.new_zeros(())
        total = (c.q_weight * losses["q_loss"] + c.v_weight * losses["v_loss"] + c.cql_weight * losses["cql_loss"]
                 + c.awac_weight * losses["awac_loss"])
        metrics = {k: val.detach() for k, val in losses.items()}
        metrics.update(q_mean=masked_mean(q1_taken.detach(), valid), v_mean=masked_mean(v.detach(), valid),
                       advantage_mean=masked_mean(advantage, valid))
        return LossOutput(total, mask.sum(), metrics)

    def policy_is_fixed(self) -> bool:
        """Whether the policy is not trained (``awac_weight=0``) and has a transformer of its own apart from the
        values' (``separate_value_trunk``): then a training step runs the value trunk with gradient and the policy,
        when ``reads_policy``, without."""
        return self.config.awac_weight == 0 and isinstance(self.lm, PolicyValueLM)

    @torch.no_grad()
    def fixed_policy_logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The fixed policy's logits at positions ``0..T-2``, without gradient: ``[batch, time - 1, vocab]``."""
        return self.lm.policy(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]

    def q_regression_loss(self, q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The loss of one Q head's dataset-action values against their targets: the mean squared error."""
        return q_loss(q_taken, targets, mask)

    def regression_targets(self, batch: dict[str, torch.Tensor], steps: Transitions, v_all: torch.Tensor,
                           target_q: torch.Tensor, *, target_all: torch.Tensor | None = None,
                           logits: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(Q's targets, V's targets)`` at positions ``0..T-2``: ILQL's one-step TD targets
        ``r_t + gamma * (1 - done_t) * V(s_{t+1})`` for Q (``steps``: the batch's ``Transitions``; ``v_all``: V at
        every position), the target Q of the dataset action for V.

        ``target_all`` (the target Q of every token at every position, ``[batch, time, vocab]``) and ``logits`` (the
        policy's at ``0..T-2``, or None when it did not run) are there for the agents whose targets read them (CQL's
        max, psi's logsumexp and log-probability); ILQL's do not."""
        return steps.targets(steps.next_values(v_all.detach()), self.config.gamma), target_q

    def after_optimizer_step(self) -> None:
        """Moves the target Q heads (and the target trunk) towards the online ones by ``alpha`` (Polyak averaging)."""
        self.heads.update_targets(self.config.alpha)
        if self.target_trunk is not None:
            polyak_update(self.target_trunk, value_trunk(self.lm), self.config.alpha)


__all__ = ["ValueLearningConfig", "ILQLConfig", "awac_weights", "TARGET_NETWORKS", "LMRL_GYM_OPTIMIZER", "LMRL_GYM_ILQL",
           "ILQLModel"]
