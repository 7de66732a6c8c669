"""The store's URL: ``memory://`` (the default), SQLite or Redis, parsed into a `StoreConfig`.

``code-mode mcp serve --store URL`` takes ``memory://``, ``sqlite:///ABSOLUTE/PATH``
or ``sqlite://RELATIVE/PATH`` (a file shared by the servers of one machine;
``?max_cell_bytes=N&max_bytes=N`` bound it), ``redis://[[user]:password@]
host[:port][/db]`` or ``rediss://...`` (TLS; ``?ca_certs=PATH`` names a private CA's
certificates). The password may be in the URL, so a :class:`StoreConfig` never shows
it: its ``repr``, its ``str`` and :attr:`StoreConfig.display` (what every message and
log line names the store by) have ``***`` in its place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal
from urllib.parse import SplitResult, parse_qs, quote, unquote, urlsplit

import attrs

from .interface import StoreConfigError

__all__ = [
    "DEFAULT_STORE_URL",
    "StoreConfig",
    "default_sqlite_path",
    "default_store",
    "parse_store_url",
]

DEFAULT_STORE_URL: Final = "memory://"
"""The embedded store in this process's memory: what ``CodeModeMcpServer(store=None)``
uses, and ``--store memory://`` (nothing on disk). ``code-mode mcp serve`` without
``--store`` uses :func:`default_store` instead."""

_DEFAULT_REDIS_PORT: Final = 6379
_MAX_DB: Final = 15  # Redis' default `databases 16`
_SQLITE_LIMITS: Final = ("max_cell_bytes", "max_bytes")


def default_sqlite_path(environ: Mapping[str, str] = os.environ) -> Path:
    """Where a SQLite store's file lives when the operator names none (``code-mode mcp
    serve`` without ``--store``, :func:`default_store`):
    ``$XDG_STATE_HOME/code-mode/store.db``, or, with that unset or not absolute (the
    XDG base directory specification ignores a relative one),
    ``~/.local/state/code-mode/store.db``. State, not cache: it holds stored values and
    running programs' journals, which must survive a restart; per user, as the server
    runs as its user. The store creates the folder (owner only) when it opens."""
    state = environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        home = environ.get("HOME") or os.path.expanduser("~")
        state = os.path.join(home, ".local", "state")
    return Path(state, "code-mode", "store.db")


def default_store(environ: Mapping[str, str] = os.environ) -> StoreConfig:
    """The store of ``code-mode mcp serve`` without ``--store``: the SQLite file at
    :func:`default_sqlite_path`. On disk by default, because the clients most agent
    frameworks ship open a new MCP session, or start a new server process, for each
    tool call: a cell or a stored value kept only in the process that made it would be
    gone by the next call."""
    return StoreConfig(scheme="sqlite", path=str(default_sqlite_path(environ)))


@attrs.frozen(kw_only=True)
class StoreConfig:
    """Where the store is, parsed from its URL. The password is kept out of
    ``repr``, ``str`` and :attr:`display`."""

    scheme: Literal["memory", "sqlite", "redis", "rediss"]
    path: str = ""  # sqlite: the file, absolute
    max_cell_bytes: int | None = None  # sqlite: bound of a cell's journal, and of its events
    max_bytes: int | None = None  # sqlite: bound of the whole file
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
        if self.scheme == "sqlite":
            return f"sqlite://{quote(self.path)}"
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
        scheme = parts.scheme.lower()
        port = parts.port if scheme != "sqlite" else None  # (a path, not a host)
    except ValueError as error:
        raise StoreConfigError(f"not a store URL ({_redacted(url)}): {error}") from None
    if scheme == "memory":
        if parts.netloc or parts.path or parts.query or parts.fragment:
            raise StoreConfigError("memory:// takes nothing after it")
        return StoreConfig(scheme="memory")
    if scheme == "sqlite":
        return _sqlite(url, parts)
    if scheme not in ("redis", "rediss"):
        shown = f"{scheme}://" if scheme else repr(_redacted(url))
        raise StoreConfigError(
            f"unknown store {shown}: expected memory://, sqlite:///path/to/file.db, "
            "redis://[:password@]host:port/db or rediss:// (TLS)"
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


def _sqlite(url: str, parts: SplitResult) -> StoreConfig:
    """``sqlite:///ABSOLUTE/PATH`` (a file URL's path) or ``sqlite://RELATIVE/PATH``
    (resolved against the current folder now, so the config names one file whatever
    the server's folder later)."""
    example = "e.g. sqlite:///var/lib/code-mode/store.db or sqlite://store.db"
    if not url.partition(":")[2].startswith("//"):
        raise StoreConfigError(f"sqlite:// takes a file's path after //, {example}")
    if parts.fragment or "@" in parts.netloc or ":" in parts.netloc:
        raise StoreConfigError(f"sqlite:// takes a file's path, not a host or #fragment: {example}")
    written = unquote(parts.netloc + parts.path)
    if not written or written.endswith("/") or written == ":memory:":
        raise StoreConfigError(f"sqlite:// needs a file's path, {example}")
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
    limits: dict[str, int] = {}
    for name, values in query.items():
        if name not in _SQLITE_LIMITS:
            known = " and ".join(f"{each}=N" for each in _SQLITE_LIMITS)
            raise StoreConfigError(f"unknown parameter {name!r} (only {known} are known)")
        if not (values[-1].isdigit() and int(values[-1]) > 0):
            raise StoreConfigError(f"{name}= takes a number of bytes, got {values[-1]!r}")
        limits[name] = int(values[-1])
    return StoreConfig(
        scheme="sqlite",
        path=os.path.abspath(written),
        max_cell_bytes=limits.get("max_cell_bytes"),
        max_bytes=limits.get("max_bytes"),
    )


def _redacted(url: str) -> str:
    """``url`` with anything between ``://`` and the last ``@`` replaced by ``***``."""
    head, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{head}://***@{rest.rsplit('@', 1)[1]}"
    return url
