"""Low-rank adapters (LoRA, through the optional ``peft`` package) on a pretrained causal LM
(``ModelConfig.lora_rank``), and the merge that keeps checkpoints free of them.

With ``ModelConfig.lora_rank > 0`` beside ``ModelConfig.pretrained``, ``with_lora`` injects peft's LoRA layers into
the LM in place (the module stays the ``transformers`` class it was, so value heads, target networks and the
separate value trunk read it as before) and freezes every weight of the LM but the adapters; heads built beside
the LM keep training. The layers adapted are peft's default for the model's family
(``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``: GPT-2's ``c_attn``, Llama's ``q_proj``/``v_proj``...).
``merged_copy`` is what a checkpoint saves: a copy whose adapters are folded into the weights they adapt, an
ordinary ``transformers`` model that loads and plays without peft and without the folder it was tuned from.

peft is imported only when adapters are asked for (``with_lora``) or present (``merged_copy``).

Example::

    from trainers.core.lora import with_lora

    lm = with_lora(lm, rank=8, alpha=8, dropout=0.0)   # only the adapters require gradients now
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from torch import nn

#: how to get peft when it is missing (it is in the ``train`` extra).
INSTALL_PEFT = "pip install peft (or: pip install 'rlds-lang[train]')"


def import_peft() -> Any:
    """The ``peft`` package, or an ``ImportError`` saying how to install it."""
    try:
        import peft
    except ImportError as error:
        raise ImportError(f"ModelConfig.lora_rank > 0 needs the peft package: {INSTALL_PEFT}") from error
    return peft


def with_lora(lm: nn.Module, rank: int, alpha: int, dropout: float) -> nn.Module:
    """``lm`` with peft's LoRA adapters of ``rank`` (scaled by ``alpha / rank``, ``dropout`` on their input) injected
    into the layers peft adapts by default for its family, every other parameter of ``lm`` frozen; the same object,
    returned for chaining. A family peft has no default for is a ``ValueError`` naming it."""
    peft = import_peft()
    config = peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout)
    with warnings.catch_warnings():  # GPT-2's Conv1D layers: peft switches fan_in_fan_out on itself, and says so
        warnings.filterwarnings("ignore", message="fan_in_fan_out is set to False")
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.* is deprecated")  # peft's call
        try:
            peft.get_peft_model(lm, config)
        except ValueError as error:
            raise ValueError(f"ModelConfig.lora_rank: peft has no default layers to adapt for model type "
                             f"{getattr(lm.config, 'model_type', '?')!r}: {error}") from error
    return lm


def has_lora(module: nn.Module) -> bool:
    """Whether ``module`` holds LoRA adapters (peft's tuner layers), without importing peft when it has none."""
    return any(hasattr(child, "merge") and hasattr(child, "get_base_layer") for child in module.modules())


def merged_copy(module: nn.Module) -> nn.Module:
    """``module`` itself when it holds no adapters, else a copy of it in which every LoRA layer is replaced by the
    layer it adapts, its weight plus the adapter's product (peft's ``merge``): the same outputs, plain modules."""
    if not has_lora(module):
        return module
    from peft.tuners.tuners_utils import BaseTunerLayer

    merged = copy.deepcopy(module)
    for name, child in list(merged.named_modules()):
        if isinstance(child, BaseTunerLayer) and name:
            child.merge()
            parent_name, _, attribute = name.rpartition(".")
            setattr(merged.get_submodule(parent_name), attribute, child.get_base_layer())
    for lm in merged.modules():  # the marks peft leaves on the adapted model: a plain one has none
        for mark in ("peft_config", "_hf_peft_config_loaded"):
            if mark in vars(lm):
                delattr(lm, mark)
    return merged


__all__ = ["INSTALL_PEFT", "import_peft", "with_lora", "has_lora", "merged_copy"]
