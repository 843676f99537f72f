"""Reward learning from preferences: the configs of the reward-model ensemble (``RewardModelConfig``) and of the
preference pipeline (``PipelineConfig``), apart from the models and processes (``trainers.algorithms.reward.model``,
``trainers.algorithms.reward.pipeline``) so that ``rlds-lang train reward --help`` and the preference commands'
help need no PyTorch.

Example::

    from trainers.algorithms.reward.config import PipelineConfig, RewardModelConfig

    config = PipelineConfig(max_clips=200, reward=RewardModelConfig(members=3))
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from rlds_lang.preferences import defaults
from trainers.core.model_config import ModelConfig


def _small_transformer() -> ModelConfig:
    return ModelConfig(n_layer=1, n_embd=64, n_head=4, n_positions=64)


@dataclasses.dataclass
class RewardModelConfig:
    """Hyperparameters of the reward-model ensemble and its training (``rlds-lang train reward``)."""

    #: a built preferences dataset (folder written by ``tfds build`` of ``builders/preferences``).
    dataset: str = ""
    #: split whose judgements are trained on.
    split: str = "train"
    #: split used for validation (its judgements sharing an episode with ``split`` are dropped and counted);
    #: None holds out ``val_fraction`` of the episodes of ``split`` (by a hash of the episode id).
    val_split: str | None = None
    #: share of episodes held out for validation when ``val_split`` is None (the anchor's 20%, of labels there).
    val_fraction: float = defaults.VALIDATION_FRACTION
    #: output folder: ``checkpoint/``, ``metrics.json``, ``metrics.jsonl``.
    out: str = default_run("reward")
    #: training steps; each is one optimizer step of every member.
    steps: int = 1000
    #: judgements per member and micro-batch (ours).
    batch_size: int = 32
    #: micro-batches per optimizer step; the loss is normalised by the judgements of the whole step, so
    #: ``batch_size=8, grad_accum=4`` and ``batch_size=32, grad_accum=1`` take the same step (without dropout / BN).
    grad_accum: int = 1
    #: Adam learning rate (the anchor's reward-predictor rate).
    lr: float = 2e-4
    #: ensemble members (the paper's 3 predictors, ``rlds_lang.preferences.defaults.ENSEMBLE_MEMBERS``).
    members: int = defaults.ENSEMBLE_MEMBERS
    #: rate of the uniform-response model: P = (1 - noise) * sigmoid(R_l - R_r) + noise / 2 (the paper's 10%).
    noise: float = 0.1
    #: dropout in the reward heads and image convolutions (anchor default 0; the paper's Atari runs use 0.5).
    dropout: float = 0.0
    #: batch norm in the reward heads and image convolutions (anchor default off; the paper's Atari runs use it).
    batch_norm: bool = False
    #: initial L2 coefficient of every member (ours; then tuned on the validation loss).
    l2: float = 1e-4
    #: the L2 coefficient rises when validation loss > l2_high x training loss (paper: 1.5) ...
    l2_high: float = 1.5
    #: ... and falls when it is < l2_low x training loss (paper: 1.1).
    l2_low: float = 1.1
    #: factor of each L2 adjustment (ours).
    l2_factor: float = 1.5
    #: optimizer steps (mini-batches) between validations and L2 adjustments (the anchor's ``validation_interval``).
    val_every: int = defaults.VALIDATION_EVERY
    #: training judgements on which the training loss is measured (eval mode) for the L2 controller (ours).
    train_eval_size: int = 256
    #: steps in the normaliser's window of recent predictions (ours: the last 250 clips of 40 steps).
    normalisation_window: int = 10_000
    #: hidden units of the reward heads and MLP layers (the paper's 64).
    hidden: int = 64
    #: layers of the MLP for vector observations (the paper's 2).
    layers: int = 2
    #: filters of each convolution for image observations (the paper's 16).
    filters: int = 16
    #: head on a text step's last token: ``mlp`` (the anchor's) or ``linear`` (lm-human-preferences: one
    #: linear layer initialised N(0, 1/sqrt(d+1)); ``trainers.algorithms.reward.comparison`` uses it).
    head: str = "mlp"
    #: a text step keeps its last ``max_tokens`` tokens of ``[BOS] o [EOO] a [EOA]``.
    max_tokens: int = 64
    #: the transformer of each member for text observations (small: 2 CPU cores).
    model: ModelConfig = dataclasses.field(default_factory=_small_transformer)
    #: tokenizer name for text observations (``rlds_lang.tokenizers.TOKENIZERS``); with ``model.pretrained`` each
    #: member's trunk is that pretrained LM's body and its own tokenizer is used instead.
    tokenizer: str = "wordle"
    #: seed of parameters, bootstraps and batch order.
    seed: int = 0
    #: training steps between lines of ``metrics.jsonl`` (and printed progress).
    log_every: int = 10
    #: training steps between checkpoints (the last step always writes one).
    checkpoint_every: int = 200
    #: continue from ``out/checkpoint`` when it holds a trainer state (exactly: weights, optimizers, L2
    #: coefficients, bootstrap and batch order, RNG), as every trainer of the package does.
    resume: bool = True
    #: where to train and predict: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``
    #: (``trainers.core.device``).
    device: str = "auto"
    #: ``auto`` (fp32 unless the command chose), ``fp32``, ``tf32`` or ``bf16`` (``trainers.core.device``).
    precision: str = "auto"


@dataclasses.dataclass
class PipelineConfig:
    """Sizes and rates of the preference pipeline; defaults from ``rlds_lang.preferences.defaults`` (the anchor)."""

    #: output folder: ``preferences/`` (RLDS logs of clips and judgements), ``checkpoint/``, ``pipeline.json``.
    out: str = default_run("preferences")
    #: clips the queue to the labeller holds before it drops (ours: small, so the agent never waits).
    clip_queue_size: int = 8
    #: labels in flight to the trainer before the labeller waits (the label queue never drops).
    label_queue_size: int = 64
    #: most recent clips of each side the labeller pairs from (the anchor's preference interface keeps a bounded pool).
    max_clips: int = 1000
    #: queries asked per clip received at the start of the run (the query rate's ``rate_0``).
    pairs_per_clip: float = 1.0
    #: ``T0`` of the decaying query rate ``rate_0 * T0 / (T0 + clips)``, in clips: the paper's 2e6 environment
    #: steps in clips of ``SEGMENT_LENGTH`` steps; None keeps the rate constant.
    query_timescale: float | None = defaults.QUERY_RATE_TIMESCALE / defaults.SEGMENT_LENGTH
    #: ``random`` or ``disagreement`` (the ensemble's, from the newest checkpoint; random until one exists).
    selection: str = "random"
    #: labels before reward training starts (anchor ``n_initial_prefs``).
    n_initial_preferences: int = defaults.INITIAL_PREFERENCES
    #: capacity of the circular databases, train + validation (anchor ``max_prefs_in_db``).
    database_capacity: int = defaults.DATABASE_CAPACITY
    #: share of episodes whose clips form the validation side (anchor ``PREFS_VAL_FRACTION``, of labels there).
    val_fraction: float = defaults.VALIDATION_FRACTION
    #: reward-training epochs between the checkpoints the wrapper reloads (anchor ``reward_predictor_ckpt_interval``).
    checkpoint_every_epochs: int = defaults.CHECKPOINT_EVERY_EPOCHS
    #: if given, reward-training optimizer steps between checkpoints instead.
    checkpoint_every: int | None = None
    #: stop training after this many steps (labels are still received and stored); 0 = no limit.
    max_training_steps: int = 0
    #: ``False``: collect only (labels recorded and stored, no reward training).
    train: bool = True
    #: synthetic labeller: returns closer than this are "equal"; rate of random answers.
    tie_tolerance: float = defaults.TIE_TOLERANCE
    label_noise: float = 0.0
    #: seed of pair selection and labelling.
    seed: int = 0
    #: seconds ``close()`` may take in all: processes still running then are killed.
    shutdown_timeout: float = 120.0
    #: the reward model and its training (``validation every`` = ``reward.val_every``).
    reward: RewardModelConfig = dataclasses.field(default_factory=RewardModelConfig)


__all__ = ["RewardModelConfig", "PipelineConfig"]
