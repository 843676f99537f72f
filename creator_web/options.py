"""The command-line options of the creator_web server (the data folder and the access options), apart from the
server itself (``creator_web.server``, which imports FastAPI and uvicorn) so that ``rlds-lang web --help`` is built
without them; ``creator_web.server.app_options`` turns the parsed options into the server's.

Example::

    import argparse
    from creator_web.options import add_data_dir_argument, add_server_arguments

    parser = argparse.ArgumentParser()
    add_data_dir_argument(parser)
    add_server_arguments(parser)
    args = parser.parse_args(["--judge-pair", "human,bc", "--limit", "session_idle_s=7200"])
"""

from __future__ import annotations

import argparse

from creator_web.limits import Limits
from rlds_lang.paths import web_data_dir


def _pair(text: str) -> tuple[str, str]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise argparse.ArgumentTypeError(f"--judge-pair: expected LEFT,RIGHT (two dataset names), got {text!r}")
    return parts[0].strip(), parts[1].strip()


def _limit(text: str) -> str:
    try:
        Limits.parse([text])
    except (ValueError, TypeError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_data_dir_argument(parser: argparse.ArgumentParser) -> None:
    """Adds ``--data-dir``, the folder the server records into: ``rlds_lang.paths.web_data_dir()`` unless given."""
    parser.add_argument("--data-dir", default=str(web_data_dir()),
                        help="folder of recorded data (created if absent; default: $RLDS_LANG_WEB_DATA or 'web' in "
                             "the user data directory)")


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the access options of the server to a command line (``rlds-lang web`` passes them through
    ``app_options``): ``--allow-host``, ``--annotators``, ``--proxy-user-header``, ``--judge-pair``."""
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="another host name people reach the server by (e.g. the reverse proxy's public name); "
                             "repeatable")
    parser.add_argument("--annotators", metavar="FILE",
                        help="file of 'name secret' lines: only these annotators may open sessions, each with a "
                             "secret of their own")
    parser.add_argument("--proxy-user-header", metavar="HEADER",
                        help="take the signed-in person from this header set by a trusted reverse proxy (e.g. "
                             "X-Remote-User); only when every request comes through that proxy")
    parser.add_argument("--judge-pair", type=_pair, metavar="LEFT,RIGHT",
                        help="the two datasets the judge page starts on (else the person chooses)")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", type=_limit,
                        help="change one of the access limits (wrong secrets, session expiry, open sessions, "
                             "unfinished games; see docs/guides/browser_access.md), e.g. session_idle_s=7200; "
                             "repeatable")
    parser.add_argument("--reddit-dir", metavar="DIR",
                        help="Reddit comments folder (published CSVs or dumps) to draw parents from: offers the "
                             "reddit task")
    parser.add_argument("--upvote-model", metavar="DIR",
                        help="upvote model folder (rlds-lang reddit upvotes) for the upvotes_model reward")
    parser.add_argument("--visdial-dir", metavar="DIR",
                        help="VisDial manual folder (dialogue files, data_img.h5, optional images/): with "
                             "--visdial-answerer, offers the visdial task")
    parser.add_argument("--visdial-answerer", metavar="URL",
                        help="base URL of a VisDial answerer server of the published protocol (e.g. rlds-lang "
                             "visdial serve)")
    parser.add_argument("--visdial-version", default="0.5", choices=["0.5", "1.0"],
                        help="VisDial version of the dialogue files (default 0.5)")


__all__ = ["add_data_dir_argument", "add_server_arguments"]
