"""The store's URL: ``memory://`` (the default) or Redis, parsed into a `StoreConfig`.

``code-mode mcp serve --store URL`` takes ``memory://``, ``redis://[[user]:password@]
host[:port][/db]`` or ``rediss://...`` (TLS; ``?ca_certs=PATH`` names a private CA's
certificates). The password may be in the URL, so a :class:`StoreConfig` never shows
it: its ``repr``, its ``str`` and :attr:`StoreConfig.display` (what every message and
log line names the store by) have ``***`` in its place.
"""

from __future__ import annotations

from typing import Final, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import attrs

from .interface import StoreConfigError

__all__ = ["DEFAULT_STORE_URL", "StoreConfig", "parse_store_url"]

DEFAULT_STORE_URL: Final = "memory://"
"""The embedded store: in this process's memory, today's behaviour."""

_DEFAULT_REDIS_PORT: Final = 6379
_MAX_DB: Final = 15  # Redis' default `databases 16`


@attrs.frozen(kw_only=True)
class StoreConfig:
    """Where the store is, parsed from its URL. The password is kept out of
    ``repr``, ``str`` and :attr:`display`."""

    scheme: Literal["memory", "redis", "rediss"]
    host: str = ""
    port: int = _DEFAULT_REDIS_PORT
    db: int = 0
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    ca_certs: str | None = None

    @property
    def display(self) -> str:
        """The URL, with ``***`` for the password: what messages name the store by."""
        if self.scheme == "memory":
            return DEFAULT_STORE_URL
        user = self.username or ""
        secret = ":***" if self.password is not None else ""
        credentials = f"{user}{secret}@" if user or secret else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{credentials}{host}:{self.port}/{self.db}"

    def __str__(self) -> str:
        return self.display


def parse_store_url(url: str) -> StoreConfig:
    """``url`` -> :class:`StoreConfig`; raises :class:`StoreConfigError` saying, in one
    line and without the password, what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise StoreConfigError(f"not a store URL ({_redacted(url)}): {error}") from None
    scheme = parts.scheme.lower()
    if scheme == "memory":
        if parts.netloc or parts.path or parts.query or parts.fragment:
            raise StoreConfigError("memory:// takes nothing after it")
        return StoreConfig(scheme="memory")
    if scheme not in ("redis", "rediss"):
        shown = f"{scheme}://" if scheme else repr(_redacted(url))
        raise StoreConfigError(
            f"unknown store {shown}: expected memory://, redis://[:password@]host:port/db "
            "or rediss:// (TLS)"
        )
    if not parts.hostname:
        raise StoreConfigError(f"{scheme}:// needs a host, e.g. {scheme}://127.0.0.1:6379/0")
    if parts.fragment:
        raise StoreConfigError(f"{scheme}:// takes no #fragment")
    path = parts.path.strip("/")
    if path and not (path.isdigit() and int(path) <= _MAX_DB):
        raise StoreConfigError(
            f"the database must be a number from 0 to {_MAX_DB} (/0 by default), got /{path}"
        )
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
    unknown = sorted(set(query) - {"ca_certs"})
    if unknown:
        raise StoreConfigError(f"unknown parameter {unknown[0]!r} (only ca_certs=PATH is known)")
    ca_certs = query.get("ca_certs", [None])[-1]
    if ca_certs is not None and scheme != "rediss":
        raise StoreConfigError("ca_certs= is for rediss:// (TLS) only")
    return StoreConfig(
        scheme="rediss" if scheme == "rediss" else "redis",
        host=parts.hostname,
        port=port if port is not None else _DEFAULT_REDIS_PORT,
        db=int(path) if path else 0,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        ca_certs=ca_certs or None,
    )


def _redacted(url: str) -> str:
    """``url`` with anything between ``://`` and the last ``@`` replaced by ``***``."""
    head, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{head}://***@{rest.rsplit('@', 1)[1]}"
    return url
