"""Who may use creator_web: signing in as an annotator, and the secret token of each session.

A session has two values: its public id (``session_id``: shown on pages, part of episode ids and folder names)
and a secret token, given once to the browser that opened it and sent back in the ``X-Session-Token`` header
with every request that reads data or acts in the session. The data folder keeps only the token's SHA-256
(so a restarted server still knows it, and the folder never holds the secret).

Signing in (``SignIn``), one of:

- ``open``: anyone who reaches the server names themselves (the default; the server answers only the hosts it
  was started for, see ``creator_web.guard``);
- ``annotators``: a file lists each annotator with a secret of their own; opening a session needs both;
- ``proxy``: a trusted reverse proxy authenticates people and names them in a header (e.g. ``X-Remote-User``);
  every request must carry it, and a session answers only to the person who opened it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import re
import secrets
from typing import Mapping

TOKEN_HEADER = "X-Session-Token"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: the shortest per-annotator secret accepted from an annotators file.
MIN_SECRET = 12


class AccessError(Exception):
    """A request refused by the sign-in rules: ``status`` (401/403) and a message naming the field."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def new_token() -> str:
    """A fresh session token (256 random bits, hex)."""
    return secrets.token_hex(32)


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of a token: what the data folder stores."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def load_annotators(path: str | os.PathLike) -> dict[str, str]:
    """Annotator -> secret from a file of lines ``name secret`` (``#`` comments and blank lines ignored; a secret
    written ``sha256:<hex>`` is compared by its hash). Errors name the file and line."""
    found: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            where = f"{os.fspath(path)}, line {number}"
            if len(parts) != 2:
                raise ValueError(f"{where}: expected 'name secret', got {len(parts)} fields")
            name, secret = parts
            if not NAME.match(name):
                raise ValueError(f"{where}: annotator name {name[:70]!r} is not letters, digits, _ . - (max 64)")
            if name in found:
                raise ValueError(f"{where}: annotator {name!r} is listed twice")
            if not secret.startswith("sha256:") and len(secret) < MIN_SECRET:
                raise ValueError(f"{where}: the secret of {name!r} is shorter than {MIN_SECRET} characters")
            if secret.startswith("sha256:") and not re.fullmatch(r"sha256:[0-9a-f]{64}", secret):
                raise ValueError(f"{where}: the secret of {name!r} is not sha256: and 64 hex digits")
            found[name] = secret
    if not found:
        raise ValueError(f"{os.fspath(path)}: no annotator listed")
    return found


def _secret_matches(expected: str, given: str) -> bool:
    if expected.startswith("sha256:"):
        return hmac.compare_digest(expected[7:], hashlib.sha256(given.encode("utf-8", "replace")).hexdigest())
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8", "replace"))


@dataclasses.dataclass(frozen=True)
class SignIn:
    """How people sign in (see the module docstring): ``annotators`` (name -> secret) or ``proxy_header``, or
    neither (open)."""

    annotators: Mapping[str, str] | None = None
    proxy_header: str | None = None

    def __post_init__(self) -> None:
        if self.annotators is not None and self.proxy_header:
            raise ValueError("sign-in: give an annotators file or a proxy header, not both")

    @property
    def mode(self) -> str:
        """``open``, ``annotators`` or ``proxy``."""
        return "proxy" if self.proxy_header else "annotators" if self.annotators is not None else "open"

    def proxy_user(self, headers: Mapping[str, str]) -> str | None:
        """The person the proxy names in ``headers`` (``None`` when not in proxy mode); ``AccessError`` if the
        header is missing or not a valid name."""
        if not self.proxy_header:
            return None
        user = headers.get(self.proxy_header.lower())
        if not user:
            raise AccessError(401, f"{self.proxy_header}: missing (this server is reached through a signing-in "
                                   "proxy)")
        if not NAME.match(user):
            raise AccessError(403, f"{self.proxy_header}: {user[:70]!r} is not letters, digits, _ . - (max 64)")
        return user

    def annotator(self, claimed: str | None, secret: str | None, headers: Mapping[str, str]) -> str:
        """The annotator a new session is opened for, from the body's ``annotator``/``secret`` and the headers;
        ``AccessError`` naming the field when refused."""
        user = self.proxy_user(headers)
        if user is not None:
            if claimed and claimed != user:
                raise AccessError(403, f"annotator: {claimed!r} is not the signed-in user {user!r}")
            return user
        if not claimed:
            raise AccessError(422, "annotator: required")
        if self.annotators is not None:
            expected = self.annotators.get(claimed)
            if expected is None or not secret or not _secret_matches(expected, secret):
                raise AccessError(403, "secret: wrong annotator or secret")
        return claimed

    def check(self, annotator: str, headers: Mapping[str, str]) -> None:
        """In proxy mode, refuses (403) a request on a session opened by someone else than the proxy names."""
        user = self.proxy_user(headers)
        if user is not None and user != annotator:
            raise AccessError(403, f"{self.proxy_header}: {user!r} did not open this session")


__all__ = ["AccessError", "MIN_SECRET", "NAME", "SignIn", "TOKEN_HEADER", "load_annotators", "new_token",
           "token_hash"]
