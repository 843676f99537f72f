"""PPO for language agents, with the details of the lm-human-preferences recipe (Ziegler et al. 2019) as
reproduced in "The N Implementation Details of RLHF with PPO" (Huang et al. 2023).

One update: play ``episodes`` games of the environment with the current policy, recorded through
``loggers.record`` (``trainers.ppo_rollout``: each turn is a query -> fixed-length response sample); score
every turn (environment rewards, a learned reward model or a scorer: ``trainers.ppo_rewards``; the turn's
score is its return-to-go, with the -1 penalty for a response without a truncate token); compute the
rollout log-probs, the frozen reference's log-probs and the values in one pass; per-token rewards
``-beta (log pi - log pi_ref)`` plus the score on the last kept token; then ``ppo_epochs`` passes over a
fresh shuffle, each minibatch whitening its rewards (mean kept), running GAE, whitening its advantages
and taking one optimizer step over ``grad_accum`` micro-batches (each weighted by its share of the
minibatch's tokens, so the step does not depend on how it was cut). The KL controller moves after the
update. Every detail is an option of ``PPOConfig`` below, with its source and a test in ``tests/test_ppo*.py``.

Scale-down for CPU (stated per field): 8 games per update instead of 512 episodes, responses of 6 tokens
(a Wordle guess and ``[EOA]``) instead of 24, truncation allowed from token 1 instead of 16, and a small
model instead of GPT-2 124M. Under ``torchrun`` every process plays its own ``episodes`` games (its own
seeds, ``rollouts/update-NNNNN-rankR``), shuffles them with the same permutation, and DDP averages the
token-weighted gradients; process 0 logs and checkpoints.

The issue's twelve details, where each lives and the test that fails when it breaks
(``tests/test_ppo_losses.py`` unless named):

| detail | option / function | test |
| --- | --- | --- |
| 1 value head (and reward model) read query + response | ``ppo_model.PolicyWithValue``, ``ppo_rewards.Turn.text`` | ``test_value_head_reads_query_and_response_concatenated`` |
| 2 left padding, positions from the mask | ``query_length``, ``ppo_model.left_pad`` | ``test_left_padded_generation_and_scores_equal_unpadded`` |
| 3 fixed-length pure sampling, same temperature in the loss | ``response_length``, ``temperature`` | ``test_sampling_is_fixed_length_and_logprobs_use_the_temperature`` |
| 4 truncation, pad after, -1 without the token | ``truncate_after``, ``truncation_penalty`` | ``test_truncation_pads_after_the_token_and_penalizes_rows_without_it`` |
| 5 score on the last token, reward head init, gain/bias | ``ppo_losses.reward_head_init_``, ``normalization_gain_bias`` | ``test_reward_head_init_and_normalisation``, ``test_zero_value_head_and_per_token_kl_rewards`` |
| 6 zero value head, per-token KL, adaptive beta | ``zero_init_value``, ``kl_coef``, ``adaptive_kl``, ``kl_target``, ``kl_horizon`` | ``test_zero_value_head_and_per_token_kl_rewards``, ``test_adaptive_kl_controller_is_the_proportional_rule`` |
| 7 GAE, whitening | ``gamma``, ``lam``, ``whiten_rewards`` | ``test_gae_matches_the_definition``, ``test_whitening_keeps_the_reward_mean_and_centres_advantages``, ``test_ppo_whitening.py`` |
| 8 clipped losses, approx KL, clip fractions | ``cliprange``, ``cliprange_value``, ``vf_coef`` | ``test_clipped_surrogate_stops_the_gradient_outside_the_clip``, ``test_clipped_value_loss_takes_the_larger_error`` |
| 9 minibatches, accumulation, fresh rank-independent shuffles | ``ppo_epochs``, ``nminibatches``, ``grad_accum`` | ``test_minibatch_order_is_fresh_per_epoch_and_rank_independent``, ``test_ppo.py::test_one_minibatch_equals_accumulated_micro_batches`` |
| 10 linear annealing, TF-style Adam epsilon | ``anneal_lr``, ``tf_adam``, ``adam_eps``, ``lr`` | ``test_linear_annealing_reaches_zero``, ``test_tf_adam_differs_from_torch_adam_only_where_epsilon_matters`` |
| 11 no dropout in policy and reference | ``ppo_model.disable_dropout`` | ``test_dropout_is_off_in_policy_and_reference`` |
| 12 reward-model loss over 4 candidates (pairwise: 2) | ``ppo_losses.comparison_loss`` | ``test_comparison_loss_over_four_and_pairwise`` |

Multi-turn: each turn is one PPO sample whose score is the turn's return-to-go (gamma 1 across turns, no
bootstrapping between turns); GAE runs within the response. An ILQL start uses its LM (the policy it
decodes with beta = 0); its value heads are not used.

Outputs under ``out``: ``metrics.jsonl`` and TensorBoard (``tb/``) per update (score, KL, beta, entropy,
clip fractions, value error, ...), ``training_curves.png``, ``checkpoint/`` (resumes exactly; loads as an
agent with ``trainers.checkpoint.load_policy``) and ``rollouts/update-NNNNN`` (what PPO saw, RLDS logs).

Example (CLI: ``rlds-lang train ppo --task wordle --init runs/bc/checkpoint --reward env --updates 50``)::

    from trainers.ppo import PPOConfig, train_ppo

    result = train_ppo(PPOConfig(init="runs/bc/checkpoint", updates=20, out="runs/ppo"))
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainers.model import ModelConfig, language_model_for
from trainers.ppo_model import PolicyWithValue, frozen_reference


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
    out: str = "runs/ppo"
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
    #: the model when ``init`` is empty (replaced by the init checkpoint's model otherwise).
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    #: tokenizer name when ``init`` is empty.
    tokenizer: str = "wordle"


class PPOModel(PolicyWithValue):
    """The trained module of a PPO checkpoint: the policy LM and its value head (``load_agent_model``)."""

    def __init__(self, config: PPOConfig, tokenizer: Any):
        super().__init__(language_model_for(config.model, tokenizer),
                         zero_init_value=config.zero_init_value)


def initial_model(config: PPOConfig) -> tuple[PPOConfig, PPOModel, Any]:
    """``(config with the init's model, policy + value head, tokenizer)``: from ``config.init`` or random."""
    from rlds_lang.tokenizers import make_tokenizer
    from trainers.checkpoint import load_agent_model

    torch.manual_seed(config.seed)
    if not config.init:
        tokenizer = make_tokenizer(config.tokenizer)
        return config, PPOModel(config, tokenizer), tokenizer
    loaded = load_agent_model(config.init)
    config = dataclasses.replace(config, model=loaded.config.model)
    model = PPOModel(config, loaded.tokenizer)
    model.lm.load_state_dict(loaded.lm.state_dict())
    if loaded.algorithm == "ppo":
        model.value_head.load_state_dict(loaded.model.value_head.state_dict())
    return config, model.requires_grad_(True), loaded.tokenizer


def make_env(config: PPOConfig) -> tuple[Any, list[str] | None]:
    """``(environment, valid actions or None)`` of ``config.task``."""
    if config.task != "wordle":
        raise ValueError(f"PPOConfig.task {config.task!r}: only 'wordle' is built in; pass env= to train_ppo")
    from rlds_lang.wordle.env import WordleEnv

    env = WordleEnv(answers=config.answers, guesses=config.guesses, rule=config.rule, mode=config.mode)
    return env, (list(env.guesses.words) if config.constrain_actions else None)


def _resume_state(config: PPOConfig, model: nn.Module, reference: nn.Module) -> dict[str, Any] | None:
    from trainers.checkpoint import checkpoint_dir

    path = checkpoint_dir(config.out)
    if not (config.resume and (path / "trainer_state.pt").exists()):
        return None
    model.load_state_dict(torch.load(path / "model.pt", map_location="cpu", weights_only=True))
    state = torch.load(path / "trainer_state.pt", map_location="cpu", weights_only=False)
    reference.load_state_dict(state["reference"])
    return state


def train_ppo(config: PPOConfig, env: Any = None, allowed_actions: list[str] | None = None, source: Any = None,
              init: tuple[nn.Module, Any] | None = None, progress: bool = False) -> Any:
    """Runs PPO (see the module docstring). ``env``/``allowed_actions`` override the task, ``source`` the
    ``reward`` spec (any reward source of ``trainers.ppo_rewards``), ``init`` = ``(lm, tokenizer)`` the start.
    Returns a ``trainers.ppo_train.PPOResult``."""
    from trainers.loop import init_distributed
    from trainers.ppo_train import run

    if env is None:
        env, allowed_actions = make_env(config)
    if source is None:
        from trainers.ppo_rewards import reward_source

        source = reward_source(config.reward)
    if init is not None:
        lm, tokenizer = init
        torch.manual_seed(config.seed)
        model = PolicyWithValue(lm, zero_init_value=config.zero_init_value)
    else:
        config, model, tokenizer = initial_model(config)
    reference = frozen_reference(model.lm)
    state = _resume_state(config, model, reference)
    out = Path(config.out)
    info = init_distributed()
    if state is None and any((out / "rollouts").glob("update-*/*")):
        raise FileExistsError(f"{out / 'rollouts'} holds rollouts of another run and there is no checkpoint to "
                              f"resume: give a new --out (recorded data is never overwritten)")
    if info.is_main:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps({"algorithm": "ppo", "config": dataclasses.asdict(config)},
                                                    indent=2))
    if info.world_size > 1:  # every process checked the folder before any records into it
        torch.distributed.barrier()
    return run(config, model, reference, tokenizer, env, allowed_actions, source, state, progress)


__all__ = ["PPOConfig", "PPOModel", "initial_model", "make_env", "train_ppo"]
