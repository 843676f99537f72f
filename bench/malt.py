"""Benchmark of response trees and DPO: trees/s grown and recorded (a scripted sampler and an LM sampler that
samples each tree level in one batch) and DPO training tokens/s of the LM on the scripted trees' pairs (a
random LM wins too rarely to give pairs of its own).

The LM is a randomly initialised GPT-2 of the trainers' default size (4 layers x 128) saved as a BC checkpoint;
speed does not depend on its weights. Trees: branching 3 at the first two guesses, then played to the end.

    .venv/bin/python bench/malt.py                          # 20 trees each, 50 DPO steps of 16 pairs
    .venv/bin/python bench/malt.py --trees 100 --dpo-steps 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from loggers.trees import TreeSpec, record_trees  # noqa: E402
from rlds_lang.tokenizers import wordle_tokenizer  # noqa: E402
from rlds_lang.wordle.env import WordleEnv  # noqa: E402
from rlds_lang.wordle.policies import RandomMixturePolicy  # noqa: E402
from trainers.algorithms.bc import BCConfig, BCModel  # noqa: E402
from trainers.algorithms.dpo.dpo import DPOConfig  # noqa: E402
from trainers.algorithms.dpo.trainer import train_dpo  # noqa: E402
from trainers.algorithms.registry import load_policy
from trainers.core.checkpoint import save_checkpoint  # noqa: E402
from trainers.core.model import ModelConfig  # noqa: E402


def lm_checkpoint(out: Path, layers: int, width: int) -> Path:
    """A random GPT-2 saved as a BC checkpoint."""
    tokenizer = wordle_tokenizer()
    config = BCConfig(out=str(out), model=ModelConfig(n_layer=layers, n_embd=width, n_head=4))
    model = BCModel(config, tokenizer)
    return save_checkpoint(out, "bc", config, model, tokenizer, {"step": 0, "optimizer": {}, "scheduler": {},
                                                                   "torch_rng": None})


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--dpo-steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=16, help="DPO pairs per step")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    args = parser.parse_args()
    spec = TreeSpec(branching=3, branch_depth=2, reward_range=(-6.0, 0.0), pair_method="interval")
    env = WordleEnv()
    print(f"torch threads {torch.get_num_threads()}; trees: branching {spec.branching} at the first "
          f"{spec.branch_depth} guesses, then to the end; LM GPT-2 {args.layers} x {args.width}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ckpt = lm_checkpoint(tmp / "lm", args.layers, args.width)
        samplers = {"random_mixture": RandomMixturePolicy(prob_smart=0.5),
                    "lm (batched)": load_policy(ckpt, allowed_actions=env.guesses.words)}
        for name, policy in samplers.items():
            started = time.perf_counter()
            result = record_trees(env, policy, spec, args.trees, tmp / f"trees_{name.split()[0]}", seed=0, run_name="bench")
            seconds = time.perf_counter() - started
            print(f"trees  {name:<16} {args.trees / seconds:8.2f} trees/s  ({result.num_paths} episodes, "
                  f"{result.num_nodes} responses, {result.num_pairs} pairs, {seconds:.1f} s)")
        config = DPOConfig(dataset=str(tmp / "trees_random_mixture"), init=str(ckpt), out=str(tmp / "dpo"), steps=args.dpo_steps,
                           batch_size=args.batch_size, pair_method="interval", log_every=max(1, args.dpo_steps // 5),
                           checkpoint_every=10**9, resume=False)
        result = train_dpo(config, progress=False)
        print(f"dpo    {args.dpo_steps} steps x {args.batch_size} pairs: {result.tokens_per_second:,.0f} tokens/s "
              f"(both sequences of every pair, padding excluded; from the end of step 1)")


if __name__ == "__main__":
    main()
