"""Direct Preference Optimization (DPO) on the preference pairs of response trees.

For a pair (chosen ``y_w``, rejected ``y_l``) after the same history ``x``, with ``log pi(y | x)`` the sum of
the log-probabilities of *every* response token (its first character through ``[EOA]``, ``sequence_logps``)
and ``pi_ref`` a frozen reference model,

    h = [log pi(y_w|x) - log pi_ref(y_w|x)] - [log pi(y_l|x) - log pi_ref(y_l|x)]
    sigmoid: loss = -(1 - eps) * log sigmoid(beta * h) - eps * log sigmoid(-beta * h)
    ipo:     loss = (h - 1 / (2 * beta))^2

averaged over the pairs, plus ``nll_coef`` times the chosen response's negative log-likelihood per token
(``-log pi(y_w|x) / |y_w|``; Pang et al. 2024, arXiv 2404.19733, "iterative RPO", whose coefficient is 1). DPO
alone may lower the chosen response's likelihood as long as the rejected one falls faster; when the chosen
responses are the policy's usual ones (a peaked policy's trees) that moves probability to responses nobody
judged, and the NLL term holds it on the chosen ones. ``eps`` is label smoothing (conservative DPO: labels flipped with probability eps).
The reference log-probabilities are computed once, before training, and the reference model is then
dropped, so it can never be updated. Logged per step (means over the step's pairs, so they mean the same
at batch size 1): ``rewards/chosen = beta * (log pi(y_w) - log pi_ref(y_w))``, ``rewards/rejected``,
``rewards/margin`` (their difference), ``rewards/accuracy`` (share of pairs with margin > 0), ``loss``,
``loss/nll`` (the chosen responses' NLL per token, whatever ``nll_coef``),
and ``tokens_per_second`` (every non-pad token of both sequences).

Where the defaults come from: ``beta=0.1`` and the sigmoid loss are the DPO paper's (Rafailov et al. 2023,
arXiv 2305.18290, section 6); the IPO variant and its ``(h - 1/(2 beta))^2`` form are Azar et al. 2023
(arXiv 2310.12036, eq. 17); label smoothing is Mitchell 2023's conservative DPO note (0 = off). The
reference is the starting policy (``init``) unless ``reference`` names another checkpoint. The learning
rate is higher than the papers' 5e-7 because the policy here is a small randomly initialised transformer
trained from scratch by BC, not a pretrained LLM.

Example (``rlds-lang train dpo --dataset TREE_LOGS --init runs/bc/checkpoint --steps 100``)::

    from trainers.algorithms.dpo.dpo import DPOConfig
    from trainers.algorithms.dpo.trainer import train_dpo

    result = train_dpo(DPOConfig(dataset="/tmp/trees", init="runs/bc/checkpoint", steps=100, out="runs/dpo"))
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainers.algorithms.dpo.config import LOSS_TYPES, DPOConfig
from trainers.core.device import module_device, placement
from trainers.core.model import language_model_for
from trainers.core.objective import LossOutput



def sequence_logps(lm: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   response_mask: torch.Tensor) -> torch.Tensor:
    """``[B]``: the sum of the log-probabilities of each row's response tokens (every one of them).

    The LM's output at position ``t`` predicts token ``t + 1``, so token ``t + 1`` counts when
    ``response_mask[:, t + 1]``; the response's first token is predicted from the prompt's last position.
    """
    logits = lm(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    token_logps = torch.log_softmax(logits, -1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (token_logps * response_mask[:, 1:].float()).sum(-1)


def dpo_loss(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, ref_chosen: torch.Tensor,
             ref_rejected: torch.Tensor, beta: float, loss_type: str = "sigmoid",
             label_smoothing: float = 0.0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``(per-pair losses [B], per-pair metrics [B])`` from sequence log-probabilities (see the module doc)."""
    h = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    if loss_type == "sigmoid":
        losses = -(1 - label_smoothing) * F.logsigmoid(beta * h) - label_smoothing * F.logsigmoid(-beta * h)
    elif loss_type == "ipo":
        losses = (h - 1 / (2 * beta)) ** 2
    else:
        raise ValueError(f"dpo_loss: unknown loss_type {loss_type!r}; known: {LOSS_TYPES}")
    chosen = beta * (policy_chosen - ref_chosen).detach()
    rejected = beta * (policy_rejected - ref_rejected).detach()
    metrics = {"rewards/chosen": chosen, "rewards/rejected": rejected, "rewards/margin": chosen - rejected,
               "rewards/accuracy": (chosen > rejected).float(), "logps/chosen": policy_chosen.detach(),
               "logps/rejected": policy_rejected.detach()}
    return losses, metrics


def pair_logps(lm: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log pi(chosen), log pi(rejected))`` of a pair batch, in one forward pass over both sides."""
    width = max(batch["chosen_input_ids"].shape[1], batch["rejected_input_ids"].shape[1])

    def both(key: str, value: Any) -> torch.Tensor:
        parts = [F.pad(batch[f"{side}_{key}"], (0, width - batch[f"{side}_{key}"].shape[1]), value=value)
                 for side in ("chosen", "rejected")]
        return torch.cat(parts)

    logps = sequence_logps(lm, both("input_ids", 0), both("attention_mask", 0), both("response_mask", False))
    n = batch["chosen_input_ids"].shape[0]
    return logps[:n], logps[n:]


class DPOModel(nn.Module):
    """The policy LM; ``forward(batch)`` is the DPO loss against the batch's precomputed reference log-probs."""

    def __init__(self, config: DPOConfig, tokenizer):
        super().__init__()
        if config.loss_type not in LOSS_TYPES:
            raise ValueError(f"DPOConfig.loss_type: unknown {config.loss_type!r}; known: {LOSS_TYPES}")
        if not 0.0 <= config.label_smoothing < 0.5:
            raise ValueError(f"DPOConfig.label_smoothing must be in [0, 0.5), got {config.label_smoothing}")
        if not config.beta > 0:
            raise ValueError(f"DPOConfig.beta must be > 0, got {config.beta}")
        if config.nll_coef < 0:
            raise ValueError(f"DPOConfig.nll_coef must be >= 0, got {config.nll_coef}")
        self.config = config
        self.lm = language_model_for(config.model, tokenizer)

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """Mean DPO loss over the batch's pairs (``count`` = pairs); metrics are per-pair means."""
        if "ref_chosen_logps" not in batch:
            raise ValueError("DPOModel: the batch has no ref_chosen_logps; DPO trains on pair batches "
                             "(trainers.algorithms.dpo.trainer.train_dpo), not on token-MDP batches")
        chosen, rejected = pair_logps(self.lm, batch)
        c = self.config
        losses, metrics = dpo_loss(chosen, rejected, batch["ref_chosen_logps"], batch["ref_rejected_logps"], c.beta,
                                   c.loss_type, c.label_smoothing)
        nll = -chosen / batch["chosen_response_mask"][:, 1:].sum(-1).clamp(min=1)
        metrics["loss/nll"] = nll.detach()
        loss = losses.mean() + c.nll_coef * nll.mean() if c.nll_coef else losses.mean()
        return LossOutput(loss, torch.tensor(len(losses), device=losses.device), {k: v.mean() for k, v in metrics.items()})

    def after_optimizer_step(self) -> None:
        """Nothing to do after a step."""


@torch.no_grad()
def reference_logps(reference: nn.Module, tensors: dict[str, torch.Tensor], batch_size: int = 64) -> dict[str, torch.Tensor]:
    """``{"ref_chosen_logps", "ref_rejected_logps"}`` ``[P]`` of every pair, computed once with ``reference`` on
    its device (in the precision of the enclosing ``trainers.core.device.chosen`` block) and kept on the CPU beside
    the pairs."""
    reference.eval()
    place = placement(module_device(reference))
    n = tensors["chosen_input_ids"].shape[0]
    chosen, rejected = [], []
    for start in range(0, n, batch_size):
        part = place.move({k: v[start:start + batch_size] for k, v in tensors.items()})
        with place.autocast():
            c, r = pair_logps(reference, part)
        chosen.append(c.float().cpu())
        rejected.append(r.float().cpu())
    empty = torch.zeros(0, device="cpu")
    return {"ref_chosen_logps": torch.cat(chosen) if chosen else empty,
            "ref_rejected_logps": torch.cat(rejected) if rejected else empty}


def tokens_in(batch: dict[str, torch.Tensor]) -> int:
    """Non-pad tokens of both sides of a pair batch."""
    return int(batch["chosen_attention_mask"].sum() + batch["rejected_attention_mask"].sum())


__all__ = ["DPOConfig", "DPOModel", "LOSS_TYPES", "dpo_loss", "pair_logps", "reference_logps",
           "sequence_logps", "tokens_in"]
