"""The shared store: sessions, cells, journals, events and commands in Redis.

Several servers share one Redis (``redis://`` or ``rediss://``), so any of them can
answer any call. The client is coredis: natively async on anyio, hence on trio, with
structured concurrency (its connection pool is an ``async with``), cancellable
blocking reads, typed, and kept up (redis-py would need a thread per blocking read, a
thread that a cancel scope cannot stop). Each multi-step operation is one Lua script,
atomic in Redis: a claim of a dead server's cells has exactly one winner. Keys (all
under ``code-mode:``) expire ``session_ttl`` after their last use. One Redis server,
not a cluster: the scripts touch keys they compute.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final, cast

import coredis
import coredis.exceptions
import trio

from .handles import is_handle, new_handle
from .interface import (
    DEFAULT_HEARTBEAT_TTL,
    CellCommand,
    CellRecord,
    Delivered,
    Events,
    JournalEntry,
    JournalKind,
    StoreError,
    StoreUnavailable,
)
from .scripts import (
    APPEND_EVENT,
    APPEND_JOURNAL,
    CLAIM,
    DEAD,
    FINISH,
    SAVE,
    SEND,
    SET_CURSOR,
    TOUCH,
)
from .url import StoreConfig

__all__ = ["DEFAULT_OPERATION_TIMEOUT", "RedisStore", "open_redis_store"]

DEFAULT_OPERATION_TIMEOUT: Final = 5.0
"""Seconds one operation may take (a blocking read: this beyond its own timeout)
before the store is reported unavailable (default 5)."""

_PREFIX: Final = "code-mode:"
_MAX_EVENTS_READ: Final = 1024


class RedisStore:
    """A :class:`~.interface.Store` in Redis; made by :func:`open_redis_store`."""

    def __init__(
        self,
        client: coredis.Redis[str],
        config: StoreConfig,
        *,
        session_ttl: float | None,
        heartbeat_ttl: float,
        operation_timeout: float,
    ) -> None:
        self._client = client
        self._config = config
        self._ttl_ms = _ms(session_ttl) if session_ttl is not None else 0
        self._heartbeat_ms = _ms(heartbeat_ttl)
        self._timeout = operation_timeout
        self._scripts = {
            name: client.register_script(source)
            for name, source in {
                "touch": TOUCH,
                "save": SAVE,
                "finish": FINISH,
                "dead": DEAD,
                "claim": CLAIM,
                "journal": APPEND_JOURNAL,
                "event": APPEND_EVENT,
                "send": SEND,
                "cursor": SET_CURSOR,
            }.items()
        }

    @property
    def name(self) -> str:
        return self._config.display

    @property
    def heartbeat_ttl(self) -> float:
        return self._heartbeat_ms / 1000

    def __repr__(self) -> str:
        return f"RedisStore({self._config.display!r})"

    @contextmanager
    def _guard(self, extra: float = 0.0) -> Iterator[None]:
        """Turn the client's failures into :class:`StoreUnavailable` naming the store."""
        try:
            with trio.fail_after(self._timeout + extra):
                yield
        except trio.TooSlowError:
            raise StoreUnavailable(
                f"the store {self.name} did not answer within {self._timeout:g} s"
            ) from None
        except (coredis.exceptions.RedisError, OSError, TimeoutError) as error:
            raise _unavailable(self._config, error) from None

    async def _script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        with self._guard():
            return await self._scripts[name](keys=keys, args=args)

    # --- sessions
    async def new_session(self) -> str:
        handle = new_handle()
        with self._guard():
            await self._client.set(_key("s", handle), "1", px=self._ttl_ms or None)
        return handle

    async def touch_session(self, session: str) -> bool:
        if not is_handle(session):
            return False
        keys = [_key("s", session), _key("v", session)]
        return bool(await self._script("touch", keys, [self._ttl_ms]))

    async def load_values(self, session: str) -> dict[str, str] | None:
        if not await self.touch_session(session):
            return None
        with self._guard():
            return dict(await self._client.hgetall(_key("v", session)))

    async def save_values(self, session: str, changes: dict[str, str | None]) -> bool:
        if not is_handle(session):
            return False
        args: list[Any] = [self._ttl_ms]
        for key, value in changes.items():
            args += [key, "0" if value is None else "1", value or ""]
        keys = [_key("s", session), _key("v", session)]
        return bool(await self._script("save", keys, args))

    async def drop_session(self, session: str) -> None:
        if is_handle(session):
            with self._guard():
                await self._client.delete([_key("s", session), _key("v", session)])

    # --- the cell registry
    async def heartbeat(self, server: str) -> None:
        with self._guard():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(_key("srv", server), "1", px=self._heartbeat_ms)
                pipe.sadd(_SERVERS, [server])

    async def register_cell(self, session: str, server: str) -> str:
        handle = new_handle()
        with self._guard():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hset(_key("c", handle), {"session": session, "server": server})
                if self._ttl_ms:
                    pipe.pexpire(_key("c", handle), self._ttl_ms)
                pipe.sadd(_key("sc", server), [handle])
                pipe.sadd(_SERVERS, [server])
        return handle

    async def cell(self, cell: str) -> CellRecord | None:
        if not is_handle(cell):
            return None
        with self._guard():
            fields = await self._client.hgetall(_key("c", cell))
        if "session" not in fields:
            return None
        cursor = int(fields.get("cursor") or 0)
        return CellRecord(cell, fields["session"], fields.get("server") or None, cursor)

    async def set_cursor(self, cell: str, offset: int) -> bool:
        if not is_handle(cell):
            return False
        return bool(await self._script("cursor", [_key("c", cell)], [max(0, offset)]))

    async def finish_cell(self, cell: str) -> None:
        if is_handle(cell):
            await self._script("finish", [_key("c", cell)], [_PREFIX, cell])

    async def drop_cell(self, cell: str) -> None:
        if not is_handle(cell):
            return
        await self.finish_cell(cell)
        with self._guard():
            keys = [_key("c", cell), _key("j", cell), _key("e", cell)]
            await self._client.delete(keys)

    async def retire(self, server: str) -> None:
        with self._guard():
            await self._client.delete([_key("srv", server)])

    async def dead_servers(self) -> list[str]:
        return [str(name) for name in await self._script("dead", [], [_PREFIX])]

    async def claim_cells(self, dead: str, claimant: str) -> list[CellRecord]:
        if dead == claimant:
            return []
        flat = await self._script("claim", [], [_PREFIX, dead, claimant])
        return [CellRecord(flat[i], flat[i + 1], claimant) for i in range(0, len(flat), 2)]

    # --- journals
    async def append_journal(self, cell: str, entry: JournalEntry) -> int | None:
        if not is_handle(cell):
            return None
        keys = [_key("c", cell), _key("j", cell)]
        index = await self._script("journal", keys, [self._ttl_ms, f"{entry.kind}:{entry.data}"])
        return int(index) if index is not None else None

    async def read_journal(self, cell: str) -> list[JournalEntry] | None:
        if await self.cell(cell) is None:
            return None
        with self._guard():
            raw = await self._client.lrange(_key("j", cell), 0, -1)
        entries = []
        for item in raw:
            kind, _, data = item.partition(":")
            entries.append(JournalEntry(cast(JournalKind, kind), data))
        return entries

    # --- events: a stream whose entry ids are 0-1, 0-2...: offset i is id 0-(i+1)
    async def append_event(self, cell: str, event: str, *, final: bool = False) -> int | None:
        if not is_handle(cell):
            return None
        keys = [_key("c", cell), _key("e", cell)]
        offset = await self._script("event", keys, [self._ttl_ms, event])
        return int(offset) if offset is not None else None

    async def read_events(self, cell: str, offset: int, *, timeout: float = 0.0) -> Events | None:
        offset = max(0, offset)
        if await self.cell(cell) is None:
            return None
        block = _ms(timeout) if timeout > 0 else None
        with self._guard(extra=max(0.0, timeout)):
            read = await self._client.xread(
                {_key("e", cell): f"0-{offset}"}, count=_MAX_EVENTS_READ, block=block
            )
        found = read.get(_key("e", cell), ()) if read else ()
        entries = tuple(str(entry.field_values["e"]) for entry in found)
        if found:
            offset = int(str(found[-1].identifier).split("-")[1])
        return Events(entries, offset)

    # --- commands
    async def send_command(self, cell: str, command: CellCommand) -> bool:
        if not is_handle(cell):
            return False
        sent = await self._script("send", [_key("c", cell)], [_PREFIX, f"{command}:{cell}"])
        return bool(sent)

    async def receive_commands(self, server: str, *, timeout: float = 0.0) -> list[Delivered]:
        key = _key("q", server)
        with self._guard(extra=max(0.0, timeout)):
            raw: list[str] = []
            if timeout > 0:
                first = await self._client.blpop([key], timeout=timeout)
                if first is not None:
                    raw.append(first[1])
            raw += await self._client.lpop(key, count=_MAX_EVENTS_READ) or []
        delivered = []
        for item in raw:
            command, _, cell = item.partition(":")
            delivered.append(Delivered(cell, cast(CellCommand, command)))
        return delivered

    async def memory_usage(self, key: str) -> int:
        """Bytes Redis uses for one key (``MEMORY USAGE``), for the benchmark."""
        with self._guard():
            return int(await self._client.memory_usage(key) or 0)


_SERVERS: Final = f"{_PREFIX}servers"


def _key(kind: str, name: str) -> str:
    """The key of ``name`` (a handle, a server) of ``kind``: ``s`` session marker, ``v``
    its values, ``c`` cell record, ``j`` journal, ``e`` events, ``srv`` heartbeat, ``sc``
    a server's cells, ``q`` its command queue (the scripts build the same names)."""
    return f"{_PREFIX}{kind}:{name}"


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


def _unavailable(config: StoreConfig, error: BaseException) -> StoreUnavailable:
    """One line naming the store and what went wrong, never the password."""
    name = config.display
    if isinstance(error, coredis.exceptions.AuthenticationFailureError):
        return StoreUnavailable(f"the store {name} refused the credentials: wrong password")
    if isinstance(error, coredis.exceptions.AuthenticationRequiredError):
        return StoreUnavailable(f"the store {name} requires a password and the URL gives none")
    if isinstance(error, coredis.exceptions.AuthorizationError):
        return StoreUnavailable(f"the store {name} denied a command to this user (ACL): {error}")
    detail = str(error) or type(error).__name__
    if config.password:
        detail = detail.replace(config.password, "***")
    if isinstance(error, coredis.exceptions.ConnectionError | OSError | TimeoutError):
        return StoreUnavailable(f"the store {name} is unavailable: {detail}")
    return StoreUnavailable(f"the store {name} failed: {detail}")


@asynccontextmanager
async def open_redis_store(
    config: StoreConfig,
    *,
    session_ttl: float | None,
    heartbeat_ttl: float = DEFAULT_HEARTBEAT_TTL,
    operation_timeout: float = DEFAULT_OPERATION_TIMEOUT,
) -> AsyncIterator[RedisStore]:
    """A :class:`RedisStore` for the block, once Redis has answered a ``PING``: an
    unreachable store, or wrong credentials, raise :class:`StoreUnavailable` here, at
    start-up, rather than at the first call."""
    client: coredis.Redis[str] = coredis.Redis(
        host=config.host,
        port=config.port,
        db=config.db,
        username=config.username,
        password=config.password,
        ssl=config.scheme == "rediss",
        ssl_ca_certs=config.ca_certs,
        ssl_cert_reqs="required" if config.scheme == "rediss" else None,
        decode_responses=True,
        connect_timeout=operation_timeout,
        client_name="code-mode",
    )
    store = RedisStore(
        client,
        config,
        session_ttl=session_ttl,
        heartbeat_ttl=heartbeat_ttl,
        operation_timeout=operation_timeout,
    )
    try:
        async with client:
            with store._guard():
                await client.ping()
            yield store
    except BaseExceptionGroup as group:
        # The client's task group wraps whatever crosses it, the block's own exception
        # included: give that back as itself.
        leaves = _leaves(group)
        if len(leaves) != 1:
            raise
        leaf = leaves[0]
        if isinstance(leaf, coredis.exceptions.RedisError | OSError) and not isinstance(
            leaf, StoreError
        ):
            raise _unavailable(config, leaf) from None
        raise leaf from None


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found
