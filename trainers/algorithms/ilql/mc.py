"""Monte-Carlo returns (MC): ILQL's heads and decoding, with value targets from the data's own returns.

The baseline "MC returns" of the ILQL paper and of LMRL-Gym's table. Same token-level MDP, model and heads as
``trainers.algorithms.ilql.ilql`` (an LM head plus twin ``Q`` heads over the vocabulary and a ``V`` head on one transformer),
but instead of bootstrapped TD targets both value heads regress onto the discounted Monte-Carlo
return-to-go of the dataset's action token, ``G_t = sum_k gamma^k r_{t+k}`` over this and the later action
tokens of the whole episode (``transforms.token_mdp``'s ``returns_to_go``, which a cut sequence keeps whole):

    q_weight    * sum_i (Q_i(s_t, a_t) - G_t)^2                       (regression onto MC returns)
  + v_weight    * |tau - 1[G_t < V(s_t)]| * (G_t - V(s_t))^2          (expectile regression onto MC returns)
  + cql_weight  * sum_i CE(Q_i(s_t, .), a_t)                          (CQL)
  + awac_weight * -exp(awac_beta * (Q - V)) log pi(a_t | s_t)          (BC / AWAC)

Nothing bootstraps, so there is no target network to lag: the "target" Q heads are copied from the online
ones after every optimizer step, and decoding with them (``decode_with="target"``) or with the live heads
(``"live"``, as LMRL-Gym's MC agent does) is the same. At inference it acts exactly like ILQL: the BC logits
perturbed by ``beta * (min_i Q_i - V)`` (``trainers.core.decoding``; checkpoints load through the algorithm registry
like ILQL's). Q of a token estimates the behaviour policy's return after it (no max over actions), so MC
improves on the data by one step of policy improvement, where ILQL's expectile backs up better-than-average
continuations through the TD chain.

Where the defaults come from: everything the two share is ILQL's Wordle configuration (``trainers.algorithms.ilql.ilql``:
``gamma=0.99``, ``tau=0.7``, ``cql_weight=1e-4``, ``awac_weight=1``, ``awac_beta=0``, ``beta=16``); ``alpha``
has no use here. The ILQL authors' MC-returns baseline is their ILQL code with only ``V``'s target replaced:
``V`` regresses by expectile onto discounted Monte-Carlo returns instead of target Q, while Q keeps its TD target
``r_t + gamma * V(s_{t+1})`` (``shared/REFERENCE_TASKS.md``). Ours regresses Q onto the returns as well, as
LMRL-Gym's MC does (``LLM_RL/algorithms/mc_returns``); ``LMRL_GYM_MC`` holds LMRL-Gym's settings of its row.

Example (the CLI: ``rlds-lang train mc --dataset DIR --steps 500``)::

    from trainers.algorithms.ilql.mc import MCConfig
    from trainers.algorithms.registry import train

    result = train("mc", MCConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/mc"))
"""

from __future__ import annotations


import torch

from trainers.algorithms.ilql.config import LMRL_GYM_MC, MCConfig
from trainers.algorithms.ilql.ilql import ILQLModel
from trainers.algorithms.ilql.losses import Transitions


class MCModel(ILQLModel):
    """ILQL's model and loss with Monte-Carlo returns-to-go as the targets of Q and V."""

    #: the returns-to-go are whole-episode sums: nothing is bootstrapped, every action token keeps its target.
    bootstraps = False

    def target_network(self) -> str:
        """Always ``"heads"``: nothing bootstraps, so there is no target trunk to keep."""
        return "heads"

    def regression_targets(self, batch: dict[str, torch.Tensor], steps: Transitions, v_all: torch.Tensor,
                           target_q: torch.Tensor, *, target_all: torch.Tensor | None = None,
                           logits: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Q and V both regress onto the discounted return-to-go of the dataset's action token."""
        returns = batch["returns_to_go"][:, 1:].to(v_all.dtype)
        return returns, returns

    def after_optimizer_step(self) -> None:
        """Copies the online Q heads into the ones the agents decode with (nothing bootstraps, nothing lags)."""
        self.heads.update_targets(1.0)


__all__ = ["MCConfig", "LMRL_GYM_MC", "MCModel"]
