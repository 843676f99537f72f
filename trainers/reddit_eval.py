"""Reddit commands: ``rlds-lang reddit-tokenizer`` (a subword tokenizer for open text) and ``rlds-lang eval --task reddit``.

``reddit-tokenizer`` trains a byte-level BPE (``rlds_lang.subword.SubwordTokenizer``) on the parent and
comment texts of the ``train`` split of a manual folder (either layout) and saves it; training then uses it
with ``--tokenizer file:PATH`` and the checkpoint carries it as ``tokenizer.json``.

``eval --task reddit`` samples replies of each ``--agent`` checkpoint to held-out parents (the ``test``
split of ``--data``, as in the paper: 1,024 episodes, seed 0, replies up to 256 tokens), scores them with
``--reward`` through ``RedditEnv`` (``raw * scale + shift``, the kind's published scale unless given) and
prints mean ± standard error per agent. ``upvotes_real`` cannot score new text (it knows only the data's
comments), so it is refused here.

Example::

    rlds-lang reddit-tokenizer --data DIR --out runs/reddit-tokenizer.json
    rlds-lang train bc --dataset /tmp/reddit-data/reddit_comments/toxicity/1.0.0 --tokenizer file:runs/reddit-tokenizer.json
    rlds-lang eval --task reddit --data DIR --reward toxicity --agent bc=runs/train/checkpoint --episodes 64
"""

from __future__ import annotations

import argparse
import collections
import json
import math
from typing import Any

from rlds_lang.reddit.data import read_folder, rejection_report
from rlds_lang.reddit.env import RedditEnv
from rlds_lang.reddit.rewards import REWARD_KINDS, make_reward
from rlds_lang.reddit.upvote_model import find_upvote_model
from rlds_lang.subword import SubwordTokenizer


def cmd_reddit_tokenizer(args: argparse.Namespace) -> SubwordTokenizer:
    """Trains the subword tokenizer on the training split's texts and saves it to ``args.out``."""
    rejections: collections.Counter = collections.Counter()
    everything = list(read_folder(args.data, rejections))
    comments = [c for c in everything if c.split == "train"]
    if not comments:
        raise SystemExit(f"rlds-lang reddit-tokenizer: no train comments in {args.data}")
    texts = [t for c in comments for t in (c.parent_text, c.text) if t]
    tokenizer = SubwordTokenizer.train(texts, vocab_size=args.vocab_size, name=f"reddit-bpe-{args.vocab_size}")
    tokenizer.save(args.out)
    print(f"{rejection_report(rejections, len(everything))}; trained on {len(texts)} texts of {len(comments)} train "
          f"comments: {tokenizer.vocab_size} ids -> {args.out}")
    return tokenizer


def mean_and_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (sample standard deviation / sqrt(n); 0 for a single value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def evaluate_agent(policy: Any, env: RedditEnv, episodes: int, seed: int, batch: int = 32) -> list[float]:
    """Rewards of ``episodes`` replies of ``policy``: episode ``i`` draws its parent with seed ``seed + i``."""
    rewards: list[float] = []
    for start in range(0, episodes, batch):
        seeds = list(range(seed + start, seed + min(episodes, start + batch)))
        observations = []
        for s in seeds:
            env.seed(s)
            observations.append(env.reset().observation)
        replies = policy.act_batch([([o], []) for o in observations], seeds=seeds)
        env.prefetch(replies)
        for s, reply in zip(seeds, replies):
            env.seed(s)
            env.reset()
            rewards.append(float(env.step(reply).reward))
    return rewards


def cmd_reddit_eval(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """``eval --task reddit``: mean ± SE of each agent's replies (see the module docstring)."""
    import torch

    from trainers.agents import LanguageModelPolicy
    from trainers.checkpoint import load_agent_model
    from trainers.config import parse_bool

    torch.set_num_threads(1)
    if args.reward == "upvotes_real":
        raise SystemExit("eval --task reddit: upvotes_real scores only comments of the data, not sampled replies; "
                         "use toxicity, toxicity_noised or upvotes_model")
    if not args.agent:
        raise SystemExit("eval --task reddit: give at least one --agent NAME=CHECKPOINT")
    comments = [c for c in read_folder(args.data, collections.Counter()) if c.split == args.split]
    if not comments:
        raise SystemExit(f"eval --task reddit: no {args.split} comments in {args.data}")
    model_dir = find_upvote_model(args.data) if args.reward == "upvotes_model" else None
    reward = make_reward(args.reward, model_dir=model_dir, seed=args.seed)
    env = RedditEnv(comments, reward, include_parent=args.include_parent, seed=args.seed)
    results = {}
    print(f"{args.episodes} episodes on the {args.split} split of {args.data}, reward {args.reward} "
          f"(scale {env.reward_scale:g}, shift {env.reward_shift:g}), seed {args.seed}")
    for name, path, options in args.agent:
        loaded = load_agent_model(path)
        beta = float(options.get("beta", getattr(loaded.config, "beta", 0.0) if loaded.heads is not None else 0.0))
        policy = LanguageModelPolicy(loaded.lm, loaded.tokenizer, heads=loaded.heads, beta=beta,
                                     temperature=float(options.get("temperature", 1.0)),
                                     greedy=parse_bool(options.get("greedy", "false")),
                                     max_action_tokens=args.max_tokens, name=name, seed=args.seed)
        rewards = evaluate_agent(policy, env, args.episodes, args.seed)
        mean, se = mean_and_se(rewards)
        results[name] = {"mean": mean, "se": se, "episodes": len(rewards)}
        print(f"{name:16s} reward {mean:+.3f} ± {se:.3f}")
    write_results(args.out, results)
    return results


def write_results(path: str | None, results: dict[str, Any]) -> None:
    """Writes an eval command's results as JSON to ``path`` (nothing when ``path`` is empty)."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


def add_eval_arguments(ev: argparse.ArgumentParser) -> None:
    """The options ``eval --task reddit`` adds to the eval parser (ignored by the other tasks)."""
    group = ev.add_argument_group("--task reddit")
    group.add_argument("--data", help="reddit: manual folder (published layout or dumps) holding the held-out parents")
    group.add_argument("--reward", default="toxicity", choices=[k for k in REWARD_KINDS],
                       help="reddit: reward kind scoring the replies")
    group.add_argument("--episodes", type=int, default=1024, help="reddit: replies per agent (the paper's 1,024)")
    group.add_argument("--split", default="test", help="reddit: split whose parents are shown (the paper's test)")
    group.add_argument("--max-tokens", type=int, default=256, help="reddit: longest reply in tokens")
    group.add_argument("--include-parent", type=lambda s: s.lower() in ("1", "true", "yes", "on"), default=True,
                       help="reddit: show the parent comment (true/false)")


def add_parser(sub) -> None:
    """Registers ``reddit-tokenizer`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("reddit-tokenizer", help="train a subword (BPE) tokenizer on a Reddit folder's train split")
    p.add_argument("--data", required=True, help="manual folder (published layout or dumps)")
    p.add_argument("--out", required=True, help="JSON file to write (use with --tokenizer file:OUT)")
    p.add_argument("--vocab-size", type=int, default=4000)
    p.set_defaults(func=cmd_reddit_tokenizer)


__all__ = ["add_eval_arguments", "add_parser", "cmd_reddit_eval", "cmd_reddit_tokenizer", "evaluate_agent",
           "mean_and_se", "write_results"]
