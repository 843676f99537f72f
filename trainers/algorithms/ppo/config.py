"""``PPOConfig``: every PPO hyperparameter with its source in the lm-human-preferences recipe and its CPU
scale-down (see ``trainers.algorithms.ppo``)."""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.core.model_config import ModelConfig


@dataclasses.dataclass
class PPOConfig:
    """PPO hyperparameters. "recipe" = lm-human-preferences' launch.py / train_policy.py (sentiment task)."""

    #: environment: ``wordle`` (``rlds_lang.wordle.env.WordleEnv``), or any env given to ``train_ppo``.
    task: str = "wordle"
    #: a BC / ILQL / PPO checkpoint folder to start from (policy and frozen reference); empty = random ``model``.
    init: str = ""
    #: scores: ``env``, ``model:<dir>`` (trained reward model) or ``scorer:<module>:<function>`` (ppo_rewards).
    reward: str = "env"
    #: output folder (checkpoint, metrics.jsonl, tb/, training_curves.png, rollouts/).
    out: str = default_run("ppo")
    #: PPO updates (recipe: 1,000,000 episodes / 512 = 1,954 updates).
    updates: int = 100
    #: games played per update (recipe: a batch of 512 query/response episodes; scaled down for CPU).
    episodes: int = 8
    #: optimisation epochs over each rollout batch, a fresh shuffle each (recipe noptepochs = 4).
    ppo_epochs: int = 4
    #: minibatches per epoch, one optimizer step each (recipe nminibatches = 1).
    nminibatches: int = 1
    #: micro-batches per minibatch, gradients accumulated (token-weighted, so the step is the same for any value).
    grad_accum: int = 1
    #: query tokens; shorter prompts are left-padded with the pad token, longer keep their end (recipe 64; a
    #: full Wordle prompt before the 6th guess is 62 tokens).
    query_length: int = 64
    #: sampled tokens per response, always all of them (recipe 24; Wordle: 5 letters + [EOA] = 6).
    response_length: int = 6
    #: sampling temperature, also dividing the logits whenever log-probs are recomputed (recipe 0.7).
    temperature: float = 0.7
    #: the truncate token ([EOA]) counts from this response index on (recipe truncate_after 16 of 24; here 1).
    truncate_after: int = 1
    #: score of a response without a truncate token (recipe -1).
    truncation_penalty: float = -1.0
    #: initial KL coefficient beta (recipe rewards.kl_coef 0.15).
    kl_coef: float = 0.15
    #: adapt beta with the proportional controller (recipe adaptive_kl on); false keeps it fixed.
    adaptive_kl: bool = True
    #: the controller's KL target in nats per response (recipe 6.0).
    kl_target: float = 6.0
    #: the controller's horizon in episodes (recipe 10,000).
    kl_horizon: int = 10_000
    #: GAE discount within a response (recipe gamma 1).
    gamma: float = 1.0
    #: GAE lambda (recipe lam 0.95).
    lam: float = 0.95
    #: whiten the per-token rewards per minibatch, keeping their mean (recipe whiten_rewards True).
    whiten_rewards: bool = True
    #: policy ratio clip (recipe cliprange 0.2).
    cliprange: float = 0.2
    #: value clip around the rollout values (recipe cliprange_value 0.2).
    cliprange_value: float = 0.2
    #: value-loss coefficient (recipe vf_coef 0.1).
    vf_coef: float = 0.1
    #: peak learning rate (recipe ppo.lr 1e-5 for GPT-2 124M; a small model from BC may need more).
    lr: float = 1e-5
    #: Adam epsilon (recipe 1e-5).
    adam_eps: float = 1e-5
    #: Adam with TensorFlow's epsilon placement (the recipe ran tf.train.AdamOptimizer); false = torch Adam.
    tf_adam: bool = True
    #: anneal the learning rate linearly to 0 over ``updates`` (recipe: lr * (1 - progress)).
    anneal_lr: bool = True
    #: gradient-norm clipping (0 = none, as in the recipe).
    grad_clip: float = 0.0
    #: zero-initialise the value head (recipe: value head init scale 0).
    zero_init_value: bool = True
    #: constrain responses to the environment's valid actions (Wordle's guess list); false = free text.
    constrain_actions: bool = True
    #: Wordle feedback rule (``official`` or ``ilql``).
    rule: str = "official"
    #: Wordle hidden-word mode (``fixed`` or ``adversarial_resample``).
    mode: str = "fixed"
    #: Wordle answer list.
    answers: str = "official_answers"
    #: Wordle guess list.
    guesses: str = "official_guesses"
    #: seed of the initial weights (without ``init``), the games and the sampling.
    seed: int = 0
    #: updates between checkpoints (the last update always writes one).
    checkpoint_every: int = 10
    #: continue from ``out/checkpoint`` when it exists (exactly: weights, optimizer, beta, schedule, games).
    resume: bool = True
    #: the model when ``init`` is empty (replaced by the init checkpoint's model otherwise); with
    #: ``model.pretrained`` PPO starts from that pretrained LM (policy and frozen reference) and its tokenizer.
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    #: tokenizer name when ``init`` and ``model.pretrained`` are empty.
    tokenizer: str = "wordle"
    #: where to train and roll out: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``
    #: (``trainers.core.device``).
    device: str = "auto"
    #: ``auto`` (fp32 unless the command chose), ``fp32``, ``tf32`` or ``bf16`` (``trainers.core.device``).
    precision: str = "auto"


__all__ = ["PPOConfig"]
