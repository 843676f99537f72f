"""PPO for language agents, with the details of the lm-human-preferences recipe (Ziegler et al. 2019) as
reproduced in "The N Implementation Details of RLHF with PPO" (Huang et al. 2023).

One update: play ``episodes`` games of the environment with the current policy, recorded through
``loggers.record`` (``trainers.algorithms.ppo.rollout``: each turn is a query -> fixed-length response sample); score
every turn (environment rewards, a learned reward model or a scorer: ``trainers.algorithms.ppo.rewards``; the turn's
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

The recipe's twelve details, where each lives and the test that fails when it breaks
(``tests/test_ppo_losses.py`` unless named):

| detail | option / function | test |
| --- | --- | --- |
| 1 value head (and reward model) read query + response | ``ppo_model.PolicyWithValue``, ``ppo_rewards.Turn.text`` | ``test_value_head_reads_query_and_response_concatenated`` |
| 2 left padding, positions from the mask | ``query_length``, ``trainers.core.padding.left_pad`` | ``test_left_padded_generation_and_scores_equal_unpadded`` |
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
agent with ``trainers.algorithms.registry.load_policy``) and ``rollouts/update-NNNNN`` (what PPO saw, RLDS logs).

Example (CLI: ``rlds-lang train ppo --task wordle --init runs/bc/checkpoint --reward env --updates 50``)::

    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import train_ppo

    result = train_ppo(PPOConfig(init="runs/bc/checkpoint", updates=20, out="runs/ppo"))
"""
