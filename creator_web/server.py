"""Running the creator_web server: ``rlds-lang web``, and a uvicorn server in a thread for tests and benches.

``rlds-lang web --data-dir DIR [--host 127.0.0.1] [--port 8765]`` serves the tool on localhost (only
this machine can reach it); to let others in, bind another interface (``--host 0.0.0.0``) behind a
firewall or reverse proxy, or forward the port (``ssh -L 8765:127.0.0.1:8765 host``).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from creator_web.app import create_app

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
    ``app_options`` are ``create_app``'s (e.g. ``human=`` a pipeline's ``HumanQueueLabeller``)."""

    def __init__(self, data_dir: str, host: str = "127.0.0.1", port: int | None = None, **app_options: Any):
        self.host, self.port = host, port or free_port(host)
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


def serve(data_dir: str, host: str = "127.0.0.1", port: int = 8765, **app_options: Any) -> None:
    """Serves creator_web on ``host:port`` until interrupted, after saying how to expose it (``app_options``:
    ``create_app``'s, e.g. ``human=`` the ``HumanQueueLabeller`` of a preference pipeline run in this process)."""
    print(EXPOSE_HINT.format(url=f"http://{host}:{port}", port=port), flush=True)
    uvicorn.run(create_app(data_dir, **app_options), host=host, port=port, log_level="info")


__all__ = ["EXPOSE_HINT", "ServerThread", "free_port", "serve"]
