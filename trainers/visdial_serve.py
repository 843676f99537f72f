"""``rlds-lang visdial-serve``: our Visual Dialogue answer/reward server on the published protocol.

Loads the dialogues and features of a manual folder (answerer: the images of train and val; ranking
pool: val; question bot: train) and a guesser trained by ``rlds-lang visdial-guesser``, then serves
``rlds_lang.visdial.server.create_app`` with uvicorn on ``--host`` (127.0.0.1 by default, this machine
only) and ``--port`` until interrupted. Clients: ``rlds_lang.visdial.http.HttpBackend(url)``.

Example::

    rlds-lang visdial-serve --manual-dir ~/visdial_manual --guesser ~/visdial_guesser --port 8766
"""

from __future__ import annotations

import argparse

from rlds_lang.visdial.backend import build_local_backend
from trainers.visdial_guesser import load_guesser


def cmd_visdial_serve(args: argparse.Namespace) -> None:
    """Builds the local backend and serves it until interrupted."""
    import torch
    import uvicorn

    from rlds_lang.visdial.server import create_app

    torch.set_num_threads(1)
    backend = build_local_backend(args.manual_dir, load_guesser(args.guesser), args.version,
                                  normalize=not args.no_normalize, published_pool=args.published_pool,
                                  unk_below=args.unk_below)
    print(f"Visual Dialogue server on http://{args.host}:{args.port} (pool of {len(backend.pool)} val images)",
          flush=True)
    uvicorn.run(create_app(backend), host=args.host, port=args.port, log_level="info")


def add_parser(sub) -> None:
    """Registers ``visdial-serve`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("visdial-serve", help="serve the Visual Dialogue answerer/guesser on the published protocol")
    p.add_argument("--manual-dir", required=True, help="folder with visdial_<version>_<split>.json and data_img.h5")
    p.add_argument("--guesser", required=True, help="folder saved by rlds-lang visdial-guesser")
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
    p.set_defaults(func=cmd_visdial_serve)


__all__ = ["add_parser", "cmd_visdial_serve"]
