"""No cell lost to a client's timeout (``code_mode.mcp_server.client_timeouts``): the
default yield cap, progress while a call waits, and a retried ``exec`` answered from
the cell its first, abandoned, try started."""

from __future__ import annotations

import trio
import trio.testing
from mcp import ClientSession

from code_mode import tool
from code_mode.mcp_server import (
    DEFAULT_MCP_MAX_YIELD_TIME_MS,
    CodeModeMcpServer,
    ServerLimits,
)
from code_mode.mcp_server.client_timeouts import PROGRESS_INTERVAL

from ..mcp_support import SAFETY
from .http_support import GATES, gate, http_client, http_server, outputs, running_cell, texts

STARTS: list[str] = []
STARTED = trio.Event()


@tool
async def started(name: str) -> str:
    """Record that the program ``name`` started."""
    STARTS.append(name)
    STARTED.set()
    return name


async def abandon_once_started(session: ClientSession, code: str) -> None:
    """Call ``exec`` of ``code`` and give up once the program has started, as a client
    whose timeout fires does (the SDK then sends ``notifications/cancelled``)."""
    global STARTED
    STARTED = trio.Event()
    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as call:
            nursery.start_soon(_cancel_when_started, call)
            await session.call_tool("exec", {"code": code})
            raise AssertionError("the call should have been abandoned")


async def _cancel_when_started(call: trio.CancelScope) -> None:
    await STARTED.wait()
    call.cancel()


def test_the_default_yield_cap_is_under_the_shortest_common_client_timeout() -> None:
    assert DEFAULT_MCP_MAX_YIELD_TIME_MS < 5_000  # openai-agents' default: 5 s


async def test_a_long_program_is_handed_back_at_the_cap() -> None:
    server = CodeModeMcpServer([gate], max_yield_time_ms=200)
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            result = await session.call_tool(
                "exec", {"code": 'await tools.gate({name: "cap"}); text("never")'}
            )
            running_cell(result)


async def test_a_waiting_call_reports_progress_to_a_client_that_asked() -> None:
    reports: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        reports.append((value, message))

    server = CodeModeMcpServer([], max_yield_time_ms=None)
    code = f"await new Promise(r => setTimeout(r, {int(PROGRESS_INTERVAL * 2500)})); text('ok')"
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            result = await session.call_tool("exec", {"code": code}, progress_callback=on_progress)
            assert outputs(result) == ["ok"]
            quiet = await session.call_tool("exec", {"code": code})  # no token: no progress
            assert outputs(quiet) == ["ok"]
    # One report per interval the first call waited (a loaded machine may fit a third).
    assert len(reports) >= 2
    assert [value for value, _ in reports] == list(range(1, len(reports) + 1))


async def test_a_retried_exec_is_answered_from_the_cell_its_first_try_started() -> None:
    STARTS.clear()
    server = CodeModeMcpServer([started, gate], max_yield_time_ms=None)
    code = 'await tools.started({name: "once"}); await tools.gate({name: "retry"}); text("done")'
    with trio.fail_after(SAFETY):
        async with http_server(server) as url, http_client(url) as session:
            await abandon_once_started(session, code)
            assert STARTS == ["once"]
            # Its retry, same session and same arguments, waits on the same program.
            async with trio.open_nursery() as nursery:

                async def retry() -> None:
                    result = await session.call_tool("exec", {"code": code})
                    assert texts(result)[0].startswith("Script completed\n")
                    assert outputs(result) == ["done"]

                nursery.start_soon(retry)
                await trio.testing.wait_all_tasks_blocked()
                GATES.setdefault("retry", trio.Event()).set()
            assert STARTS == ["once"]
            # Answered, the same program again is a new run, as the model asked.
            again = await session.call_tool("exec", {"code": code})
            assert outputs(again) == ["done"]
            assert STARTS == ["once", "once"]


async def test_an_abandoned_exec_is_not_a_retry_of_another_session() -> None:
    STARTS.clear()
    server = CodeModeMcpServer([started], max_yield_time_ms=None)
    code = 'await tools.started({name: "s"}); await new Promise(r => setTimeout(r, 1500))'
    with trio.fail_after(SAFETY):
        async with http_server(server) as url:
            async with http_client(url) as first:
                await abandon_once_started(first, code)
            async with http_client(url) as second:
                await second.call_tool("exec", {"code": code})
    assert STARTS == ["s", "s"]


def test_the_retry_window_is_a_server_limit() -> None:
    assert ServerLimits().exec_retry_window == 120.0
    assert ServerLimits(exec_retry_window=5).exec_retry_window == 5
