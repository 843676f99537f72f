"""Helpers for creator_web tests: an HTTP client that sends each session's secret token, as the pages do, and a
gate that holds the server's answers back (``create_app``'s test-only ``hold``)."""

from __future__ import annotations

import collections
import re
import threading

import httpx

#: the base URL of in-process test clients: a host the server answers to (``testserver`` is not one).
LOCAL = "http://127.0.0.1"
_SESSION_PATH = re.compile(r"^/api/sessions/([0-9a-f]{32})/")


def send_tokens(client: httpx.Client, tokens: dict[str, str] | None = None) -> httpx.Client:
    """Makes ``client`` remember the token of every session it opens and send it (``X-Session-Token``) on requests
    under that session's path; other requests (data reads) carry the token of the session opened last. A request
    that sets the header itself keeps it. ``tokens`` (session id -> token) may be shared between clients, e.g.
    to carry on a session after a restart."""
    tokens = {} if tokens is None else tokens

    def remember(response: httpx.Response) -> None:
        if response.request.method == "POST" and response.request.url.path == "/api/sessions" \
                and response.status_code == 200:
            response.read()
            body = response.json()
            tokens[body["session_id"]] = body["token"]
            tokens["last"] = body["token"]

    def sign(request: httpx.Request) -> None:
        if "x-session-token" in request.headers:
            return
        match = _SESSION_PATH.match(request.url.path)
        token = tokens.get(match.group(1)) if match else tokens.get("last")
        if token:
            request.headers["X-Session-Token"] = token

    client.event_hooks = {"request": [*client.event_hooks["request"], sign],
                          "response": [*client.event_hooks["response"], remember]}
    return client


class Gate:
    """``create_app(hold=gate)``: ``close(name)`` makes requests of that action (``act``, ``annotate``, ...) wait in
    the server until ``open()`` (at most ``limit`` seconds, so no server thread outlives a failed test);
    ``wait_arrived(name, n)`` returns once ``n`` of them reached the server since it was closed."""

    def __init__(self, limit: float = 30.0):
        self.limit = limit
        self._closed: set[str] = set()
        self._arrived: collections.Counter[str] = collections.Counter()
        self._changed = threading.Condition()

    def __call__(self, name: str) -> None:
        with self._changed:
            self._arrived[name] += 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: name not in self._closed, timeout=self.limit)

    def close(self, *names: str) -> None:
        """Holds the next requests of ``names`` (and counts their arrivals from zero)."""
        with self._changed:
            self._closed.update(names)
            for name in names:
                self._arrived[name] = 0

    def open(self) -> None:
        """Lets every held request go on."""
        with self._changed:
            self._closed.clear()
            self._changed.notify_all()

    def arrived(self, name: str) -> int:
        """How many requests of ``name`` reached the server since it was last closed."""
        with self._changed:
            return self._arrived[name]

    def wait_arrived(self, name: str, count: int = 1, timeout: float = 30.0) -> None:
        """Waits until ``count`` requests of ``name`` reached the server (``AssertionError`` after ``timeout``)."""
        with self._changed:
            assert self._changed.wait_for(lambda: self._arrived[name] >= count, timeout=timeout), \
                f"{count} {name!r} request(s) did not reach the server within {timeout} s"
