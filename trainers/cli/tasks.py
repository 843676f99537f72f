"""``rlds-lang visdial serve``: our Visual Dialogue answer/reward server on the published protocol.

Loads the dialogues and features of a manual folder (answerer: the images of train and val; ranking
pool: val; question bot: train) and a guesser trained by ``rlds-lang visdial guesser``, then serves
``rlds_lang.visdial.server.create_app`` with uvicorn on ``--host`` (127.0.0.1 by default, this machine
only) and ``--port`` until interrupted. Clients: ``rlds_lang.visdial.http.HttpBackend(url)``.

Example::

    rlds-lang visdial serve --manual-dir ~/visdial_manual --guesser ~/visdial_guesser --port 8766
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import os
from typing import Iterator

from rlds_lang.reddit.data import (
    read_folder,
    rejection_report,
)
from rlds_lang.reddit.env import RedditEnv
from rlds_lang.reddit.rewards import REWARD_KINDS, make_reward
from rlds_lang.reddit.upvote_model import (
    UpvoteClassifier,
    UpvoteModelConfig,
    find_upvote_model,
)
from rlds_lang.subword import SubwordTokenizer
from rlds_lang.visdial.backend import build_local_backend
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, read_split
from rlds_lang.visdial.env import BotQuestionPolicy, VisDialEnv, as_question
from rlds_lang.visdial.http import HttpBackend
from rlds_lang.visdial.rewards import MODES, STOP, YN_KINDS, RewardConfig
from trainers.core.device_options import DEVICE_HELP
from trainers.evaluation.reddit import evaluate_agent, write_results
from trainers.evaluation.stats import mean_and_se
from trainers.evaluation.visdial import evaluate_questioner, plot_questioners
from trainers.tasks.reddit_upvotes import (
    UpvoteTrainConfig,
    read_comments,
    train_upvote_model,
)
from trainers.tasks.visdial_guesser import GuesserConfig, load_guesser, train_guesser


def cmd_visdial_serve(args: argparse.Namespace) -> None:
    """Builds the local backend and serves it until interrupted (or, with ``--write-caches``, writes its reward
    caches and returns)."""
    import torch
    import uvicorn

    from rlds_lang.visdial.server import create_app

    torch.set_num_threads(1)
    backend = build_local_backend(args.manual_dir, load_guesser(args.guesser), args.version,
                                  normalize=not args.no_normalize, published_pool=args.published_pool,
                                  unk_below=args.unk_below)
    if args.write_caches:
        from trainers.tasks.visdial_caches import write_reward_caches

        for path in write_reward_caches(backend, args.manual_dir, args.write_caches, args.cache_splits, args.version,
                                        normalize=not args.no_normalize):
            print(f"wrote {path}")
        return
    print(f"Visual Dialogue server on http://{args.host}:{args.port} (pool of {len(backend.pool)} val images)",
          flush=True)
    uvicorn.run(create_app(backend), host=args.host, port=args.port, log_level="info")


def add_visdial_serve_parser(sub) -> None:
    """Registers ``visdial-serve`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("visdial-serve", help="serve the Visual Dialogue answerer/guesser on the published protocol")
    p.add_argument("--manual-dir", required=True, help="folder with visdial_<version>_<split>.json and data_img.h5")
    p.add_argument("--guesser", required=True, help="folder saved by rlds-lang visdial guesser")
    p.add_argument("--version", default="0.5", help="VisDial version of the dialogue files (0.5 or 1.0)")
    p.add_argument("--no-normalize", action="store_true", help="do not L2-normalise the image features")
    p.add_argument("--published-pool", action="store_true",
                   help="rank the true image as the reference server does (prepended to the whole val pool, so a "
                        "val image counts twice); default: every image once")
    p.add_argument("--unk-below", type=int, default=0,
                   help="answer in the vocabulary of words seen this often in train/val questions and answers (the "
                        "published bots: 5; rarer words become UNK); 0 keeps the dataset answers, lower-cased")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: this machine only)")
    p.add_argument("--port", type=int, default=8766)
    p.add_argument("--write-caches", metavar="OUT",
                   help="instead of serving, write this server's reward caches of --cache-splits into OUT in the "
                        "reference's format (<split>_rank_reward_cache1.json, <split>_reward_cache2.json): what a "
                        "reference client talking to this server must read")
    p.add_argument("--cache-splits", nargs="+", default=["val"], help="splits whose caches --write-caches writes")
    p.set_defaults(func=cmd_visdial_serve)


def cmd_reddit_tokenizer(args: argparse.Namespace) -> SubwordTokenizer:
    """Trains the subword tokenizer on the training split's texts and saves it to ``args.out``."""
    rejections: collections.Counter = collections.Counter()
    everything = list(read_folder(args.data, rejections))
    comments = [c for c in everything if c.split == "train"]
    if not comments:
        raise SystemExit(f"rlds-lang reddit tokenizer: no train comments in {args.data}")
    texts = [t for c in comments for t in (c.parent_text, c.text) if t]
    tokenizer = SubwordTokenizer.train(texts, vocab_size=args.vocab_size, name=f"reddit-bpe-{args.vocab_size}")
    tokenizer.save(args.out)
    print(f"{rejection_report(rejections, len(everything))}; trained on {len(texts)} texts of {len(comments)} train "
          f"comments: {tokenizer.vocab_size} ids -> {args.out}")
    return tokenizer


def cmd_reddit_eval(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """``eval --task reddit``: mean ± SE of each agent's replies (see the module docstring)."""
    import torch

    from trainers.algorithms.registry import agent_options, load_policy

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
        policy = load_policy(path, name=name, max_action_tokens=args.max_tokens, seed=args.seed,
                             **agent_options(options))
        rewards = evaluate_agent(policy, env, args.episodes, args.seed)
        mean, se = mean_and_se(rewards)
        results[name] = {"mean": mean, "se": se, "episodes": len(rewards)}
        print(f"{name:16s} reward {mean:+.3f} ± {se:.3f}")
    write_results(args.out, results)
    return results


def add_reddit_eval_arguments(ev: argparse.ArgumentParser) -> None:
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


def add_reddit_parser(sub) -> None:
    """Registers ``reddit-tokenizer`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("reddit-tokenizer", help="train a subword (BPE) tokenizer on a Reddit folder's train split")
    p.add_argument("--data", required=True, help="manual folder (published layout or dumps)")
    p.add_argument("--out", required=True, help="JSON file to write (use with --tokenizer file:OUT)")
    p.add_argument("--vocab-size", type=int, default=4000)
    p.set_defaults(func=cmd_reddit_tokenizer)


#: ``--agent NAME=server`` plays the server's question bot (``/fetch_q_bot_response``) as a baseline.
SERVER_AGENT = "server"


def cmd_visdial_tokenizer(args: argparse.Namespace) -> SubwordTokenizer:
    """Trains the subword tokenizer on the train split's texts and saves it to ``args.out``."""
    dialogues = list(read_split(args.manual_dir, "train", args.version))
    if not dialogues:
        raise SystemExit(f"rlds-lang visdial tokenizer: no train dialogues in {args.manual_dir}")
    texts = [STOP] + [t for d in dialogues for t in (d.caption, *map(as_question, d.questions), *d.answers)]
    tokenizer = SubwordTokenizer.train(texts, vocab_size=args.vocab_size, name=f"visdial-bpe-{args.vocab_size}")
    tokenizer.save(args.out)
    print(f"trained on {len(texts)} texts of {len(dialogues)} train dialogues: {tokenizer.vocab_size} ids -> {args.out}")
    return tokenizer


@contextlib.contextmanager
def server_url(args: argparse.Namespace) -> Iterator[str]:
    """``--visdial-server``, or the URL of our server started here over ``--data`` and ``--guesser``."""
    if args.visdial_server:
        yield args.visdial_server
        return
    if not args.guesser:
        raise SystemExit("eval --task visdial: give --visdial-server URL, or --guesser DIR (rlds-lang visdial guesser) "
                         "to start our server")
    from rlds_lang.visdial.server import BackendServer
    from trainers.tasks.visdial_guesser import load_guesser

    backend = build_local_backend(args.data, load_guesser(args.guesser), args.visdial_version,
                                  published_pool=args.published_pool, unk_below=args.unk_below)
    with BackendServer(backend) as server:
        yield server.url


def cmd_visdial_eval(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """``eval --task visdial`` (see the module docstring)."""
    import torch

    from trainers.algorithms.registry import agent_options, load_policy

    torch.set_num_threads(1)
    if not args.agent:
        raise SystemExit("eval --task visdial: give at least one --agent NAME=CHECKPOINT")
    if not args.data:
        raise SystemExit("eval --task visdial: give --data, the manual folder holding the dialogues and data_img.h5")
    dialogues = list(read_split(args.data, args.visdial_split, args.visdial_version))
    features = FeatureStore(os.path.join(args.data, FEATURES_FILE), args.visdial_split, expected=len(dialogues))
    config = RewardConfig(args.visdial_mode, yn_kind=args.yn_kind, yn_reward=args.yn_reward)
    results: dict[str, dict[str, float]] = {}
    curves: dict[str, list[list[float]]] = {}
    with server_url(args) as url:
        backend = HttpBackend(url)
        # one environment per episode played at once (agents with act_batch; the server's bot plays one at a time)
        envs = [VisDialEnv(dialogues, backend, config, features=features, seed=args.seed)
                for _ in range(max(1, min(args.batch_games, args.episodes)))]
        print(f"{args.episodes} episodes on the {args.visdial_split} split of {args.data}, mode {config.mode}, "
              f"yes/no {config.yn_kind} ({config.yn_reward:g}), seed {args.seed}, server {url}")
        for name, path, options in args.agent:
            if path == SERVER_AGENT:
                policy = BotQuestionPolicy(backend.question)
            else:
                    policy = load_policy(path, name=name, seed=args.seed, max_action_tokens=args.question_tokens,
                                         **agent_options(options))
            returns, yes_no, curves[name] = evaluate_questioner(policy, envs, args.episodes, args.seed)
            mean, se = mean_and_se(returns)
            results[name] = {"mean": mean, "se": se, "episodes": len(returns), "yes_no_answers": yes_no}
            print(f"{name:16s} return {mean:+.3f} ± {se:.3f}   yes/no answers {yes_no}")
        backend.close()
    features.close()
    write_results(args.out, results)
    if args.out:
        print(f"wrote {args.out} and {plot_questioners(curves, results, os.path.splitext(args.out)[0] + '.png')}")
    return results


def add_visdial_eval_arguments(ev: argparse.ArgumentParser) -> None:
    """The options ``eval --task visdial`` adds to the eval parser (``--data`` and ``--episodes`` are shared)."""
    group = ev.add_argument_group("--task visdial")
    group.add_argument("--guesser", help="visdial: guesser folder (rlds-lang visdial guesser) for our server")
    group.add_argument("--visdial-server", help="visdial: URL of a server speaking the published protocol")
    group.add_argument("--visdial-split", default="val", help="visdial: split whose images are played (paper: val)")
    group.add_argument("--visdial-version", default="0.5", help="visdial: VisDial version of --data (0.5 or 1.0)")
    group.add_argument("--visdial-mode", default="env_stops", choices=MODES, help="visdial: episode mode")
    group.add_argument("--yn-kind", default="hard", choices=YN_KINDS, help="visdial: yes/no penalty kind (paper: hard)")
    group.add_argument("--yn-reward", type=float, default=-2.0, help="visdial: the yes/no penalty")
    group.add_argument("--published-pool", action="store_true",
                       help="visdial: our server ranks as the reference one (true image prepended to the val pool)")
    group.add_argument("--unk-below", type=int, default=0,
                       help="visdial: our server answers in the vocabulary of words seen this often (the published "
                            "bots: 5; rarer words become UNK); 0 keeps the dataset answers, lower-cased")
    group.add_argument("--question-tokens", type=int, default=40, help="visdial: longest question in tokens")


def add_visdial_parser(sub) -> None:
    """Registers ``visdial-tokenizer`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("visdial-tokenizer", help="train a subword (BPE) tokenizer on a VisDial folder's train split")
    p.add_argument("--manual-dir", required=True, help="folder with visdial_<version>_train.json")
    p.add_argument("--out", required=True, help="JSON file to write (use with --tokenizer file:OUT)")
    p.add_argument("--version", default="0.5")
    p.add_argument("--vocab-size", type=int, default=4000)
    p.set_defaults(func=cmd_visdial_tokenizer)


def cmd_visdial_guesser(args: argparse.Namespace) -> None:
    """Trains and saves a guesser; prints the first and last epoch losses."""
    import torch

    torch.set_num_threads(1)
    config = GuesserConfig(buckets=args.buckets, dim=args.dim, hidden=args.hidden, epochs=args.epochs,
                           batch_size=args.batch_size, lr=args.lr, seed=args.seed, version=args.version,
                           split=args.split, device=args.device)
    guesser, losses = train_guesser(args.manual_dir, config)
    guesser.save(args.out, {"epoch_losses": losses})
    print(f"guesser trained on {config.split}: mse {losses[0]:.6f} -> {losses[-1]:.6f}; saved to {args.out}")


def add_visdial_guesser_parser(sub) -> None:
    """Registers ``visdial-guesser`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("visdial-guesser", help="train the guesser of the local Visual Dialogue backend")
    p.add_argument("--manual-dir", required=True, help="folder with visdial_<version>_<split>.json and data_img.h5")
    p.add_argument("--out", required=True, help="folder to save the guesser in")
    defaults = GuesserConfig()
    for field in dataclasses.fields(GuesserConfig):
        p.add_argument(f"--{field.name.replace('_', '-')}", type=type(getattr(defaults, field.name)),
                       default=getattr(defaults, field.name), help=DEVICE_HELP if field.name == "device" else None)
    p.set_defaults(func=cmd_visdial_guesser)


def cmd_reddit_upvotes(args: argparse.Namespace) -> UpvoteClassifier:
    """Reads the data, trains, saves to ``args.out`` and prints the validation accuracy."""
    import torch

    torch.set_num_threads(1)
    rejections: collections.Counter = collections.Counter()
    comments = read_comments(args.data, args.dump, rejections)
    print(rejection_report(rejections, len(comments)))
    config = UpvoteTrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                               train_split=args.train_split, val_split=args.val_split, device=args.device)
    model = train_upvote_model(comments, config, UpvoteModelConfig(buckets=args.buckets, dim=args.dim))
    model.save(args.out)
    info = model.info
    print(f"trained on {info['train_comments']} {config.train_split} comments; validation accuracy on "
          f"{info['val_comments']} {config.val_split} comments: {info['val_accuracy']:.3f} "
          f"(majority class {info['val_majority_accuracy']:.3f}) -> {args.out}")
    return model


def add_reddit_upvotes_parser(sub) -> None:
    """Registers ``reddit-upvotes`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("reddit-upvotes", help="train the Reddit upvote classifier (the upvotes_model reward)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="folder with comments_positive.csv, comments_negative.csv and *_idxs.json")
    source.add_argument("--dump", nargs="+", help="the Reddit comment dumps of one build (.ndjson or .zst files, or "
                        "folders of them), read together; splits by hash of the id")
    p.add_argument("--out", required=True, help="folder to save the model in")
    defaults = UpvoteTrainConfig()
    p.add_argument("--epochs", type=int, default=defaults.epochs)
    p.add_argument("--batch-size", type=int, default=defaults.batch_size)
    p.add_argument("--lr", type=float, default=defaults.lr)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--train-split", default=defaults.train_split)
    p.add_argument("--val-split", default=defaults.val_split)
    p.add_argument("--buckets", type=int, default=UpvoteModelConfig.buckets)
    p.add_argument("--dim", type=int, default=UpvoteModelConfig.dim)
    p.add_argument("--device", default=defaults.device, help=DEVICE_HELP)
    p.set_defaults(func=cmd_reddit_upvotes)


__all__ = ["add_visdial_serve_parser", "cmd_visdial_serve", "cmd_reddit_tokenizer", "cmd_reddit_eval", "add_reddit_eval_arguments", "add_reddit_parser", "cmd_visdial_tokenizer", "server_url", "SERVER_AGENT", "cmd_visdial_eval", "add_visdial_eval_arguments", "add_visdial_parser", "cmd_visdial_guesser", "add_visdial_guesser_parser", "cmd_reddit_upvotes", "add_reddit_upvotes_parser"]
