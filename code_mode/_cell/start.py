"""How a cell gets its isolate and starts its program.

Starting is the one part of a cell's life that may wait for the engine (an isolate
to be built, a worker process to answer) and the one whose latency every short cell
pays. So it has two paths:

* :meth:`CellStart.now`, synchronously, under the session's registry lock, when the
  engine has a warm isolate ready: the start command is posted in the same step that
  admitted the cell, with no task switch in between;
* :meth:`CellStart.run`, in the cell's task, outside the lock, otherwise: it creates
  the isolate (a worker process that does not answer must not hold up the session)
  and then posts the start command.

Whoever called ``execute`` waits in :meth:`CellStart.wait` for either path's outcome.
A caller that gives up abandons the start; the isolate is then closed and the cell
never counts as admitted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import trio

from .._config import RuntimeConfig
from .._delegate import ExecuteRequest
from .._engine import EngineListener, Isolate, IsolateSource, IsolateUnavailable
from .._errors import RuntimeFailure
from .._tool_names import normalize_identifier
from .._types import CellId, ToolDefinition
from .one_shot import OneShot

#: A tool's identifier, computed once per name (every cell's start checks them all).
_identifier = functools.lru_cache(maxsize=4096)(normalize_identifier)


class CellStart:
    """The start of one cell's program (see the module's docstring).

    ``on_started`` is called with the isolate once its start command is on its way;
    from then on the isolate is the cell's. ``listener`` receives the isolate's
    events (the cell)."""

    def __init__(
        self,
        cell_id: CellId,
        request: ExecuteRequest,
        *,
        backend: IsolateSource,
        config: RuntimeConfig,
        listener: EngineListener,
        on_started: Callable[[Isolate], None],
        nursery: trio.Nursery | None = None,
    ) -> None:
        self._cell_id = cell_id
        self._request = request
        self._backend = backend
        self._config = config
        self._listener = listener
        self._on_started = on_started
        self._nursery = nursery  # where the isolate rebuilds itself (a replay)
        self._scope = trio.CancelScope()
        self._outcome: OneShot[RuntimeFailure | None] = OneShot(lambda _: self._scope.cancel())
        self._payload: list[dict[str, str]] | None = None  # the tools, once checked
        # An isolate whose start command failed in now(), and why: run() closes it.
        self._failed: tuple[Isolate, Exception] | None = None
        #: The program's tools by identifier (filled by the request's check).
        self.tools: dict[str, ToolDefinition] = {}
        #: Why the cell refuses its request (too large a source, an identifier
        #: collision): the cell then finishes with this error, without an isolate.
        self.error: str | None = None

    async def wait(self) -> None:
        """Wait until the program started. Raises ``RuntimeFailure`` when V8 cannot
        start an isolate. Cancellable: a caller that gives up abandons the start."""
        failure = await self._outcome.wait()
        if failure is not None:
            raise failure

    def now(self, stored_json: str) -> bool:
        """Start the program at once, synchronously, when the engine has a warm
        isolate ready. False when :meth:`run` must do it: no isolate ready, a request
        the cell refuses, or a start command that failed."""
        payload = self._check_request()
        if self.error is not None:
            return False
        isolate = self._new_isolate()
        try:
            if not isolate.take_ready():
                return False
        except Exception:
            return False  # run() tries again, and reports what fails there
        error = self._send(isolate, payload, stored_json)
        if error is not None:
            self._failed = (isolate, error)
            return False
        self._outcome.deliver(None)
        return True

    async def run(self, stored_json: str) -> bool:
        """Create the isolate and start the program, unless :meth:`now` did. False if
        the program never started: V8 failed, or :meth:`wait` was abandoned. True
        also for a request the cell refuses (:attr:`error`): the cell reports it."""
        if self._outcome.delivered:
            return True  # started by now()
        if self._failed is not None:
            return await self._close_failed(*self._failed)
        payload = self._check_request()
        isolate: Isolate | None = None
        failure: RuntimeFailure | None = None
        if self.error is None:
            isolate = self._new_isolate()
            with self._scope:
                try:
                    await isolate.create()
                except IsolateUnavailable as error:
                    failure = RuntimeFailure(str(error), self._cell_id)
        if failure is not None or self._outcome.abandoned:
            if isolate is not None:
                with trio.CancelScope(shield=True):
                    await isolate.close()
            if not self._outcome.abandoned:
                self._outcome.deliver(failure)
            return False
        if isolate is not None:
            problem = self._send(isolate, payload, stored_json)
            if problem is not None:
                return await self._close_failed(isolate, problem)
        self._outcome.deliver(None)
        return True

    def _send(
        self, isolate: Isolate, payload: list[dict[str, str]], stored_json: str
    ) -> Exception | None:
        """Post the start command; the error if that failed (the isolate is then the
        caller's to close)."""
        resume = self._request.resume
        try:
            if resume is None:
                isolate.start(
                    self._listener,
                    source=self._request.source,
                    tools=payload,
                    stored_json=stored_json,
                )
            else:
                not_idempotent = [i for i, tool in self.tools.items() if not tool.idempotent]
                isolate.resume(
                    self._listener,
                    source=self._request.source,
                    tools=payload,
                    resumption=resume,
                    not_idempotent=frozenset(not_idempotent),
                )
        except Exception as error:
            return error
        self._on_started(isolate)
        return None

    def _new_isolate(self) -> Isolate:
        mirror = self._request.journal_mirror
        return Isolate(self._backend, self._config, nursery=self._nursery, mirror=mirror)

    async def _close_failed(self, isolate: Isolate, error: Exception) -> bool:
        # Never leave an isolate behind for a cell that was not admitted.
        with trio.CancelScope(shield=True):
            await isolate.close()
        if not self._outcome.abandoned:
            self._outcome.fail(error)
        return False

    def _check_request(self) -> list[dict[str, str]]:
        """The tools as the start command lists them; sets :attr:`error` for a
        request the cell refuses. Checked once (:meth:`now`, then maybe :meth:`run`)."""
        if self._payload is None:
            self._payload = self._tools_to_start()
        return self._payload

    def _tools_to_start(self) -> list[dict[str, str]]:
        size = len(self._request.source.encode("utf-8", "surrogatepass"))
        if size > self._config.max_source_bytes:
            self.error = (
                f"exec source of {size} bytes exceeds the limit of "
                f"{self._config.max_source_bytes} bytes (RuntimeConfig.max_source_bytes)"
            )
            return []
        payload: list[dict[str, str]] = []
        for tool in self._request.enabled_tools:
            ident = _identifier(tool.name)
            other = self.tools.get(ident)
            if other is not None:
                self.error = (
                    f"code mode tool identifier collision: `{other.name}` and `{tool.name}` "
                    f"both normalize to `{ident}`"
                )
                return []
            self.tools[ident] = tool
            payload.append(
                {"ident": ident, "description": tool.description, "kind": tool.kind.value}
            )
        return payload
