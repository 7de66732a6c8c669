"""`CodeModeSession` in an asyncio application: unchanged code under `asyncio.run` and
anyio's asyncio backend (trio runs as a guest of the asyncio loop, _asyncio_host.py).

Each test is a plain function that calls `asyncio.run` itself: nothing of trio is
running around it, as in an application.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import anyio
import pytest
import sniffio

from code_mode import CellFinished, CodeModeSession, Notification, Text, tool

ROOT = Path(__file__).resolve().parents[2]


def output(items: list[object]) -> str:
    return "".join(item.text for item in items if isinstance(item, Text))


def _threads() -> set[threading.Thread]:
    # trio keeps idle worker threads cached for a few seconds, under trio.run as well;
    # they hold nothing of a session.
    return {t for t in threading.enumerate() if not t.name.startswith("Trio thread")}


def test_readme_quick_start_under_asyncio_run() -> None:
    """The README's quick start with `asyncio.run(main)` for `trio.run(main)`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("<!-- quickstart:start -->")[1]
    source = re.search(r"```python\n(.*?)```", quick_start, re.DOTALL)
    assert source is not None and "trio.run(main)" in source.group(1)
    namespace: dict[str, object] = {"__name__": "quick_start"}
    exec(source.group(1).replace("trio.run(main)", ""), namespace)
    main = namespace["main"]
    assert callable(main)
    before = _threads()
    asyncio.run(main())
    assert _threads() <= before  # nothing of the session outlives asyncio.run


def test_asyncio_tool_runs_on_the_asyncio_loop() -> None:
    seen: list[tuple[str, asyncio.AbstractEventLoop]] = []

    @tool
    async def fetch(key: str) -> str:
        """An asyncio tool: asyncio primitives, on the application's loop."""
        seen.append((sniffio.current_async_library(), asyncio.get_running_loop()))
        ready = asyncio.Event()
        asyncio.get_running_loop().call_later(0.01, ready.set)
        await ready.wait()
        return key.upper()

    async def main() -> asyncio.AbstractEventLoop:
        async with CodeModeSession(tools=[fetch]) as cm:
            result = await cm.exec(
                'const [a, b] = await Promise.all([tools.fetch({key: "x"}), '
                'tools.fetch({key: "y"})]); text(a + b)'
            )
            assert output(result).endswith("XY"), result
        return asyncio.get_running_loop()

    loop = asyncio.run(main())
    assert seen == [("asyncio", loop), ("asyncio", loop)]


def test_the_loop_keeps_running_while_a_program_runs() -> None:
    """A second asyncio task ticks all along a program that keeps V8 busy for 1 s."""

    async def main() -> None:
        async with CodeModeSession() as cm:
            ticks: list[float] = []
            ticking = asyncio.Event()

            async def ticker() -> None:
                while True:
                    ticks.append(time.monotonic())
                    ticking.set()
                    await asyncio.sleep(0.01)

            task = asyncio.create_task(ticker())
            await ticking.wait()
            started = time.monotonic()
            result = await cm.exec(
                "const end = Date.now() + 1000; while (Date.now() < end) {} text('spun')"
            )
            ended = time.monotonic()
            task.cancel()
            assert output(result).endswith("spun"), result
            during = [t for t in ticks if started <= t <= ended]
            assert ended - started >= 1.0
            # ~100 possible; a blocked loop would give 0 or 1. Loose for loaded machines.
            assert len(during) >= 20, (len(during), ended - started)

    asyncio.run(main())


def test_anyio_asyncio_backend_and_concurrent_sessions() -> None:
    """Two sessions at once on one loop share its guest run; both work and close."""

    async def one(n: int) -> str:
        async with CodeModeSession() as cm:
            return output(await cm.exec(f"await new Promise(r => setTimeout(r, 50)); text({n})"))

    async def main() -> list[str]:
        results: list[str] = []

        async def run(n: int) -> None:
            results.append(await one(n))

        async with anyio.create_task_group() as group:
            group.start_soon(run, 1)
            group.start_soon(run, 2)
        # After both left: a new session starts a new guest run.
        results.append(await one(3))
        return results

    results = anyio.run(main, backend="asyncio")
    assert sorted(r[-1] for r in results) == ["1", "2", "3"]


def test_callbacks_wait_and_push_are_asyncio_code() -> None:
    async def main() -> None:
        notes: asyncio.Queue[Notification] = asyncio.Queue()
        pushed: asyncio.Queue[CellFinished] = asyncio.Queue()
        async with CodeModeSession(on_notify=notes.put, on_finished=pushed.put) as cm:
            first = await cm.exec(
                '// @exec: {"yield_time_ms": 0}\n'
                "notify('hi'); await new Promise(r => setTimeout(r, 100)); text('late')"
            )
            assert "Script running" in output(first)
            note = await notes.get()
            assert note.text == "hi"
            finished = await pushed.get()
            assert output(finished.items).endswith("late")
            cell = re.search(r"cell ID (\S+)", output(first))
            assert cell is not None
            gone = await cm.handle_call("wait", {"cell_id": cell.group(1)})
            assert "not found" in output(gone)

    asyncio.run(main())


def test_errors_and_cancellation_propagate() -> None:
    called = asyncio.Event()
    cancelled = asyncio.Event()

    @tool
    async def boom() -> None:
        """Fails."""
        raise ValueError("kaput")

    @tool
    async def hang() -> None:
        """Never returns; notes its cancellation."""
        called.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        async with CodeModeSession(tools=[boom, hang]) as cm:
            failed = await cm.exec("await tools.boom({})")
            assert "kaput" in output(failed)
            # Cancelling an asyncio caller cancels its call; the program keeps running
            # (as after a preempt) until the session ends, which cancels its tool call.
            call = asyncio.create_task(cm.exec("await tools.hang({})"))
            await called.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert output(await cm.exec("text(7)")).endswith("7")
            assert not cancelled.is_set()
            raise KeyError("from the block")

    with pytest.raises(KeyError, match="from the block"):
        asyncio.run(main())
    assert cancelled.is_set()  # leaving the session cancelled the asyncio tool, and waited


def test_not_entered_is_a_clear_error() -> None:
    async def main() -> None:
        with pytest.raises(RuntimeError, match="async with CodeModeSession"):
            await CodeModeSession().exec("text(1)")

    asyncio.run(main())


def test_a_tool_called_directly_from_asyncio_needs_no_trio() -> None:
    @tool
    async def double(n: int) -> int:
        """Doubles."""
        await asyncio.sleep(0)
        return 2 * n

    assert asyncio.run(double.call({"n": 21})) == 42


def test_a_call_after_the_block_is_a_clear_error() -> None:
    async def main() -> None:
        async with CodeModeSession() as cm:
            pass
        with pytest.raises(RuntimeError, match="inside its `async with` block"):
            await cm.exec("text(1)")

    asyncio.run(main())
