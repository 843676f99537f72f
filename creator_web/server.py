"""Running the creator_web server: ``rlds-lang web``, ``python -m creator_web.server``, and a uvicorn server in
a thread for tests and benches.

``rlds-lang web --data-dir DIR [--host 127.0.0.1] [--port 8765]`` serves the tool on localhost (only
this machine can reach it); to let others in, bind another interface (``--host 0.0.0.0``) behind a
firewall or reverse proxy, or forward the port (``ssh -L 8765:127.0.0.1:8765 host``). The server answers
only the host names it was started for (this machine's, the bound address, and ``--allow-host`` names).
``add_server_arguments`` / ``app_options`` give a command line the access options (``--allow-host``,
``--annotators FILE``, ``--proxy-user-header``, ``--judge-pair``, ``--limit NAME=VALUE``) and the task sources
(``--reddit-dir``, ``--upvote-model``, ``--visdial-dir``, ``--visdial-answerer``); ``python -m creator_web.server``
takes them all (see docs/guides/browser_access.md and docs/guides/browser.md).
"""

from __future__ import annotations

import argparse
import socket
import threading
import time
from typing import Any, Iterable, Sequence

import uvicorn

from creator_web.app import create_app
from creator_web.guard import allowed_hosts_for
from creator_web.limits import Limits
from creator_web.tasks import TaskSources
from rlds_lang.paths import web_data_dir

EXPOSE_HINT = ("Serving on {url} (this machine only). To let other people in: forward the port "
               "(ssh -L {port}:127.0.0.1:{port} <this host>) or run with --host 0.0.0.0 behind a firewall / "
               "HTTPS reverse proxy.")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServerThread:
    """uvicorn serving ``create_app(data_dir, **app_options)`` in a daemon thread; ``start``/``stop`` (or ``with``).
    ``app_options`` are ``create_app``'s (e.g. ``human=`` a pipeline's ``HumanQueueLabeller``); the allowed hosts
    default to those of ``host`` (``allowed_hosts_for``)."""

    def __init__(self, data_dir: str, host: str = "127.0.0.1", port: int | None = None, **app_options: Any):
        self.host, self.port = host, port or free_port(host)
        app_options.setdefault("allowed_hosts", allowed_hosts_for(host))
        self.app = create_app(data_dir, **app_options)
        config = uvicorn.Config(self.app, host=self.host, port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="creator_web", daemon=True)

    @property
    def url(self) -> str:
        """The base URL."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> "ServerThread":
        """Starts serving; returns once the server accepts connections (``TimeoutError`` otherwise)."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise TimeoutError(f"creator_web did not start on {self.url} within {timeout} s")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stops serving and waits for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout)

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(data_dir: str, host: str = "127.0.0.1", port: int = 8765, allow_hosts: Iterable[str] = (),
          **app_options: Any) -> None:
    """Serves creator_web on ``host:port`` until interrupted, after saying how to expose it. It answers the hosts
    of ``allowed_hosts_for(host, allow_hosts)``; ``app_options`` are ``create_app``'s (e.g. ``annotators=``,
    ``proxy_header=``, ``judge_pair=``, ``human=`` the ``HumanQueueLabeller`` of a pipeline run in this process)."""
    app_options.setdefault("allowed_hosts", allowed_hosts_for(host, allow_hosts))
    print(EXPOSE_HINT.format(url=f"http://{host}:{port}", port=port), flush=True)
    uvicorn.run(create_app(data_dir, **app_options), host=host, port=port, log_level="info", proxy_headers=False)


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


def app_options(args: argparse.Namespace) -> dict[str, Any]:
    """``serve``'s keyword options from arguments added by ``add_server_arguments``."""
    sources = TaskSources(reddit_dir=args.reddit_dir, upvote_model=args.upvote_model, visdial_dir=args.visdial_dir,
                          visdial_answerer=args.visdial_answerer, visdial_version=args.visdial_version)
    return {"allow_hosts": args.allow_host, "annotators": args.annotators, "proxy_header": args.proxy_user_header,
            "judge_pair": args.judge_pair, "task_sources": sources, "limits": Limits.parse(args.limit)}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m creator_web.server --data-dir DIR [--host] [--port] [access options]``."""
    parser = argparse.ArgumentParser(description="Serves the creator_web browser tool.")
    add_data_dir_argument(parser)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: this machine only)")
    parser.add_argument("--port", type=int, default=8765)
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    serve(args.data_dir, args.host, args.port, **app_options(args))


__all__ = ["EXPOSE_HINT", "ServerThread", "add_data_dir_argument", "add_server_arguments", "app_options", "free_port",
           "main", "serve"]


if __name__ == "__main__":
    main()
