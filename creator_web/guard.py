"""The HTTP guard in front of creator_web: which hosts and origins it answers, how big a body may be, and the
headers every answer carries.

``Guard`` is a plain ASGI middleware (so it also sees bodies sent in chunks):

- **Host allow-list**: a request whose ``Host`` header names a host the server was not started for is refused
  (400, before any route runs). A page at ``http://evil.example:PORT`` whose name resolves to 127.0.0.1 (DNS
  rebinding) sends ``Host: evil.example:PORT`` and so never reaches the data.
- **Cross-origin writes**: a request other than GET/HEAD/OPTIONS whose ``Origin`` is not the server's own
  (host and port of the ``Host`` it was sent to, the scheme's default port implied; a page on another port of
  this machine is another origin; the scheme itself is not compared, as a TLS-terminating proxy forwards plain
  HTTP) or, without ``Origin``, whose ``Sec-Fetch-Site`` is ``cross-site``, is refused (403).
- **Body size**: a body longer than ``max_body`` bytes is refused (413), whether or not it declares its length.
- **Headers**: every answer says ``X-Frame-Options: DENY``, a ``Content-Security-Policy`` that allows only the
  tool's own scripts, styles and connections (no inline script, no framing), ``nosniff`` and ``no-referrer``;
  API answers are not cached.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import urlsplit

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: hosts every server answers to: this machine's own names.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
#: the largest request body accepted by default (bytes).
MAX_BODY = 1 << 20
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [(b"x-frame-options", b"DENY"), (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters (ASCII-safe), for echoing a client's value in an error."""
    text = ascii(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def host_name(host: str) -> str:
    """The host of a ``Host`` header value without its port, lower-cased (``[::1]:80`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts_for(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The hosts a server bound to ``bind_host`` answers to: this machine's names, the bound address unless it is
    a wildcard (``0.0.0.0``/``::``), and ``extra`` (e.g. the name a reverse proxy forwards)."""
    hosts = set(LOCAL_HOSTS) | {host_name(h) for h in extra if h.strip()}
    if bind_host not in ("0.0.0.0", "::", ""):
        hosts.add(host_name(bind_host) if not bind_host.count(":") > 1 else bind_host.lower())
    return frozenset(hosts)


class Guard:
    """ASGI middleware applying the host allow-list, the cross-origin rule, the body limit and the headers."""

    def __init__(self, app: Callable[..., Awaitable[None]], allowed_hosts: Iterable[str],
                 max_body: int = MAX_BODY):
        self.app = app
        self.allowed_hosts = frozenset(host_name(h) if h.count(":") <= 1 else h.lower() for h in allowed_hosts)
        self.max_body = int(max_body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self.refusal(scope["method"], headers)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            await _answer(send, 413, f"request body: {declared} bytes, more than the limit of {self.max_body}")
            return
        api = scope["path"].startswith("/api/")

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = SECURITY_HEADERS + ([(b"cache-control", b"no-store")] if api else [])
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        if scope["method"] in _SAFE_METHODS:
            await self.app(scope, receive, send_with_headers)
            return
        body = await self._read_body(receive)
        if body is None:
            await _answer(send, 413, f"request body: more than the limit of {self.max_body} bytes")
            return
        await self.app(scope, _replay(body, receive), send_with_headers)

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body (``None`` once it passes ``max_body``: the rest is not read)."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, message) refusing a request with these headers, or ``None`` to let it through."""
        host = headers.get("host", "")
        if host_name(host) not in self.allowed_hosts:
            return 400, (f"Host: {shown(host)} is not a host this server was started for (allowed: "
                         f"{', '.join(sorted(self.allowed_hosts))}); start it with the name you use")
        if method in _SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and (_origin_host(origin) is None or
                                   _origin_host(origin) != _origin_host(host, urlsplit(origin).scheme)):
            return 403, f"Origin: {shown(origin)} may not write here (cross-origin request refused)"
        elif headers.get("sec-fetch-site") == "cross-site":
            return 403, "Sec-Fetch-Site: cross-site requests may not write here"
        return None


def _origin_host(value: str, scheme: str | None = None) -> str | None:
    """``host[:port]`` of an ``Origin`` (or, with its ``scheme``, of a ``Host`` header), lower-cased and without
    the scheme's default port; ``None`` for an origin that is not http(s) (``null``, ``file://``)."""
    if scheme is None:
        parts = urlsplit(value)
        scheme, value = parts.scheme, parts.netloc
    if scheme not in ("http", "https") or not value:
        return None
    value = value.lower()
    default = ":80" if scheme == "http" else ":443"
    return value[:-len(default)] if value.endswith(default) else value


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` in one message, then defers to ``receive`` (for the disconnect)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


__all__ = ["CSP", "Guard", "LOCAL_HOSTS", "MAX_BODY", "SECURITY_HEADERS", "allowed_hosts_for",
           "host_name", "shown"]
