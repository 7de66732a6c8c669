"""What a cell needs from its session (:class:`CellHost`), and how it bounds an error text."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from .._config import RuntimeConfig
from .._delegate import SessionRuntimeDelegate, describe_exception
from .._engine import IsolateSource
from .._types import CellId, Completed

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
        commit_writes: Callable[[dict[str, str]], str | None],
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
