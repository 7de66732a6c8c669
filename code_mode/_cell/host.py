"""What a cell needs from its session (:class:`CellHost`), and how it bounds an error text."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from .._config import RuntimeConfig
from .._delegate import SessionRuntimeDelegate, describe_exception
from .._engine import IsolateSource
from .._types import JSON, CellId, Completed, NestedToolCall

logger = logging.getLogger("code_mode")

ERROR_TRUNCATED_SUFFIX = "\n[code mode error truncated]"

FinishedCallback = Callable[[CellId, Completed], Awaitable[None]]
"""Where a session that pushes sends the completion of a cell it handed back."""


class CellHost:
    """What a cell needs from its session (kept narrow on purpose)."""

    def __init__(
        self,
        *,
        nursery: trio.Nursery,
        delegate: SessionRuntimeDelegate,
        config: RuntimeConfig,
        backend: IsolateSource,
        commit_writes: Callable[[dict[str, str], dict[str, str]], str | None],
        close_cell: Callable[[CellId], Awaitable[None]],
        forget_cell: Callable[[CellId], None],
        on_finished: FinishedCallback | None = None,
    ) -> None:
        self.nursery = nursery
        self.delegate = delegate
        self.config = config
        self.backend = backend
        self.commit_writes = commit_writes
        self.close_cell = close_cell
        self.forget_cell = forget_cell
        self.on_finished = on_finished


class CellDelegate:
    """The delegate one cell calls back into (its request's or the session's), held
    until the cell is closed and then let go of (:meth:`release`): whatever still
    holds the closed cell (an isolate the engine keeps a while) keeps no host object
    alive through it."""

    __slots__ = ("_target",)

    def __init__(self, target: SessionRuntimeDelegate) -> None:
        self._target: SessionRuntimeDelegate | None = target

    @property
    def target(self) -> SessionRuntimeDelegate:
        if self._target is None:
            raise RuntimeError("the cell is closed: its delegate was let go of")
        return self._target

    async def invoke_tool(self, call: NestedToolCall) -> JSON:
        return await self.target.invoke_tool(call)

    async def notify(self, call_id: str, cell_id: CellId, text: str) -> None:
        await self.target.notify(call_id, cell_id, text)

    async def cell_closed(self, cell_id: CellId) -> None:
        await self.target.cell_closed(cell_id)

    def release(self) -> None:
        self._target = None


def truncate_error(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes (on a character boundary), marked as cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + ERROR_TRUNCATED_SUFFIX


async def push_result(host: CellHost, cell_id: CellId, completion: Completed) -> None:
    """Hand a pushed completion to the host. Not shielded: only a session block left
    by an exception (whose cancellation reaches here) cuts it short, while a shutdown
    lets it finish. A failure is logged, like a notification's."""
    assert host.on_finished is not None
    try:
        await host.on_finished(cell_id, completion)
    except Exception as error:
        logger.warning(
            "failed to push the result of code mode cell %s: %s",
            cell_id,
            describe_exception(error),
        )
