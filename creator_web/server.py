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
from creator_web.options import add_data_dir_argument, add_server_arguments
from creator_web.tasks import TaskSources

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
