"""Benchmark of PPO: rollout tokens/s (sampling Wordle guesses, recorded through loggers.record) and PPO update
tokens/s (forward + backward over query + response, every PPO epoch), at one fixed model size.

The policy starts from random weights (speed does not depend on what it learned); the environment is Wordle
with the guess-list constraint, rewards from the game. Figures are the means over the updates after the first
(which also pays for start-up), as ``trainers.algorithms.ppo.trainer.PPOResult`` reports them.

    .venv/bin/python bench/ppo.py                       # 4 layers x 128, 16 games/update, 4 updates
    .venv/bin/python bench/ppo.py --n_layer 2 --n_embd 64 --episodes 32
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.ppo.trainer import train_ppo  # noqa: E402
from trainers.core.model import ModelConfig  # noqa: E402


def main() -> None:
    """Runs a few PPO updates from random weights and prints the two throughputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=16, help="games per update")
    parser.add_argument("--n_layer", type=int, default=4)
    parser.add_argument("--n_embd", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        config = PPOConfig(out=str(Path(tmp) / "ppo"), updates=args.updates, episodes=args.episodes,
                           model=ModelConfig(n_layer=args.n_layer, n_embd=args.n_embd, n_head=4), checkpoint_every=10**9)
        train_ppo(config)
        rows = [json.loads(line) for line in (Path(config.out) / "metrics.jsonl").read_text().splitlines()]
    steady = rows[1:] or rows
    rollout = sum(r["rollout_tokens_per_second"] for r in steady) / len(steady)
    update = sum(r["update_tokens_per_second"] for r in steady) / len(steady)
    turns = sum(r["turns"] for r in steady) / len(steady)
    print(f"model {args.n_layer} layers x {args.n_embd}, {args.episodes} games/update ({turns:.0f} turns), "
          f"{args.threads} thread(s), {len(steady)} updates measured")
    print(f"rollout tokens/s (response tokens sampled, recording included): {rollout:,.0f}")
    print(f"PPO update tokens/s (query + response tokens x {config.ppo_epochs} epochs): {update:,.0f}")


if __name__ == "__main__":
    main()
