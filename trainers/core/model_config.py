"""The size and origin of the trainers' causal transformer (``ModelConfig``), apart from the model code
(``trainers.core.model``) so that a command line can offer its fields as options without importing PyTorch.

Example::

    from trainers.core.model_config import ModelConfig

    config = ModelConfig(n_layer=2, n_embd=64, n_head=2)
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class ModelConfig:
    """Size of the causal transformer (GPT-2 architecture) and where its weights come from."""

    #: transformer blocks. The ILQL paper's Wordle runs use GPT-2 small (12); 2-4 train on CPU in minutes.
    n_layer: int = 4
    #: hidden size (GPT-2 small: 768).
    n_embd: int = 128
    #: attention heads; must divide ``n_embd``.
    n_head: int = 4
    #: longest token sequence (a 6-guess Wordle game is ~80 characters with the character tokenizer).
    n_positions: int = 256
    #: dropout on embeddings, attention and residuals (GPT-2's default 0.1; 0 makes runs bit-reproducible).
    dropout: float = 0.0
    #: a local folder with ``config.json`` + weights (``save_pretrained``) to start from; None = random init.
    checkpoint: str | None = None
    #: a pretrained causal LM with its own tokenizer (``trainers.core.pretrained``): a local Hugging Face folder or
    #: a model name in the local Hugging Face cache (never downloaded). Its tokenizer becomes the task's token view
    #: (in place of ``TrainConfig.tokenizer``) and its architecture replaces the sizes above; None = not used.
    pretrained: str | None = None
    #: fine-tune ``pretrained`` through low-rank adapters of this rank (LoRA, the optional ``peft`` package;
    #: ``trainers.core.lora``) on the layers peft adapts by default for the model's family, the LM's own weights
    #: frozen (heads built beside it still train); 0 = the whole LM trains. Needs ``pretrained``. Checkpoints
    #: hold the adapters merged into the weights (a plain LM); a LoRA run does not resume.
    lora_rank: int = 0
    #: LoRA's scale numerator (the adapters' output is multiplied by ``lora_alpha / lora_rank``); 8 is
    #: ``peft.LoraConfig``'s default (peft 0.21).
    lora_alpha: int = 8
    #: dropout on the adapters' input; 0.0 is ``peft.LoraConfig``'s default (peft 0.21).
    lora_dropout: float = 0.0
    #: add to each token's embedding learned (position, character) embeddings of the token's text
    #: (``SpelledEmbedding``), with the output layer tied to the sum: a word-as-token model then shares what it
    #: learns about a letter in a place across the words that have it, instead of learning each word alone.
    #: Off: GPT-2's plain embedding table. It changes the parametrisation only; the saved ``lm/`` is plain GPT-2.
    spelled_embeddings: bool = False
    #: multiply the output logits by a learnable scalar that starts at this value (``ScaledOutput``); None: none.
    #: A random GPT-2's logits start near 0 (uniform guessing) and its tied output rows must grow a long way
    #: before they can say "one of these few words". In an exploratory probe (the board as (letter, colour)
    #: tokens) a word-as-token model learned from step 500 on with it started at 10 and not without; with the
    #: shipped ``lmrl_gym_words`` tokenizer it stayed at uniform guessing for 2,000 steps (docs/guides/lmrl_gym.md).
    #: For models built from random weights only; the saved ``lm/`` is a plain GPT-2 with the scale folded into
    #: an untied output layer.
    logit_scale: float | None = None


#: which Q heads an agent decodes with (``ValueHeads.acting_q``): the lagged target heads or the trained ones.
DECODE_WITH = ("target", "live")


__all__ = ["ModelConfig", "DECODE_WITH"]
