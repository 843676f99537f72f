"""The moving-dot demonstration: an agent trained only on a reward learned from preferences, on a pixel task.

``rlds-lang results preferences dot`` runs the moving-dot toy (``rlds_lang.moving_dot``: an image with one dot, five
moves, a reward for being near the centre) three ways and scores each agent on the *true* reward over the
same seeded evaluation episodes:

- ``random``: uniform moves (the floor);
- ``true reward``: tabular Q-learning on the environment's reward;
- ``predicted reward``: the same Q-learning inside ``PreferenceEnv``, fed by the multi-process preference
  pipeline (``trainers.algorithms.reward.pipeline``: clips of ``segment_length`` steps, synthetic labels by true
  return, the convolutional reward ensemble trained in its own process, checkpoints reloaded by the
  wrapper). A random policy plays until the wrapper has switched to the predicted reward by itself (after
  ``n_initial_training_steps`` reward-training steps); only then does the agent start learning, and every
  reward it learns from is the predicted one (counted).

The verdict: the predicted-reward agent recovers at least ``margin`` of the true-reward agent's gain over
random, ``(R_pred - R_random) / (R_true - R_random) >= margin`` (default 0.8). Writes ``OUT/dot_demo.json``
and, with ``--doc``, a generated page (default ``docs/preference_dot.md``).

Example::

    rlds-lang results preferences dot --out runs/dot --doc docs/preference_dot.md
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rlds_lang.moving_dot.env import MOVES, MovingDotEnv, best_return
from rlds_lang.paths import default_run
from trainers.algorithms.reward.config import RewardModelConfig
from trainers.core.provenance import generated_by
from trainers.evaluation.stats import standard_error


def dot_reward_config() -> RewardModelConfig:
    """The demonstration's ensemble: 3 convolutional predictors, batches of 16, lr 1e-3."""
    return RewardModelConfig(members=3, batch_size=16, lr=1e-3, hidden=32, val_every=10)


@dataclasses.dataclass
class DotDemoConfig:
    """Sizes of the moving-dot demonstration (module docstring)."""

    #: grid side and episode length of the environment.
    size: int = 8
    episode_length: int = 20
    #: Q-learning episodes of each learning agent (400 recovered 0.60 of the gain; 1500 reaches the target,
    #: docs/preference_dot.md).
    agent_episodes: int = 1500
    #: Q-learning step size, discount, and exploration (epsilon decays linearly to ``epsilon_end``).
    q_lr: float = 0.5
    gamma: float = 0.9
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    #: steps per clip shown to the synthetic labeller.
    segment_length: int = 10
    #: labels before reward training starts; training steps before the wrapper serves the predicted reward.
    n_initial_preferences: int = 40
    #: The agent waits for a fully trained model (600 steps): with 30 it started on a rough reward and
    #: recovered 0.72 of the gain, with 600 it recovered 1.00 (docs/preference_dot.md).
    n_initial_training_steps: int = 600
    #: reward-training steps in all (the pipeline keeps training while the agent learns) and between checkpoints.
    max_training_steps: int = 600
    checkpoint_every: int = 10
    #: environment steps between the wrapper's reloads of the checkpoint.
    reload_every: int = 200
    #: serve the reward normalised over a window of recent steps that every served step joins (the paper's
    #: normalisation). Off by default: the window follows the agent's own changing state distribution, so the
    #: reward's offset and scale drift at every step, which a tabular Q-learner cannot follow (measured: -8.0 vs
    #: -3.3 with the same final reward model); off, the agent learns from the ensemble's mean reward, which
    #: changes only when a new checkpoint is loaded.
    normalise_online: bool = False
    #: seconds a random policy may play while waiting for the first usable reward model.
    warmup_timeout: float = 900.0
    #: evaluation episodes (true reward, greedy agents, shared seeds).
    eval_episodes: int = 500
    #: share of the true-reward agent's gain over random the predicted-reward agent must recover.
    margin: float = 0.8
    seed: int = 0
    out: str = default_run("dot-demo")
    #: the reward ensemble (the paper's 3 members; the conv net of ``trainers.algorithms.reward.networks``).
    reward: RewardModelConfig = dataclasses.field(default_factory=dot_reward_config)


class QAgent:
    """Tabular Q-learning over the dot's position (read off the image); epsilon-greedy while learning.

    Every reward is shifted by the highest reward seen so far, so all rewards the agent learns from are <= 0
    and the zero-initialised Q-table is optimistic: untried moves look best and get tried. Without the shift
    the agent depends on where a reward's zero lies: a learned reward is defined only up to such an offset,
    and with mostly positive learned rewards a zero-initialised table is pessimistic and the agent settles on
    its first moves. In fixed-length episodes a constant shift changes no policy's ranking.
    """

    def __init__(self, size: int, lr: float, gamma: float, seed: int):
        self.q = np.zeros((size, size, len(MOVES)))
        self.lr, self.gamma = lr, gamma
        self.rng = np.random.default_rng(seed)
        self.best_reward = -np.inf

    @staticmethod
    def state(observation: np.ndarray) -> tuple[int, int]:
        """The dot's (row, column) in an image observation."""
        row, col, _ = np.unravel_index(int(np.argmax(observation)), observation.shape)
        return int(row), int(col)

    def act(self, observation: np.ndarray, epsilon: float) -> int:
        """Epsilon-greedy (ties broken at random)."""
        if self.rng.random() < epsilon:
            return int(self.rng.integers(len(MOVES)))
        values = self.q[self.state(observation)]
        return int(self.rng.choice(np.flatnonzero(values == values.max())))

    def learn(self, observation: np.ndarray, action: int, reward: float, next_observation: np.ndarray,
              terminal: bool) -> None:
        """One Q-learning update on the shifted reward (class docstring)."""
        self.best_reward = max(self.best_reward, reward)
        s, s2 = self.state(observation), self.state(next_observation)
        target = reward - self.best_reward + (0.0 if terminal else self.gamma * self.q[s2].max())
        self.q[s + (action,)] += self.lr * (target - self.q[s + (action,)])


def play(env: Any, choose: Callable[[np.ndarray], int], learn: QAgent | None = None) -> float:
    """One episode; returns the sum of the rewards ``env`` served (and learns from them when ``learn``)."""
    timestep = env.reset()
    total = 0.0
    while not timestep.last():
        action = choose(timestep.observation)
        nxt = env.step(action)
        total += float(nxt.reward)
        if learn is not None:
            learn.learn(timestep.observation, action, float(nxt.reward), nxt.observation, nxt.last())
        timestep = nxt
    return total


def train_agent(env: Any, config: DotDemoConfig, seed: int, served: Callable[[], bool] = lambda: True) -> tuple[QAgent, int]:
    """Q-learning for ``agent_episodes`` episodes; returns the agent and how many episodes ``served()`` held
    (for the wrapper: the predicted reward was in use from the episode's start)."""
    agent = QAgent(config.size, config.q_lr, config.gamma, seed)
    predicted = 0
    for k in range(config.agent_episodes):
        epsilon = config.epsilon_start + (config.epsilon_end - config.epsilon_start) * k / max(config.agent_episodes - 1, 1)
        predicted += bool(served())
        play(env, lambda obs: agent.act(obs, epsilon), learn=agent)
    return agent, predicted


def evaluate(choose: Callable[[np.ndarray], int], config: DotDemoConfig) -> np.ndarray:
    """True returns of ``eval_episodes`` seeded episodes (the same starts for every agent)."""
    env = MovingDotEnv(config.size, config.episode_length, seed=10_000 + config.seed)
    return np.array([play(env, choose) for _ in range(config.eval_episodes)])


def predicted_reward_agent(config: DotDemoConfig, progress: bool) -> tuple[QAgent, dict[str, Any]]:
    """The agent of the third row (module docstring), with the pipeline's counts."""
    from rlds_lang.preferences.wrapper import PreferenceEnv
    from trainers.algorithms.reward.pipeline import (
        PipelineConfig,
        PreferencePipeline,
        stop_on_sigterm,
    )

    run = time.strftime("%Y%m%d-%H%M%S", time.gmtime())  # a new folder per run: earlier labels stay as they are
    pipeline_config = PipelineConfig(out=str(Path(config.out) / f"pipeline-{run}"), clip_queue_size=64,
                                     n_initial_preferences=config.n_initial_preferences,
                                     checkpoint_every=config.checkpoint_every,
                                     max_training_steps=config.max_training_steps, seed=config.seed,
                                     reward=config.reward)
    rng = np.random.default_rng(config.seed + 1)
    with stop_on_sigterm(), PreferencePipeline(pipeline_config) as pipeline:
        env = PreferenceEnv(MovingDotEnv(config.size, config.episode_length, seed=config.seed + 1),
                            clip_sink=pipeline.clip_sink,
                            predictor=pipeline.predictor(update_normalisation=config.normalise_online),
                            segment_length=config.segment_length,
                            n_initial_training_steps=config.n_initial_training_steps,
                            reload_every=config.reload_every)
        started, warmup = time.monotonic(), 0
        while not env.using_predicted_reward:  # a random policy plays until the reward model is ready
            if time.monotonic() - started > config.warmup_timeout:
                raise TimeoutError(f"no reward model with {config.n_initial_training_steps} training steps after "
                                   f"{config.warmup_timeout:.0f} s (labels stored: {pipeline.labels_received})")
            play(env, lambda obs: int(rng.integers(len(MOVES))))
            warmup += 1
            time.sleep(0.01)  # a random policy at full speed would only fill the clip queue with drops
            env.predictor.reload()
        if progress:
            print(f"predicted reward in use after {warmup} random episodes "
                  f"({pipeline.labels_received} labels stored)", file=sys.stderr, flush=True)
        agent, predicted_episodes = train_agent(env, config, config.seed + 2, lambda: env.using_predicted_reward)
    return agent, {"warmup_episodes": warmup, "episodes_on_predicted_reward": predicted_episodes,
                   **pipeline.summary}


def random_clips(episodes: int, size: int, episode_length: int, segment_length: int, seed: int) -> list[Any]:
    """Clips of ``episodes`` random-policy episodes, cut by ``PreferenceEnv`` (true rewards kept)."""
    from rlds_lang.preferences.wrapper import PreferenceEnv

    clips: list[Any] = []
    rng = np.random.default_rng(seed)
    env = PreferenceEnv(MovingDotEnv(size, episode_length, seed=seed), clip_sink=clips.append,
                        segment_length=segment_length, episode_prefix=f"dot{seed}")
    for _ in range(episodes):
        play(env, lambda obs: int(rng.integers(len(MOVES))))
    return clips


def run_dot_demo(config: DotDemoConfig, progress: bool = True) -> dict[str, Any]:
    """The three agents, their true returns on shared evaluation seeds, and the computed verdict."""
    started = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    rows = {"random": evaluate(lambda obs: int(rng.integers(len(MOVES))), config)}
    true_agent, _ = train_agent(MovingDotEnv(config.size, config.episode_length, seed=config.seed), config,
                                config.seed + 2)
    rows["true reward"] = evaluate(lambda obs: true_agent.act(obs, 0.0), config)
    predicted_agent, counts = predicted_reward_agent(config, progress)
    rows["predicted reward"] = evaluate(lambda obs: predicted_agent.act(obs, 0.0), config)
    probe = MovingDotEnv(config.size, config.episode_length, seed=10_000 + config.seed)
    starts = []
    for _ in range(config.eval_episodes):
        probe.reset()
        starts.append(probe.position)
    rows["best possible"] = np.array([best_return(probe, s) for s in starts])
    gain = rows["true reward"].mean() - rows["random"].mean()
    recovered = float((rows["predicted reward"].mean() - rows["random"].mean()) / gain) if gain > 0 else float("nan")
    results = {"rows": {name: {"mean": float(v.mean()), "se": standard_error(v)}
                        for name, v in rows.items()},
               "recovered": recovered, "margin": config.margin,
               "verdict": "reached" if recovered >= config.margin else "not reached", "pipeline": counts,
               "seconds": time.perf_counter() - started, "config": dataclasses.asdict(config)}
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dot_demo.json").write_text(json.dumps(results, indent=2, sort_keys=True, default=str))
    return results


def render_doc(results: dict[str, Any], command: str) -> str:
    """The generated page: target first, then the table and the pipeline's counts."""
    c, p = results["config"], results["pipeline"]
    lines = ["# Preference learning on a pixel task: the moving dot", "",
             f"{generated_by(command)} on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; do not edit by hand.",
             "",
             f"**Target {results['verdict']}**: the agent trained on the learned reward recovers "
             f"{results['recovered']:.2f} of the true-reward agent's gain over random (target ≥ {results['margin']}).",
             "",
             f"Moving dot on a {c['size']}×{c['size']} image, {c['episode_length']}-step episodes, reward "
             f"−(distance to the centre)/size per step. Both learning agents: tabular Q-learning, "
             f"{c['agent_episodes']} episodes. The predicted-reward agent learns only inside `PreferenceEnv`: the "
             f"multi-process pipeline labelled {p.get('labels_received', 0)} pairs of {c['segment_length']}-step clips "
             f"({p.get('clips_sent', 0)} clips sent, {p.get('clips_dropped', 0)} dropped), trained an ensemble of "
             f"{c['reward']['members']} convolutional predictors for {p.get('training_steps', 0)} steps (validation "
             f"accuracy {p.get('last_metrics', {}).get('val_accuracy', float('nan')):.3f}), and the agent started after "
             f"{p['warmup_episodes']} random warm-up episodes; {p['episodes_on_predicted_reward']} of its "
             f"{c['agent_episodes']} episodes were served the predicted reward from their first step.", "",
             f"True return over {c['eval_episodes']} shared evaluation episodes (greedy agents):", "",
             "| agent | mean true return ± SE |", "| --- | --- |"]
    for name, row in results["rows"].items():
        lines.append(f"| {name} | {row['mean']:.3f} ± {row['se']:.3f} |")
    lines += ["", f"Run time: {results['seconds']:.0f} s.", ""]
    return "\n".join(lines)


__all__ = ["DotDemoConfig", "QAgent", "dot_reward_config", "evaluate", "play", "random_clips", "render_doc", "run_dot_demo", "train_agent"]
