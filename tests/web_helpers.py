"""Helpers for creator_web tests: an HTTP client that sends each session's secret token, as the pages do."""

from __future__ import annotations

import re

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
