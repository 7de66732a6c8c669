"""A cell's in-flight callbacks: its tool calls and notifications.

Callbacks run as tasks of the *session* nursery, not of the cell's task, and the cell
cancels them when it ends. Why the session nursery? A delegate that ignores
cancellation must not hold the cell past ``callback_grace``: the cell abandons such a
callback (its outcome is dropped) and closes, and the callback can only hold the
session block open, which structured concurrency demands anyway.

A tool call is one task: the program awaits each result, and a ``PendingFrontier``
lists the outstanding calls in call order. The tool calls of a cell are children of
one nursery inside one cancel scope, both held by a *runner* task of the session
nursery, started with the cell's first tool call and ended with the cell (or its
cancellation of the callbacks): entering and leaving a cancel scope per call cost
about a tenth of the trio thread's time in a loop of sequential calls. Notifications
wait in a queue served by at most :data:`NOTIFY_CONCURRENCY` tasks, each in a cancel
scope of its own, handing the delegate one notification after another, so a burst
costs a few tasks rather than one per notification. A delegate that falls
``max_pending_notifications`` behind breaks the cell's limit: waiting for it would
hold the cell open for as long as it lags.

What they hold on the host is bounded in bytes, as the Python objects they are (not
as their JSON text, which an input of empty objects outgrows fifty times): the inputs
of the tool calls in flight by ``max_tool_input_bytes`` (each counted by the bridge as
it decoded it, see ``_engine/_decode.py``), the notifications waiting or with the
delegate by ``max_notification_bytes``. A call or notification that would go over ends
the cell, as a count limit does.

The cell stays the state machine and this module never imports it: the cell passes
what callbacks need (where a tool's outcome goes, how to wake the cell task) and reads
back what is in flight. Starting a tool call costs one task and no checkpoint (the
first one of a cell also starts the runner, and runs one scheduler pass later).
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from .._config import RuntimeConfig
from .._delegate import SessionRuntimeDelegate, describe_exception
from .._engine import (
    INLINE_BATCH_CHARS,
    ToolCallRequested,
    dumps,
    in_slices,
    json_depth_exceeds,
    text_depth_steps,
)
from .._types import CellId, NestedToolCall, ToolDefinition
from .stepping import ResultSink

logger = logging.getLogger("code_mode")

#: Notifications of one cell with the delegate at once; later ones wait their turn.
NOTIFY_CONCURRENCY = 16


class CellCallbacks:
    """The tool calls and notifications of one cell that have not finished yet.

    The cell starts them from its engine events (:meth:`start_tool_call`,
    :meth:`start_notification`: a limit they would break comes back as the message
    the cell breaches with) and ends them with :meth:`cancel`.
    """

    __slots__ = (
        "_call_id",
        "_callbacks_changed",
        "_cell_id",
        "_config",
        "_delegate",
        "_notify_bytes",
        "_notify_queue",
        "_notify_scopes",
        "_notifying",
        "_nursery",
        "_results_to",
        "_tool_backlog",
        "_tool_calls",
        "_tool_input_bytes",
        "_tool_nursery",
        "_tool_scope",
        "_tools_closed",
        "_wake_cell",
        "overflowed",
    )

    def __init__(
        self,
        *,
        cell_id: CellId,
        call_id: str,
        nursery: trio.Nursery,
        delegate: SessionRuntimeDelegate,
        config: RuntimeConfig,
        results_to: Callable[[], ResultSink | None],
        wake_cell: Callable[[], None],
    ) -> None:
        """``call_id`` is the ``exec`` call the notifications belong to.
        ``results_to`` says where a finished tool call's outcome goes now: the
        isolate (or, for a cell held at its frontier, the hold of ``stepping.py``), or
        ``None`` when the program no longer takes results (the outcome is
        then dropped). ``wake_cell`` wakes the cell task, which waits for its
        notifications to finish before it completes."""
        self._cell_id = cell_id
        self._call_id = call_id
        self._nursery = nursery
        self._delegate = delegate
        self._config = config
        self._results_to = results_to
        self._wake_cell = wake_cell
        # The outstanding ids, in call order, and what each one's input holds.
        self._tool_calls: dict[str, int] = {}
        self._tool_input_bytes = 0  # their sum
        # The runner's (see _run_tools): None until it runs, and again once it ended.
        self._tool_scope: trio.CancelScope | None = None
        self._tool_nursery: trio.Nursery | None = None
        self._tool_backlog: list[NestedToolCall] = []  # for the runner to start
        self._tools_closed = False  # the cell cancelled its tool calls, or ended
        self._notify_scopes: set[trio.CancelScope] = set()  # delivering tasks
        self._notify_queue: deque[str] = deque()  # notifications waiting for one
        self._notifying = 0  # notifications with the delegate now
        self._notify_bytes = 0  # what the texts of both hold
        # Set when a callback finishes, for cancel() (the only one waiting for that);
        # None while nobody waits, so a finishing tool call creates no Event.
        self._callbacks_changed: trio.Event | None = None
        #: A ``max_pending_notifications`` breach: the cell cancels its notifications.
        self.overflowed = False

    @property
    def in_flight(self) -> bool:
        """Whether any tool call or notification has not finished yet."""
        return bool(self._tool_calls or self._notify_scopes)

    @property
    def notifying(self) -> bool:
        """Whether notifications are still being delivered (a completing cell lets
        them finish)."""
        return bool(self._notify_scopes)

    def pending_tool_call_ids(self) -> list[str]:
        """The outstanding tool calls' ids, in call order (a frontier's list)."""
        return list(self._tool_calls)

    def _finished(self) -> None:
        # Not a reason to wake the cell task: of the callbacks, it only ever waits for
        # notifications to finish (_deliver_notifications wakes it). Waking it after
        # every tool call cost a task switch per call.
        changed = self._callbacks_changed
        if changed is not None:
            self._callbacks_changed = None
            changed.set()

    # ------------------------------------------------------------------------------
    # Tool calls

    def start_tool_call(self, tool: ToolDefinition, event: ToolCallRequested) -> str | None:
        """Start the program's call of ``tool``; the limit it breaks, if any."""
        if len(self._tool_calls) >= self._config.max_outstanding_tool_calls:
            return (
                f"exec cell exceeded its limit of {self._config.max_outstanding_tool_calls} "
                "outstanding tool calls (RuntimeConfig.max_outstanding_tool_calls)"
            )
        budget = self._config.max_tool_input_bytes
        if self._tool_input_bytes + event.host_bytes > budget:
            return (
                f"exec cell exceeded its limit of {budget} bytes of tool inputs in flight "
                "(RuntimeConfig.max_tool_input_bytes)"
            )
        call = NestedToolCall(
            cell_id=self._cell_id,
            runtime_tool_call_id=event.id,
            tool_name=tool.tool_name,
            tool_kind=tool.kind,
            input=event.input if event.has_input else None,
        )
        self._tool_calls[event.id] = event.host_bytes
        self._tool_input_bytes += event.host_bytes
        nursery = self._tool_nursery
        if nursery is not None:
            nursery.start_soon(self._run_tool_call, call)
            return None
        self._tool_backlog.append(call)
        if len(self._tool_backlog) == 1:
            self._nursery.start_soon(self._run_tools)
        return None

    async def _run_tools(self) -> None:
        """The runner: holds the nursery and the cancel scope of the cell's tool calls
        until the cell cancels them or ends, then until the last one has finished (or
        forever, for one that ignores cancellation: the cell no longer waits for it)."""
        scope = self._tool_scope = trio.CancelScope()
        if self._tools_closed:
            # Cancelled before the runner ran: its calls still start (the delegate sees
            # each call and its cancellation, as it would have a moment later).
            scope.cancel()
        try:
            with scope:
                async with trio.open_nursery() as nursery:
                    self._tool_nursery = nursery
                    backlog, self._tool_backlog = self._tool_backlog, []
                    for call in backlog:
                        nursery.start_soon(self._run_tool_call, call)
                    await trio.sleep_forever()
        finally:
            # No checkpoint since the nursery closed: nothing was started in it since.
            self._tool_nursery = None
            self._tool_scope = None

    async def _run_tool_call(self, call: NestedToolCall) -> None:
        ok = False
        value: Any = None
        message = ""
        try:
            try:
                value = await self._delegate.invoke_tool(call)
                ok = True
            except Exception as error:
                # An exception without a message still says what it was.
                message = describe_exception(error)
        finally:
            # Cancelled (the runner's scope) goes on to the runner: no outcome to send.
            self._tool_input_bytes -= self._tool_calls.pop(call.runtime_tool_call_id, 0)
            self._finished()
        value_json = ""
        if ok:
            # (A large result is checked in slices: where the outcome goes is asked
            # only after, once, since asking counts as the frontier moving.)
            value_json, problem = await self._encode_tool_result(value)
            if problem is not None:
                ok, message = False, f"tool `{call.tool_name.display()}` {problem}"
        isolate = self._results_to()
        if isolate is None:
            return
        if ok:
            isolate.send_tool_result(call.runtime_tool_call_id, value_json)
        else:
            isolate.send_tool_error(call.runtime_tool_call_id, message)

    async def _encode_tool_result(self, value: Any) -> tuple[str, str | None]:
        """The result as JSON text, or a problem that rejects the call instead. A large
        result's depth is checked on its text, in slices (see ``_engine/_slices.py``):
        walking its objects in one go would stall the trio thread (a second for 200 000
        arrays)."""
        too_deep = (
            f"returned JSON nested deeper than the limit of {self._config.max_json_depth} "
            "(RuntimeConfig.max_json_depth)"
        )
        try:
            text = dumps(value)
            if isinstance(value, dict | list):
                limit = self._config.max_json_depth
                if len(text) > INLINE_BATCH_CHARS:
                    too_deep_text = await in_slices(text_depth_steps(text, limit))
                else:
                    too_deep_text = json_depth_exceeds(value, limit)
                if too_deep_text:
                    return "", too_deep
        except RecursionError:
            return "", too_deep
        except Exception as error:
            # Whatever the value's own code raises (a dict subclass whose `items()`
            # fails, say) only rejects this call.
            return "", f"returned a value that is not JSON data: {describe_exception(error)}"
        return text, None

    # ------------------------------------------------------------------------------
    # Notifications

    def start_notification(self, text: str) -> str | None:
        """Queue the program's ``notify(text)``; the limit it breaks, if any (then
        :attr:`overflowed` is set and the cell cancels its notifications)."""
        limit = self._config.max_pending_notifications
        if len(self._notify_queue) + self._notifying >= limit:
            self.overflowed = True
            return (
                f"exec cell exceeded its limit of {limit} pending notifications "
                "(RuntimeConfig.max_pending_notifications)"
            )
        size = sys.getsizeof(text)
        budget = self._config.max_notification_bytes
        if self._notify_bytes + size > budget:
            self.overflowed = True
            return (
                f"exec cell exceeded its limit of {budget} bytes of pending notifications "
                "(RuntimeConfig.max_notification_bytes)"
            )
        self._notify_bytes += size
        self._notify_queue.append(text)
        if len(self._notify_scopes) < NOTIFY_CONCURRENCY:
            scope = trio.CancelScope()
            self._notify_scopes.add(scope)
            self._nursery.start_soon(self._deliver_notifications, scope)
        return None

    async def _deliver_notifications(self, scope: trio.CancelScope) -> None:
        """Hand waiting notifications to the delegate, one at a time, until none is
        left (a burst costs a few tasks, not one per notification)."""
        try:
            with scope:
                while self._notify_queue:
                    text = self._notify_queue.popleft()
                    self._notifying += 1
                    try:
                        await self._delegate.notify(self._call_id, self._cell_id, text)
                    except Exception as error:
                        logger.warning(
                            "failed to deliver code mode notification: %s",
                            describe_exception(error),
                        )
                    finally:
                        self._notifying -= 1
                        self._notify_bytes -= sys.getsizeof(text)
        finally:
            self._notify_scopes.discard(scope)
            self._finished()
            self._wake_cell()

    def _clear_notify_queue(self) -> None:
        self._notify_bytes -= sum(sys.getsizeof(text) for text in self._notify_queue)
        self._notify_queue.clear()

    # ------------------------------------------------------------------------------
    # Cancellation

    def _cancel_tools(self) -> None:
        self._tools_closed = True
        if self._tool_scope is not None:
            self._tool_scope.cancel()

    def close(self) -> None:
        """The cell ended: end the tool calls' runner (at once when none is left; a
        cell that completed with nothing in flight never called :meth:`cancel`)."""
        self._cancel_tools()

    async def cancel(self, *, notifications: bool) -> None:
        """Cancel in-flight tool calls (and notifications if asked), then give them
        ``callback_grace`` seconds to finish. One that ignores cancellation longer is
        abandoned: its result is dropped and it finishes in the session nursery."""
        if not self._tool_calls and not (notifications and self._notify_scopes):
            # Nothing to cancel or wait for (a short cell): no cancel scope to open.
            self._cancel_tools()
            if notifications:
                self._clear_notify_queue()
            return
        self._cancel_tools()
        if notifications:
            self._clear_notify_queue()
            for scope in list(self._notify_scopes):
                scope.cancel()
        with trio.move_on_after(self._config.callback_grace):
            while self._tool_calls or (notifications and self._notify_scopes):
                changed = self._callbacks_changed
                if changed is None:  # (another cancel() may wait on one already)
                    changed = self._callbacks_changed = trio.Event()
                await changed.wait()
        self._tool_calls.clear()
        self._tool_input_bytes = 0  # (an abandoned call holds its input until it ends)
        if notifications:
            self._notify_scopes.clear()
