"""`CodeModeSession`: serves a model's ``exec`` and ``wait`` calls from a session runtime.

::

    @tool
    async def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    async with CodeModeSession(tools=[add]) as cm:
        llm_tools = cm.openai_tools()          # or anthropic_tools(), mcp_tools()
        ...
        items = await cm.handle_call(call.name, call.arguments)   # from the model
        # -> [Text("Script completed\\nWall time 0.1 seconds\\nOutput:\\n"), Text("42")]

The façade owns a :class:`~code_mode.SessionRuntime` and is its delegate: nested tool
calls from programs are routed to the tools given (a :class:`~.toolset.Toolset`, or
``@tool`` functions, or anything with a ``definition`` and an async ``call(input)``),
``notify(...)`` messages go to an ``on_notify`` callback. It parses the ``exec``
pragma, times and formats results the way models were trained to read them, and never
raises for a bad call from the model: every problem (a pragma error, an unknown cell,
bad ``wait`` arguments) comes back as a ``Script failed`` result the model can act on.

Yield policy (the reference implementation's): a ``yield_time_ms`` of 10 000 ms or
more gets one extra second of grace, so a nested tool finishing just after the
deadline lands in the same result instead of costing the model a ``wait`` round trip;
an optional ``max_yield_time_ms`` then caps it. Shorter requests are taken as given.

Polling is what makes long programs expensive: each ``wait`` re-sends the whole
conversation to the model. Three options remove it. ``on_finished`` *pushes*: when a
program that was handed back as ``Script running`` ends while no ``exec``/``wait``
observes it, the host gets the result a ``wait`` would have returned (once), and the
tool descriptions and running results tell the model it need not poll, so it can end
its turn. ``wait_idle_floor_ms`` makes a ``wait`` that finds nothing new hold on for
output instead of returning empty-handed. :meth:`CodeModeSession.preempt` lets the host
end an ``exec``/``wait`` in progress at once (the user typed something) while the
program keeps running.

"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from .. import _asyncio_host
from .._asyncio_host import HeldContext, trio_side
from .._config import RuntimeConfig
from .._delegate import ExecuteRequest
from .._engine import Engine
from .._errors import CodeModeError
from .._session_runtime import SessionRuntime
from .._types import (
    CellEvent,
    CellId,
    Completed,
    OutputItem,
    Pending,
    Text,
    ToolDefinition,
    YieldAfter,
    Yielded,
)
from ..integrations.host_loop import on_host
from ..integrations.routing import NestedTool
from ..model_tools.adapters import (
    EXEC_TOOL_NAME,
    WAIT_TOOL_NAME,
    WaitArgumentsError,
    exec_source_from_call,
    wait_arguments_from_call,
)
from ..model_tools.descriptions import NamespaceDescription
from ..model_tools.error_texts import call_error_text
from ..model_tools.formatting import format_result, is_error_result, push_preamble
from ..model_tools.pragma import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_YIELD_TIME_MS,
    MAX_SAFE_INTEGER,
    ExecInputError,
    parse_exec_input,
)
from .delegate import Approval, FacadeDelegate, Notification, NotifyCallback, approval_line
from .program_check import ProgramCheck
from .toolset import Toolset

if TYPE_CHECKING:  # the SDKs' types of openai_tools()/anthropic_tools() (model_tools/adapters.py)
    from anthropic.types import ToolParam as AnthropicToolParam
    from openai.types.responses import CustomToolParam, FunctionToolParam

__all__ = [
    "YIELD_GRACE_MS",
    "YIELD_GRACE_THRESHOLD_MS",
    "CellFinished",
    "CodeModeSession",
    "Notification",
    "resolve_yield_time_ms",
]

YIELD_GRACE_THRESHOLD_MS: Final = 10_000
"""Requests of at least this many milliseconds get :data:`YIELD_GRACE_MS` extra."""

YIELD_GRACE_MS: Final = 1_000
"""The grace added to long yields."""


@attrs.frozen
class CellFinished:
    """A pushed result (``CodeModeSession(on_finished=...)``): the program in
    ``cell_id``, started by the ``exec`` call ``call_id``, finished after it was handed
    back as ``Script running``, and ``items`` is exactly what a ``wait`` would have
    returned (``Script completed`` or ``Script failed``, its output since the previous
    result, formatted to the budget of its ``exec``; the wall time counts from that
    previous result)."""

    cell_id: CellId
    call_id: str
    items: list[OutputItem]

    @property
    def is_error(self) -> bool:
        """Whether the program failed (for the ``is_error`` flags of the APIs)."""
        return is_error_result(self.items)

    @property
    def message_items(self) -> list[OutputItem]:
        """``items`` behind one line naming the program, for a message that gives the
        result to the model (a pushed result answers no tool call, and a ``Script
        completed`` header does not say which program it was)."""
        return [Text(push_preamble(self.cell_id)), *self.items]


FinishedCallback = Callable[[CellFinished], Awaitable[None] | None]
"""``on_finished``: a plain or an async function of a :class:`CellFinished`."""


@attrs.define
class _HandedBack:
    """What the façade remembers of a cell it may still have to push."""

    call_id: str
    max_tokens: int
    last_result_at: float


def resolve_yield_time_ms(requested_ms: int, max_yield_time_ms: int | None = None) -> int:
    """When an ``exec``/``wait`` asking for ``requested_ms`` should yield: plus
    :data:`YIELD_GRACE_MS` if it is at least :data:`YIELD_GRACE_THRESHOLD_MS`, then
    capped by ``max_yield_time_ms`` (``0`` yields at once)."""
    # At most 2**53 - 1 ms (285 000 years): a larger integer, which the model may send
    # in `wait`, would not even convert to seconds as a float.
    resolved = min(max(0, requested_ms), MAX_SAFE_INTEGER)
    if resolved >= YIELD_GRACE_THRESHOLD_MS:
        resolved += YIELD_GRACE_MS
    if max_yield_time_ms is not None:
        resolved = min(resolved, max(0, max_yield_time_ms))
    return resolved


class CodeModeSession:
    """``exec`` and ``wait`` for one agent session; use as ``async with``.

    ``tools``: the nested tools programs may call: a :class:`~code_mode.Toolset`
    (built once, shared by many sessions), or what :meth:`Toolset.build
    <code_mode.Toolset.build>` takes: ``@tool`` functions, plain type-hinted functions
    (wrapped with :func:`~code_mode.tool`), or any :class:`NestedTool`; of two whose
    names become the same identifier on ``tools`` (``foo-bar`` and ``foo_bar``), the
    first is kept and the later one left out, with a warning logged, as the reference
    does. ``on_notify``: receives each ``notify(...)``
    of a program as a :class:`Notification` (plain or async function; its errors are
    logged, never seen by the program). ``config``: the runtime's limits.
    ``namespace_descriptions``: a heading for each tool namespace in the ``exec``
    description (a string is used as the description, the namespace as the heading).
    ``deferred``: keep the ``exec`` description short for large tool sets (programs
    search ``ALL_TOOLS``). These two are the toolset's: not with a ``Toolset``.
    ``max_yield_time_ms``: cap on how long one ``exec``/``wait`` may block. ``engine``:
    where programs run (an :class:`~code_mode.Engine` shared with other sessions); by
    default the trio run's default engine for ``config.isolation``.

    ``on_finished`` (off by default): push. A plain or async function that receives a
    :class:`CellFinished` when a program handed back as ``Script running`` ends (it
    completes, fails, or breaks a limit) while no ``exec``/``wait`` observes it; a
    ``wait`` for it afterwards finds ``exec cell <id> not found``, as for any result
    already returned. Each result reaches you once, by one path: the call observing the
    program when it ends, ``wait(terminate=True)``, or this. Programs you end
    (``terminate``, shutdown, leaving the block) are not pushed. With it, the ``exec``
    and ``wait`` descriptions and every ``Script running`` result tell the model it
    will be given the result, so it can end its turn instead of polling. It runs before
    the program's cell is closed; keep it short (put the result on a memory channel
    for your agent loop); a shutdown waits for one in progress, and what it raises is
    logged.

    ``wait_idle_floor_ms`` (off by default): a ``wait`` whose ``yield_time_ms`` passes
    with nothing new output, while the program still runs, holds on until there is
    output, the program ends, or this many milliseconds have passed since the ``wait``
    began (capped by ``max_yield_time_ms``); its description says so. Each ``wait`` then
    brings the model something, and a model that polls with short waits costs a turn
    per floor rather than per ``yield_time_ms``.

    ``tool_search`` (off by default): programs get ``tools.tool_search({query, limit})``,
    BM25-ranked discovery of the other tools (:class:`~code_mode.ToolSearch`), and the
    ``exec`` description the reference's guidance for it. ``show_cell_overhead`` (off by
    default): result headers read ``Wall time 1.250 seconds (code-mode 0.750 seconds;
    overhead 0.500 seconds)``, code-mode being the time the runtime spent on the call
    and overhead the rest (parsing, formatting, the host's own work).
    ``input_schema_max_bytes`` (the Toolset's): a tool's input type longer than
    ``max(16000, this, its MCP server's limit)`` is shown as ``unknown``.

    ``check_programs`` (off by default): before a program runs, its ``tools.x(...)``
    calls are checked against the tools (:mod:`code_mode._facade.program_check`): a
    call of a tool that is not enabled, or a literal argument the tool's schema
    refuses (an unknown or missing field), fails the ``exec`` at once with the text
    that call would have rejected with, before any tool runs.

    Approvals: a call of a tool made with ``@tool(requires_approval=True)`` (or any
    tool whose ``requires_approval`` is True) waits for the host; the ``exec``/``wait``
    observing the program returns at once, ``Script running with cell ID <id>`` and a
    line naming the call, and :meth:`approve` or :meth:`deny` decides
    (:meth:`awaiting_approval` lists what waits).

    Leaving the ``async with`` block terminates every running program.
    """

    def __init__(
        self,
        tools: Toolset | Iterable[NestedTool | Callable[..., Any]] = (),
        *,
        on_notify: NotifyCallback | None = None,
        config: RuntimeConfig | None = None,
        namespace_descriptions: Mapping[str, NamespaceDescription | str] | None = None,
        deferred: bool = False,
        max_yield_time_ms: int | None = None,
        engine: Engine | None = None,
        on_finished: FinishedCallback | None = None,
        wait_idle_floor_ms: int | None = None,
        tool_search: bool = False,
        show_cell_overhead: bool = False,
        input_schema_max_bytes: int | None = None,
        check_programs: bool = False,
    ) -> None:
        if wait_idle_floor_ms is not None and not (
            isinstance(wait_idle_floor_ms, int) and wait_idle_floor_ms >= 0
        ):
            raise ValueError("wait_idle_floor_ms must be a non-negative integer or None")
        if isinstance(tools, Toolset):
            if namespace_descriptions is not None or deferred:
                raise ValueError(
                    "namespace_descriptions and deferred are the Toolset's: "
                    "give them to Toolset.build"
                )
            if tool_search or input_schema_max_bytes is not None:
                raise ValueError(
                    "tool_search and input_schema_max_bytes are the Toolset's: "
                    "give them to Toolset.build"
                )
            self._toolset = tools
        else:
            self._toolset = Toolset.build(
                tools,
                namespace_descriptions=namespace_descriptions,
                deferred=deferred,
                tool_search=tool_search,
                input_schema_max_bytes=input_schema_max_bytes,
            )
        self._show_overhead = show_cell_overhead
        self._max_yield_time_ms = max_yield_time_ms
        self._on_finished = on_finished
        self._push = on_finished is not None
        self._idle_floor_ms = wait_idle_floor_ms
        self._handed_back: dict[CellId, _HandedBack] = {}
        self._check = (
            ProgramCheck(self._toolset.tools, self._toolset.enabled) if check_programs else None
        )
        self._delegate = FacadeDelegate(self._toolset.tools, on_notify, preempt=self._preempt)
        self._runtime = SessionRuntime(
            self._delegate,
            config,
            engine=engine,
            on_finished=self._pushed if on_finished is not None else None,
        )
        self._call_ids = itertools.count(1)
        self._exit_stack: AsyncExitStack | None = None
        self._guest: HeldContext | None = None  # entered on asyncio: the guest run's hold

    # -- lifetime ------------------------------------------------------------------

    async def __aenter__(self) -> CodeModeSession:
        # The runtime's nursery holds the cells: entering the runtime opens it.
        stack = AsyncExitStack()
        if _asyncio_host.on_asyncio():  # the runtime lives in the loop's trio guest run
            self._guest = await _asyncio_host.enter(self._runtime)
            stack.push_async_callback(_asyncio_host.leave, self._guest)
        else:
            await stack.enter_async_context(self._runtime)
        self._exit_stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._exit_stack is not None
        return await self._exit_stack.__aexit__(exc_type, exc, traceback)

    @property
    def runtime(self) -> SessionRuntime:
        """The underlying session runtime, for uses beyond ``exec``/``wait``."""
        return self._runtime

    # -- tool definitions ----------------------------------------------------------

    @property
    def toolset(self) -> Toolset:
        """The nested tools and how the ``exec`` description shows them."""
        return self._toolset

    @property
    def tools(self) -> list[ToolDefinition]:
        """The nested tools' definitions, in the order programs see them."""
        return self._toolset.definitions

    @property
    def exec_tool(self) -> ToolDefinition:
        """``exec`` as a :class:`~code_mode.ToolDefinition`: a FREEFORM tool (its input
        is raw JavaScript) with the generated description. For APIs without freeform
        tools use :meth:`anthropic_tools` or :meth:`mcp_tools`, where ``exec`` takes
        ``{"code": string}``."""
        return self._toolset.exec_tool(push=self._push)

    @property
    def wait_tool(self) -> ToolDefinition:
        """``wait`` as a FUNCTION :class:`~code_mode.ToolDefinition` with its JSON
        Schema."""
        return self._toolset.wait_tool(push=self._push, idle_floor_ms=self._idle_floor_ms)

    def openai_tools(self, *, grammar: bool = True) -> list[CustomToolParam | FunctionToolParam]:
        """``[exec, wait]`` for the OpenAI Responses API ``tools`` parameter (``exec``
        a custom tool, ``wait`` a function tool)."""
        return self._toolset.openai_tools(
            grammar=grammar, push=self._push, idle_floor_ms=self._idle_floor_ms
        )

    def anthropic_tools(self) -> list[AnthropicToolParam]:
        """``[exec, wait]`` for the Anthropic Messages API ``tools`` parameter."""
        return self._toolset.anthropic_tools(push=self._push, idle_floor_ms=self._idle_floor_ms)

    def mcp_tools(self) -> list[dict[str, Any]]:
        """``[exec, wait]`` as MCP tool definitions (``tools/list``)."""
        return self._toolset.mcp_tools(push=self._push, idle_floor_ms=self._idle_floor_ms)

    # -- calls ---------------------------------------------------------------------

    def _check_entered(self) -> None:
        if self._exit_stack is None:
            raise RuntimeError("use the session as `async with CodeModeSession(...) as cm:`")

    @trio_side
    async def exec(self, source: str, *, call_id: str | None = None) -> list[OutputItem]:
        """Run ``source`` (raw JavaScript, optionally with a ``// @exec: {...}`` first
        line) and return its first result: ``Script completed``/``failed`` if it ended
        within ``yield_time_ms``, else ``Script running with cell ID <id>`` with the
        output so far (the program keeps running; continue with :meth:`wait`).

        ``call_id`` identifies the model's call in :class:`Notification` (default
        ``exec-<n>``). A bad pragma comes back as a ``Script failed`` result."""
        self._check_entered()
        started_at = trio.current_time()
        call_id = call_id if call_id is not None else f"exec-{next(self._call_ids)}"
        try:
            parsed = parse_exec_input(source)
        except ExecInputError as error:
            return self._format(str(error), started_at, "", DEFAULT_MAX_OUTPUT_TOKENS)
        max_tokens = (
            parsed.max_output_tokens
            if parsed.max_output_tokens is not None
            else DEFAULT_MAX_OUTPUT_TOKENS
        )
        if self._check is not None:
            problem = self._check.error(parsed.source)
            if problem is not None:  # what the call would have rejected with, uncaught
                return self._format(problem, started_at, "", max_tokens)
        requested = (
            parsed.yield_time_ms if parsed.yield_time_ms is not None else DEFAULT_YIELD_TIME_MS
        )
        mode = YieldAfter(resolve_yield_time_ms(requested, self._max_yield_time_ms) / 1000)
        request = ExecuteRequest(
            tool_call_id=call_id, enabled_tools=self._toolset.enabled, source=parsed.source
        )
        runtime_at = trio.current_time()
        try:
            started = await self._runtime.execute(request, mode)
        except CodeModeError as error:
            return self._format(str(error), started_at, "", max_tokens)
        if self._push:
            # Before the first event: a push for this cell may come as soon as it is out.
            self._handed_back[started.cell_id] = _HandedBack(call_id, max_tokens, started_at)
        event = await started.initial_event()
        self._note_result(started.cell_id, event)
        return self._format(event, started_at, started.cell_id, max_tokens, runtime_at)

    @trio_side
    async def wait(
        self,
        cell_id: str,
        *,
        yield_time_ms: int = DEFAULT_YIELD_TIME_MS,
        max_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        terminate: bool = False,
    ) -> list[OutputItem]:
        """The next result of a running program: its new output and ``Script running
        with cell ID <id>`` again after ``yield_time_ms``, or its final result. With
        ``terminate=True`` the program is stopped (``Script terminated``; a program
        that had already finished returns its result). An unknown or finished cell is a
        failed result ``exec cell <id> not found: <why, and what to do>``."""
        self._check_entered()
        started_at = trio.current_time()
        cell = CellId(cell_id)
        runtime_at = trio.current_time()
        try:
            if terminate:
                event = await self._runtime.terminate(cell)
            else:
                seconds = resolve_yield_time_ms(yield_time_ms, self._max_yield_time_ms) / 1000
                pending = await self._runtime.begin_observe(
                    cell, YieldAfter(seconds, idle_floor=self._idle_floor())
                )
                if self._delegate.awaiting(cell):  # it waits on the host: return now
                    await self._runtime.preempt(cell)
                event = await pending.event()
        except CodeModeError as error:  # missing, busy observer, terminating, shutdown
            # (A missing cell may be one whose push is on its way: its record stays
            # for the push, which removes it.)
            return self._format(call_error_text(error), started_at, cell_id, max_tokens)
        self._note_result(cell, event)
        return self._format(event, started_at, cell_id, max_tokens, runtime_at)

    @trio_side
    async def preempt(self, cell_id: str) -> bool:
        """Make the ``exec`` or ``wait`` that is observing ``cell_id`` return now, with
        the output so far and ``Script running with cell ID <id>``; the program keeps
        running, and a later ``wait`` (or the push) gets its end. For a host whose user
        typed something while the model waits on a program: the model's turn can end
        at once. False, changing nothing, when no call is observing the program."""
        self._check_entered()
        return await self._runtime.preempt(CellId(cell_id))

    @trio_side
    async def approve(self, cell_id: str, call_id: str) -> bool:
        """Let the call ``call_id`` of program ``cell_id``, waiting for approval (a
        tool with ``requires_approval``), run. False, changing nothing, when no such
        call waits (it was decided already, or its program ended)."""
        self._check_entered()
        return self._delegate.decide(CellId(cell_id), call_id, None)

    @trio_side
    async def deny(self, cell_id: str, call_id: str, reason: str) -> bool:
        """Reject the call ``call_id`` of program ``cell_id``, waiting for approval:
        the program's promise rejects with ``reason``, a plain string, as for a tool
        that failed. False, changing nothing, when no such call waits."""
        self._check_entered()
        text = reason or f"tool call {call_id} was denied"
        return self._delegate.decide(CellId(cell_id), call_id, text)

    def awaiting_approval(self, cell_id: str) -> list[Approval]:
        """The calls of program ``cell_id`` waiting for approval, oldest first."""
        return self._delegate.awaiting(CellId(cell_id))

    @trio_side
    async def handle_call(
        self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None = None
    ) -> list[OutputItem]:
        """Serve an ``exec`` or ``wait`` call as any LLM API delivers it.

        ``exec``: the raw source (OpenAI custom tool ``input``), or ``{"code": ...}``
        as an object or JSON text (Anthropic ``input``, MCP ``arguments``). ``wait``:
        the arguments as an object or JSON text. Malformed arguments give a failed
        result (``failed to parse function arguments: ...``). Any other ``name`` raises
        ``ValueError``: route only ``exec``/``wait`` here."""
        if name == EXEC_TOOL_NAME:
            self._check_entered()
            try:
                source = exec_source_from_call(arguments)
            except ExecInputError as error:
                return self._format(str(error), trio.current_time(), "", DEFAULT_MAX_OUTPUT_TOKENS)
            return await self.exec(source, call_id=call_id)
        if name == WAIT_TOOL_NAME:
            self._check_entered()
            started_at = trio.current_time()
            try:
                cell_id, yield_ms, max_tokens, terminate = wait_arguments_from_call(arguments)
            except WaitArgumentsError as error:
                return self._format(str(error), started_at, "", DEFAULT_MAX_OUTPUT_TOKENS)
            return await self.wait(
                cell_id, yield_time_ms=yield_ms, max_tokens=max_tokens, terminate=terminate
            )
        raise ValueError(
            f"CodeModeSession serves only `{EXEC_TOOL_NAME}` and `{WAIT_TOOL_NAME}`, not `{name}`"
        )

    @trio_side
    async def terminate_all(self) -> None:
        """The user interrupted the turn: terminate every program of the session that
        has not ended, background ones of earlier turns included, and return once each
        is closed (the reference's interrupt, openai/codex #51835). Their nested tool
        calls are cancelled; an ``exec``/``wait`` observing one returns ``Script
        terminated``; a later ``wait`` gets ``exec cell <id> not found``; none is
        pushed. Stored values stay, and the session takes new programs as before."""
        self._check_entered()
        for cell_id in await self._runtime.terminate_all():
            self._handed_back.pop(cell_id, None)

    @trio_side
    async def shutdown(self) -> None:
        """Terminate every program and refuse new ones; the ``async with`` block still
        has to be left. Idempotent."""
        await self._runtime.shutdown()

    def _format(
        self,
        result: CellEvent | str,
        started_at: float,
        cell_id: str,
        max_tokens: int,
        runtime_at: float | None = None,
    ) -> list[OutputItem]:
        """``runtime_at``: when the call handed over to the runtime, for the timing of
        ``show_cell_overhead`` (the runtime's time is from then to now)."""
        now = trio.current_time()
        awaiting = (
            [approval_line(a) for a in self._delegate.awaiting(CellId(cell_id))]
            if isinstance(result, Yielded | Pending)
            else []
        )
        return format_result(
            result,
            wall_time=max(0.0, now - started_at),
            cell_id=cell_id,
            max_output_tokens=max_tokens,
            push=self._push,
            notes=awaiting,
            code_mode_time=(
                max(0.0, now - runtime_at)
                if self._show_overhead and runtime_at is not None
                else None
            ),
        )

    async def _preempt(self, cell_id: CellId) -> bool:
        """For a call that waits for approval: the observation in progress returns."""
        return await self._runtime.preempt(cell_id)

    # -- push ----------------------------------------------------------------------

    def _idle_floor(self) -> float | None:
        """The idle floor of a ``wait``, in seconds: as configured (no grace is added to
        it), capped by ``max_yield_time_ms``."""
        floor = self._idle_floor_ms
        if floor is None:
            return None
        if self._max_yield_time_ms is not None:
            floor = min(floor, max(0, self._max_yield_time_ms))
        return floor / 1000

    def _note_result(self, cell_id: CellId, event: CellEvent) -> None:
        """An ``exec``/``wait`` of ``cell_id`` is returning ``event``: remember when, for
        the wall time of a push, or forget a cell whose end its caller got."""
        record = self._handed_back.get(cell_id)
        if record is None:
            return
        if isinstance(event, Yielded | Pending):
            record.last_result_at = trio.current_time()
        else:
            del self._handed_back[cell_id]

    async def _pushed(self, cell_id: CellId, completed: Completed) -> None:
        """The runtime's push: format it as the ``wait`` it replaces and hand it on."""
        assert self._on_finished is not None
        record = self._handed_back.pop(cell_id, None)
        if record is None:  # pragma: no cover - the runtime pushes only after execute
            now = trio.current_time()  # returned, and exec records the cell at once
            record = _HandedBack("", DEFAULT_MAX_OUTPUT_TOKENS, now)
        items = format_result(
            completed,
            wall_time=max(0.0, trio.current_time() - record.last_result_at),
            cell_id=cell_id,
            max_output_tokens=record.max_tokens,
        )
        outcome = self._on_finished(CellFinished(cell_id, record.call_id, items))
        if inspect.isawaitable(outcome):
            await on_host(outcome)  # under asyncio: on the asyncio loop
